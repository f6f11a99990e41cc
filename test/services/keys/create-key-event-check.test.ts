import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { v2Data } from '../../helpers/v2.ts';
import { openStore } from '../../../src/store/store.ts';
import { insertOf } from '../../../src/store/insert-together.ts';
import { insertTogetherUnless } from '../../../src/store/insert-unless.ts';

const PRIVATE = { allowPrivate: true, timeoutMs: 2000, retrySchedule: [0] };

// keys.createKey writes a plain key in one statement (PostgreSQL) or transaction (SQLite) that also checks
// whether an endpoint may receive key.created; where one may, it writes the key with its event instead.
for (const dialect of DIALECTS) {
  describe(`keys.createKey and endpoints receiving key.created (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect, { app: { webhooks: PRIVATE } });
      apiId = await w.createApi();
    });
    after(() => w.close());

    const eventsOf = async (keyId: string) =>
      (await w.store.db.selectFrom('webhook_events').select('body').where('type', '=', 'key.created').execute()).filter((e) =>
        e.body.includes(keyId),
      );
    const endpoint = async (events: string[]) => {
      const r = await w.post<{ endpointId: string }>('/v1/webhooks.createEndpoint', { url: 'http://127.0.0.1:9/hook', events });
      assert.equal(r.status, 200, r.body);
      return r.json.endpointId;
    };
    const keyAndAudit = async (keyId: string) => {
      const key = await w.store.db.selectFrom('keys').select('id').where('id', '=', keyId).executeTakeFirst();
      const audit = await w.store.db.selectFrom('audit_logs').select('event').where('target_id', '=', keyId).execute();
      return { key: !!key, audit: audit.map((a) => a.event) };
    };

    test('no endpoint, or none receiving key.created: the key, its limits and audit record, no event', async () => {
      const plain = v2Data<{ keyId: string }>(
        await w.post('/v2/keys.createKey', {
          apiId,
          ratelimits: [
            { name: 'aaa', limit: 5, duration: 1000, autoApply: true },
            { name: 'bbb', limit: 9, duration: 60_000, autoApply: false },
          ],
        }),
      );
      assert.deepEqual(await keyAndAudit(plain.keyId), { key: true, audit: ['key.create'] });
      const limits = await w.store.db.selectFrom('ratelimits').select('name').where('key_id', '=', plain.keyId).orderBy('name').execute();
      assert.deepEqual(
        limits.map((l) => l.name),
        ['aaa', 'bbb'],
      );
      await endpoint(['key.deleted', 'key.updated']);
      const other = await w.createKey({ apiId });
      assert.deepEqual(await keyAndAudit(other.keyId), { key: true, audit: ['key.create'] });
      assert.equal((await eventsOf(plain.keyId)).length + (await eventsOf(other.keyId)).length, 0);
      assert.equal((await w.post('/v1/keys.verifyKey', { apiId, key: other.key })).json.valid, true);
    });

    test('an endpoint receiving key.created: the key with exactly one event; disabled, none', async () => {
      const endpointId = await endpoint(['key.created']);
      const { keyId } = await w.createKey({ apiId });
      assert.deepEqual(await keyAndAudit(keyId), { key: true, audit: ['key.create'] });
      assert.equal((await eventsOf(keyId)).length, 1);
      const deliveries = await w.store.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', endpointId).execute();
      assert.equal(deliveries.length, 1);
      assert.equal((await w.post('/v1/webhooks.updateEndpoint', { endpointId, enabled: false })).status, 200);
      const later = await w.createKey({ apiId });
      assert.deepEqual(await keyAndAudit(later.keyId), { key: true, audit: ['key.create'] });
      assert.equal((await eventsOf(later.keyId)).length, 0);
    });

    test('insertTogetherUnless writes nothing where the condition holds, everything where it does not', async () => {
      const held = { sql: 'select 1 from apis where id = ?', parameters: [apiId] };
      const free = { sql: 'select 1 from apis where id = ?', parameters: ['api_none'] };
      const event = (id: string) => ({
        id,
        workspace_id: w.workspaceId,
        type: 'webhook.test',
        body: '{}',
        dedupe_key: null,
        created_at: 1,
      });
      const insert = (ids: string[]) => [insertOf('webhook_events', ids.map(event))];
      assert.equal(await insertTogetherUnless(w.store.db, insert(['evt_held1', 'evt_held2']), held), false);
      assert.equal(await insertTogetherUnless(w.store.db, insert(['evt_free1', 'evt_free2']), free), true);
      const ids = (await w.store.db.selectFrom('webhook_events').select('id').where('id', 'like', 'evt_%1').execute()).map((r) => r.id);
      assert.ok(ids.includes('evt_free1') && !ids.includes('evt_held1'));
      assert.equal((await w.store.db.selectFrom('webhook_events').select('id').where('id', '=', 'evt_free2').execute()).length, 1);
    });
  });
}

if (DIALECTS.includes('postgres')) {
  describe('keys.createKey on PostgreSQL without named prepared statements (?prepared_statements=off, for poolers)', () => {
    test('keys are created and verify', async () => {
      const w = await world('postgres', { openStore: (url) => openStore(`${url}${url.includes('?') ? '&' : '?'}prepared_statements=off`) });
      try {
        const apiId = await w.createApi();
        for (let i = 0; i < 3; i++) {
          const { key } = await w.createKey({ apiId });
          assert.equal((await w.post('/v1/keys.verifyKey', { apiId, key })).json.valid, true);
        }
      } finally {
        await w.close();
      }
    });
  });
}
