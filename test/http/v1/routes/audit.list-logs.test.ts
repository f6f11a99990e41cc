import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';

/** An audit.listLogs page, with the members these tests compute with. */
type Logs = Loose<{
  logs: Array<
    Loose<{ id: string; event: string; requestId: string; actor: { type: string; id: string }; target: { type: string; id: string } }>
  >;
  cursor?: string;
}>;

for (const dialect of DIALECTS) {
  describe(`audit.listLogs (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('lists mutations newest first with actor, target, request id; pages with a cursor', async () => {
      const apiId = await w.createApi('audited');
      const { keyId, key } = await w.createKey({ apiId, name: 'k1' });
      await w.post('/v1/keys.deleteKey', { keyId });
      const res = await w.get<Logs>('/v1/audit.listLogs', { targetId: keyId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(
        res.json.logs.map((l: { event: string }) => l.event),
        ['key.delete', 'key.create'],
      );
      const created = res.json.logs[1];
      assert.equal(created.actor.type, 'root_key');
      assert.match(created.actor.id, /^rk_/);
      assert.deepEqual(created.target, { type: 'key', id: keyId });
      assert.match(created.requestId, /^req_/);
      assert.equal(created.diff.apiId, apiId);
      assert.equal(JSON.stringify(res.json).includes(key), false, 'the key plaintext never appears in audit records');

      const first = await w.get<Logs>('/v1/audit.listLogs', { limit: 2 });
      assert.equal(first.json.logs.length, 2);
      assert.equal(typeof first.json.cursor, 'string');
      const second = await w.get<Logs>('/v1/audit.listLogs', { limit: 2, cursor: first.json.cursor! });
      const ids = [...first.json.logs, ...second.json.logs].map((l: { id: string }) => l.id);
      assert.equal(new Set(ids).size, ids.length, 'pages are disjoint');
      assert.ok(first.json.logs[1].id > second.json.logs[0].id, 'newest first across pages');
    });

    test("filters by event and time; only the caller's workspace", async () => {
      const t0 = Date.now();
      const apiId = await w.createApi('filtered');
      const other = await w.otherWorkspace();
      await w.createApi('elsewhere', other.root);
      const res = await w.get<Logs>('/v1/audit.listLogs', { event: 'api.create', since: t0 });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(
        res.json.logs.map((l: { target: { id: string } }) => l.target.id),
        [apiId],
      );
      const none = await w.get('/v1/audit.listLogs', { event: 'api.create', until: t0 - 60_000 });
      assert.deepEqual(none.json.logs, []);
      assert.equal(none.json.cursor, undefined);
    });

    test('invalid query → 400 listing every problem', async () => {
      const res = await w.get('/v1/audit.listLogs', { limit: 0, since: 'yesterday' });
      assert.equal(res.status, 400, res.body);
      assert.deepEqual(res.json.error.errors.map((e: { path: string }) => e.path).sort(), ['/limit', '/since']);
    });

    test('api.*.read_audit is enough', async () => {
      const res = await w.get('/v1/audit.listLogs', { limit: 1 }, await w.rootKey(['api.*.read_audit']));
      assert.equal(res.status, 200, res.body);
    });

    securityTests(() => w, {
      permission: 'api.*.read_audit',
      request: async () => ({ method: 'GET', path: '/v1/audit.listLogs', query: { limit: 5 } }),
    });
  });
}
