import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { errorPaths } from '../../../helpers/errors.ts';
import { count, rootKeyId, snapshot } from '../../../helpers/rows.ts';
import { unique } from '../../../helpers/rbac.ts';

interface OverrideView {
  id: string;
  identifier: string;
  limit: number;
  duration: number;
  async?: boolean;
}
type OverridePage = Loose<{ overrides: OverrideView[]; total: number; cursor?: string }>;

/** Tables a namespace or override change writes: equal snapshots mean nothing was written. */
const RL_TABLES = ['ratelimit_namespaces', 'ratelimit_overrides', 'audit_logs', 'change_feed'] as const;

/** Creates the namespace `name` in the workspace of `key` (by a cost-0 ratelimits.limit) and returns its id. */
async function createNamespace(w: World, name: string, key = w.root): Promise<string> {
  const r = await w.post('/v1/ratelimits.limit', { namespace: name, identifier: 'setup', limit: 1, duration: 1000, cost: 0 }, key);
  assert.equal(r.status, 200, r.body);
  const got = await w.get<{ id: string }>('/v1/ratelimits.getNamespace', { namespaceName: name }, key);
  assert.equal(got.status, 200, got.body);
  return got.json.id;
}

async function setOverride(w: World, body: Record<string, unknown>, key?: string): Promise<string> {
  const r = await w.post<{ overrideId: string }>('/v1/ratelimits.setOverride', body, key);
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(Object.keys(r.json), ['overrideId']);
  return r.json.overrideId;
}

const overrideRows = (w: World, namespaceId: string) =>
  w.store.db.selectFrom('ratelimit_overrides').selectAll().where('namespace_id', '=', namespaceId).orderBy('id').execute();

const auditOf = (w: World, overrideId: string) =>
  w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', overrideId).orderBy('created_at').orderBy('id').execute();

function assertNotFound(r: Response, what: 'namespace' | 'override', id: string): void {
  assert.equal(r.status, 404, r.body);
  assert.equal(r.json.error.code, 'NOT_FOUND');
  assert.equal(r.json.error.type, `https://keyhold.dev/errors/data/${what}-not-found`);
  assert.equal(r.json.error.detail, `${what} ${id} not found`);
}

function assertForbidden(r: Response, permission: string): void {
  assert.equal(r.status, 403, r.body);
  assert.equal(r.json.error.code, 'INSUFFICIENT_PERMISSIONS');
  assert.equal(r.json.error.detail, `Missing permission: ${permission}`);
}

for (const dialect of DIALECTS) {
  describe(`ratelimits.setOverride / getOverride / listOverrides / deleteOverride (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('setOverride: {overrideId}; stored as sent; audited; getOverride shows it, `async` only when set', async () => {
      const name = unique('orders');
      const namespaceId = await createNamespace(w, name);
      const t0 = Date.now();
      const res = await w.post<{ overrideId: string }>('/v1/ratelimits.setOverride', {
        namespaceId,
        identifier: 'user_1',
        limit: 10,
        duration: 60_000,
      });
      const t1 = Date.now();
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(Object.keys(res.json), ['overrideId']);
      const { overrideId } = res.json;
      assert.match(overrideId, /^rlor_[1-9A-HJ-NP-Za-km-z]{22}$/);
      const [row] = await overrideRows(w, namespaceId);
      assert.deepEqual(
        { ...row, limit: Number(row.limit), duration: Number(row.duration) },
        {
          id: overrideId,
          workspace_id: w.workspaceId,
          namespace_id: namespaceId,
          identifier: 'user_1',
          limit: 10,
          duration: 60_000,
          async: null,
          created_at: row.created_at,
          updated_at: row.created_at,
        },
      );
      assert.ok(row.created_at >= t0 && row.created_at <= t1);
      const audit = await auditOf(w, overrideId);
      assert.equal(audit.length, 1);
      assert.deepEqual(
        [audit[0].event, audit[0].workspace_id, audit[0].actor_type, audit[0].actor_id, audit[0].target_type, audit[0].request_id],
        ['ratelimit.set_override', w.workspaceId, 'root_key', await rootKeyId(w, w.root), 'ratelimitOverride', res.headers['x-request-id']],
      );
      assert.deepEqual(JSON.parse(audit[0].diff!), { namespaceId, identifier: 'user_1', limit: 10, duration: 60_000, async: null });

      for (const query of [
        { namespaceId, identifier: 'user_1' },
        { namespaceName: name, identifier: 'user_1' },
      ] as Array<Record<string, string>>) {
        const got = await w.get('/v1/ratelimits.getOverride', query);
        assert.equal(got.status, 200, got.body);
        assert.deepEqual(got.json, { id: overrideId, identifier: 'user_1', limit: 10, duration: 60_000 });
      }
      // By name, with async either way, and a pattern.
      const fast = await setOverride(w, { namespaceName: name, identifier: 'fast_*', limit: 0, duration: 1000, async: true });
      const slow = await setOverride(w, {
        namespaceName: name,
        identifier: 'slow',
        limit: 1_000_000_000_000,
        duration: 31_622_400_000,
        async: false,
      });
      assert.deepEqual((await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'fast_*' })).json, {
        id: fast,
        identifier: 'fast_*',
        limit: 0,
        duration: 1000,
        async: true,
      });
      assert.deepEqual((await w.get('/v1/ratelimits.getOverride', { namespaceName: name, identifier: 'slow' })).json, {
        id: slow,
        identifier: 'slow',
        limit: 1_000_000_000_000,
        duration: 31_622_400_000,
        async: false,
      });
      assert.deepEqual(JSON.parse((await auditOf(w, fast))[0].diff!), {
        namespaceId,
        identifier: 'fast_*',
        limit: 0,
        duration: 1000,
        async: true,
      });
    });

    test('setOverride twice on one identifier updates it in place: same overrideId, one row, each change audited', async () => {
      const namespaceId = await createNamespace(w, unique('upsert'));
      const first = await setOverride(w, { namespaceId, identifier: 'u', limit: 5, duration: 1000, async: true });
      const [before] = await overrideRows(w, namespaceId);
      await new Promise((r) => setTimeout(r, 3));
      const second = await setOverride(w, { namespaceId, identifier: 'u', limit: 7, duration: 2000 });
      assert.equal(second, first);
      const rows = await overrideRows(w, namespaceId);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].created_at, before.created_at);
      assert.ok(rows[0].updated_at > before.updated_at);
      // Replaced as a whole: an `async` left out is no longer set.
      assert.deepEqual((await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'u' })).json, {
        id: first,
        identifier: 'u',
        limit: 7,
        duration: 2000,
      });
      assert.deepEqual(
        (await auditOf(w, first)).map((a) => [a.event, JSON.parse(a.diff!).limit, JSON.parse(a.diff!).async]),
        [
          ['ratelimit.set_override', 5, true],
          ['ratelimit.set_override', 7, null],
        ],
      );
      // Identifiers are exact: `U` and `u ` are other overrides.
      assert.notEqual(await setOverride(w, { namespaceId, identifier: 'U', limit: 1, duration: 1000 }), first);
      assert.notEqual(await setOverride(w, { namespaceId, identifier: 'u ', limit: 1, duration: 1000 }), first);
      assert.equal((await overrideRows(w, namespaceId)).length, 3);
    });

    test('concurrent setOverride of one identifier: all 200 with one overrideId, one row', async () => {
      const namespaceId = await createNamespace(w, unique('raced-set'));
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          w.post<{ overrideId: string }>('/v1/ratelimits.setOverride', { namespaceId, identifier: 'u', limit: i, duration: 1000 }),
        ),
      );
      assert.deepEqual(
        results.filter((r) => r.status !== 200).map((r) => r.body),
        [],
      );
      const rows = await overrideRows(w, namespaceId);
      assert.equal(rows.length, 1);
      assert.deepEqual(new Set(results.map((r) => r.json.overrideId)), new Set([rows[0].id]));
      assert.equal((await auditOf(w, rows[0].id)).length, 8);
    });

    test("listOverrides: by id, cursor pagination, `total` on every page; only this namespace's", async () => {
      const name = unique('listed');
      const namespaceId = await createNamespace(w, name);
      const empty = await w.get<OverridePage>('/v1/ratelimits.listOverrides', { namespaceId });
      assert.equal(empty.status, 200, empty.body);
      assert.deepEqual(empty.json, { overrides: [], total: 0 });
      const otherNs = await createNamespace(w, unique('listed-other'));
      await setOverride(w, { namespaceId: otherNs, identifier: 'elsewhere', limit: 1, duration: 1000 });

      const created: OverrideView[] = [];
      for (const [i, identifier] of ['a', 'b_*', 'c', '*', 'e'].entries()) {
        const async = i === 1 ? true : i === 2 ? false : undefined;
        const body = { namespaceId, identifier, limit: i, duration: 1000 + i, ...(async === undefined ? {} : { async }) };
        const id = await setOverride(w, body);
        created.push({ id, identifier, limit: i, duration: 1000 + i, ...(async === undefined ? {} : { async }) });
      }
      const inOrder = [...created].sort((a, b) => (a.id < b.id ? -1 : 1));
      assert.deepEqual((await w.get('/v1/ratelimits.listOverrides', { namespaceName: name })).json, { overrides: inOrder, total: 5 });

      const pages: OverrideView[][] = [];
      let cursor: string | undefined;
      do {
        const r = await w.get<OverridePage>('/v1/ratelimits.listOverrides', { namespaceId, limit: 2, ...(cursor ? { cursor } : {}) });
        assert.equal(r.status, 200, r.body);
        assert.equal(r.json.total, 5);
        pages.push(r.json.overrides);
        cursor = r.json.cursor;
        if (cursor !== undefined) assert.equal(cursor, r.json.overrides.at(-1)!.id);
        else assert.equal('cursor' in r.json, false);
      } while (cursor);
      assert.deepEqual(
        pages.map((p) => p.length),
        [2, 2, 1],
      );
      assert.deepEqual(pages.flat(), inOrder);
      assert.deepEqual((await w.get('/v1/ratelimits.listOverrides', { namespaceId, limit: 5 })).json, { overrides: inOrder, total: 5 });
      for (const limit of [0, 101, 'x'])
        assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.listOverrides', { namespaceId, limit })), ['/limit']);
      assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.listOverrides', { limit: 5 })), ['/namespaceId']);
    });

    test('deleteOverride: {}; audited; then 404; it no longer applies; setting it again creates a new one', async () => {
      const name = unique('deleting');
      const namespaceId = await createNamespace(w, name);
      const overrideId = await setOverride(w, { namespaceId, identifier: 'vip', limit: 3, duration: 60_000 });
      const keep = await setOverride(w, { namespaceId, identifier: 'other', limit: 3, duration: 60_000 });
      const limitOf = async () =>
        (await w.post('/v1/ratelimits.limit', { namespace: name, identifier: 'vip', limit: 1, duration: 1000, cost: 0 })).json.limit;
      assert.equal(await limitOf(), 3);

      const res = await w.post('/v1/ratelimits.deleteOverride', { namespaceName: name, identifier: 'vip' });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});
      assert.deepEqual(
        (await overrideRows(w, namespaceId)).map((r) => r.id),
        [keep],
      );
      const audit = await auditOf(w, overrideId);
      assert.deepEqual(
        audit.map((a) => a.event),
        ['ratelimit.set_override', 'ratelimit.delete_override'],
      );
      assert.deepEqual(
        [audit[1].actor_id, audit[1].target_type, audit[1].request_id],
        [await rootKeyId(w, w.root), 'ratelimitOverride', res.headers['x-request-id']],
      );
      assert.deepEqual(JSON.parse(audit[1].diff!), { namespaceId, identifier: 'vip' });
      assertNotFound(await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'vip' }), 'override', 'vip');
      assert.equal(await limitOf(), 1);
      assert.equal((await w.get<OverridePage>('/v1/ratelimits.listOverrides', { namespaceId })).json.total, 1);

      const before = await snapshot(w, RL_TABLES);
      assertNotFound(await w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier: 'vip' }), 'override', 'vip');
      assert.deepEqual(await snapshot(w, RL_TABLES), before);

      const again = await setOverride(w, { namespaceId, identifier: 'vip', limit: 4, duration: 60_000 });
      assert.notEqual(again, overrideId);
      assert.deepEqual((await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'vip' })).json, {
        id: again,
        identifier: 'vip',
        limit: 4,
        duration: 60_000,
      });
      assert.equal(await limitOf(), 4);
    });

    test('getOverride and deleteOverride match the identifier exactly: a pattern is named by itself, never by what it matches', async () => {
      const namespaceId = await createNamespace(w, unique('exact-names'));
      const pattern = await setOverride(w, { namespaceId, identifier: 'user_*', limit: 2, duration: 1000 });
      assertNotFound(await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'user_1' }), 'override', 'user_1');
      assertNotFound(await w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier: 'user_1' }), 'override', 'user_1');
      assert.equal((await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'user_*' })).json.id, pattern);
      assert.equal((await w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier: 'user_*' })).status, 200);
      assert.equal(await count(w.store.db, 'ratelimit_overrides', ['namespace_id', namespaceId]), 0);
    });

    test('concurrent deleteOverride: one 200, the rest 404, one audit record', async () => {
      const namespaceId = await createNamespace(w, unique('raced-delete'));
      const overrideId = await setOverride(w, { namespaceId, identifier: 'u', limit: 1, duration: 1000 });
      const results = await Promise.all(
        Array.from({ length: 4 }, () => w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier: 'u' })),
      );
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 404, 404, 404], results.map((r) => r.body).join('\n'));
      assert.equal((await auditOf(w, overrideId)).filter((a) => a.event === 'ratelimit.delete_override').length, 1);
    });

    test('setOverride racing deleteNamespace: 200, 404, or 409 when the namespace went away mid-write; never a leftover override', async () => {
      for (let round = 0; round < 10; round++) {
        const namespaceId = await createNamespace(w, unique('raced-namespace'));
        const calls = [w.post('/v1/ratelimits.deleteNamespace', { namespaceId })];
        for (let i = 0; i < 6; i++) {
          if (round % 3 === i % 3) await new Promise((r) => setImmediate(r));
          calls.push(w.post('/v1/ratelimits.setOverride', { namespaceId, identifier: `u${i}`, limit: 1, duration: 1000 }));
        }
        const results = await Promise.all(calls);
        assert.equal(results[0].status, 200, results[0].body);
        for (const r of results.slice(1)) {
          if (r.status === 200 || r.status === 404) continue;
          assert.equal(r.status, 409, r.body);
          assert.equal(r.json.error.type, 'https://keyhold.dev/errors/data/conflict');
        }
        assert.equal(await count(w.store.db, 'ratelimit_overrides', ['namespace_id', namespaceId]), 0);
      }
    });

    test('invalid members → 400 naming each (setOverride, getOverride, deleteOverride); nothing written', async () => {
      const namespaceId = await createNamespace(w, unique('invalid'));
      await setOverride(w, { namespaceId, identifier: 'kept', limit: 1, duration: 1000 });
      const valid = { namespaceId, identifier: 'u', limit: 5, duration: 1000 };
      const before = await snapshot(w, RL_TABLES);
      const setCases: Array<[Record<string, unknown>, string[]]> = [
        [{ ...valid, identifier: '' }, ['/identifier']],
        [{ ...valid, identifier: 'x'.repeat(256) }, ['/identifier']],
        [{ ...valid, limit: -1 }, ['/limit']],
        [{ ...valid, limit: 1_000_000_000_001 }, ['/limit']],
        [{ ...valid, limit: 2.5 }, ['/limit']],
        [{ ...valid, duration: 999 }, ['/duration']],
        [{ ...valid, duration: 31_622_400_001 }, ['/duration']],
        [{ ...valid, async: 'true' }, ['/async']],
        [{ ...valid, namespaceId: '' }, ['/namespaceId']],
        [{ ...valid, namespaceId: undefined }, ['/namespaceId']],
        [{ ...valid, namespaceId: undefined, namespaceName: '' }, ['/namespaceName']],
        [{ namespaceId }, ['/duration', '/identifier', '/limit']],
        [{}, ['/duration', '/identifier', '/limit', '/namespaceId']],
      ];
      for (const [body, paths] of setCases)
        assert.deepEqual(errorPaths(await w.post('/v1/ratelimits.setOverride', body)), paths, JSON.stringify(body).slice(0, 80));
      for (const [body, paths] of [
        [{ namespaceId }, ['/identifier']],
        [{ namespaceId, identifier: '' }, ['/identifier']],
        [{ identifier: 'kept' }, ['/namespaceId']],
        [{ namespaceId: '', identifier: 'kept' }, ['/namespaceId']],
      ] as Array<[Record<string, string>, string[]]>) {
        assert.deepEqual(errorPaths(await w.post('/v1/ratelimits.deleteOverride', body)), paths, JSON.stringify(body));
        assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.getOverride', body)), paths, JSON.stringify(body));
      }
      assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'x'.repeat(256) })), [
        '/identifier',
      ]);
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      // Unknown members are dropped, not rejected.
      const id = await setOverride(w, { ...valid, extra: 1, meta: { a: 1 } });
      assert.deepEqual((await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'u' })).json, {
        id,
        identifier: 'u',
        limit: 5,
        duration: 1000,
      });
      assert.equal((await w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier: 'u', extra: true })).status, 200);
    });

    test('unknown namespace → 404 data/namespace-not-found on every override route; unknown override → 404; nothing written', async () => {
      const namespaceId = await createNamespace(w, unique('known'));
      const before = await snapshot(w, RL_TABLES);
      const unknownId = 'rlns_1111111111111111111111';
      for (const [id, ref] of [
        [unknownId, { namespaceId: unknownId }],
        ['no-such-namespace', { namespaceName: 'no-such-namespace' }],
      ] as Array<[string, Record<string, string>]>) {
        assertNotFound(await w.post('/v1/ratelimits.setOverride', { ...ref, identifier: 'u', limit: 1, duration: 1000 }), 'namespace', id);
        assertNotFound(await w.get('/v1/ratelimits.getOverride', { ...ref, identifier: 'u' }), 'namespace', id);
        assertNotFound(await w.get('/v1/ratelimits.listOverrides', ref), 'namespace', id);
        assertNotFound(await w.post('/v1/ratelimits.deleteOverride', { ...ref, identifier: 'u' }), 'namespace', id);
      }
      assertNotFound(await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'nobody' }), 'override', 'nobody');
      assertNotFound(await w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier: 'nobody' }), 'override', 'nobody');
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
    });

    test('per-namespace grants: set_override, read_override, delete_override on this namespace work; on another one they do not', async () => {
      const name = unique('granted');
      const namespaceId = await createNamespace(w, name);
      const otherId = await createNamespace(w, unique('granted-other'));
      const grant = (action: string, id = namespaceId) => w.rootKey([`ratelimit.${id}.${action}`]);
      const body = { namespaceName: name, identifier: 'g', limit: 2, duration: 1000 };

      const denied = {
        set: [await grant('set_override', otherId), await grant('read_override'), await w.rootKey(['ratelimit.*.delete_override'])],
        read: [await grant('read_override', otherId), await grant('set_override'), await grant('read_namespace')],
        del: [await grant('delete_override', otherId), await grant('set_override'), await grant('read_override')],
      };
      const before = await snapshot(w, RL_TABLES);
      for (const key of denied.set)
        assertForbidden(await w.post('/v1/ratelimits.setOverride', body, key), `ratelimit.${namespaceId}.set_override`);
      assert.deepEqual(await snapshot(w, RL_TABLES), before);

      const overrideId = await setOverride(w, body, await grant('set_override'));
      assert.equal(await setOverride(w, { ...body, limit: 3 }, await w.rootKey(['ratelimit.*.set_override'])), overrideId);
      const expected = { id: overrideId, identifier: 'g', limit: 3, duration: 1000 };
      for (const key of [await grant('read_override'), await w.rootKey(['ratelimit.*.read_override'])]) {
        assert.deepEqual((await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'g' }, key)).json, expected);
        assert.deepEqual((await w.get('/v1/ratelimits.listOverrides', { namespaceId }, key)).json, { overrides: [expected], total: 1 });
      }
      for (const key of denied.read) {
        assertForbidden(
          await w.get('/v1/ratelimits.getOverride', { namespaceId, identifier: 'g' }, key),
          `ratelimit.${namespaceId}.read_override`,
        );
        assertForbidden(
          await w.get('/v1/ratelimits.listOverrides', { namespaceName: name }, key),
          `ratelimit.${namespaceId}.read_override`,
        );
      }
      const afterSet = await snapshot(w, RL_TABLES);
      for (const key of denied.del)
        assertForbidden(
          await w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier: 'g' }, key),
          `ratelimit.${namespaceId}.delete_override`,
        );
      assert.deepEqual(await snapshot(w, RL_TABLES), afterSet);
      const del = await w.post('/v1/ratelimits.deleteOverride', { namespaceId, identifier: 'g' }, await grant('delete_override'));
      assert.equal(del.status, 200, del.body);
      await setOverride(w, body);
      const wildcard = await w.post(
        '/v1/ratelimits.deleteOverride',
        { namespaceId, identifier: 'g' },
        await w.rootKey(['ratelimit.*.delete_override']),
      );
      assert.equal(wildcard.status, 200, wildcard.body);
      assert.equal(await count(w.store.db, 'ratelimit_overrides', ['namespace_id', namespaceId]), 0);
    });

    test("another workspace's namespace and overrides: 404 on every route, and they stay as they were", async () => {
      const other = await w.otherWorkspace();
      const name = unique('theirs');
      const theirs = await createNamespace(w, name, other.root);
      const overrideId = await setOverride(w, { namespaceId: theirs, identifier: 'x', limit: 1, duration: 1000 }, other.root);
      const before = await snapshot(w, RL_TABLES);
      for (const [id, ref] of [
        [theirs, { namespaceId: theirs }],
        [name, { namespaceName: name }],
      ] as Array<[string, Record<string, string>]>) {
        assertNotFound(await w.post('/v1/ratelimits.setOverride', { ...ref, identifier: 'x', limit: 9, duration: 1000 }), 'namespace', id);
        assertNotFound(await w.get('/v1/ratelimits.getOverride', { ...ref, identifier: 'x' }), 'namespace', id);
        assertNotFound(await w.get('/v1/ratelimits.listOverrides', ref), 'namespace', id);
        assertNotFound(await w.post('/v1/ratelimits.deleteOverride', { ...ref, identifier: 'x' }), 'namespace', id);
      }
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      assert.deepEqual((await w.get('/v1/ratelimits.getOverride', { namespaceId: theirs, identifier: 'x' }, other.root)).json, {
        id: overrideId,
        identifier: 'x',
        limit: 1,
        duration: 1000,
      });
    });

    /** Security tests of one override route: the request names a namespace `request` creates (with an override). */
    const secure = (method: 'GET' | 'POST', route: string, action: string, payload: (namespaceId: string) => Record<string, unknown>) => {
      let namespaceId = '<namespaceId>';
      const make = async (w: World, key?: string) => {
        const id = await createNamespace(w, unique(`secure-${action}`), key);
        await setOverride(w, { namespaceId: id, identifier: 'sec', limit: 1, duration: 1000 }, key);
        return id;
      };
      const request = (id: string) => {
        const p = { namespaceId: id, ...payload(id) };
        return method === 'GET'
          ? { method, path: `/v1/ratelimits.${route}`, query: p as Record<string, string> }
          : { method, path: `/v1/ratelimits.${route}`, body: p };
      };
      describe(`${route}: security`, () => {
        securityTests(() => w, {
          get permission() {
            return `ratelimit.${namespaceId}.${action}`;
          },
          request: async (w) => {
            namespaceId = await make(w);
            return request(namespaceId);
          },
          foreign: async (w, other) => request(await make(w, other.root)),
        });
      });
    };
    secure('POST', 'setOverride', 'set_override', () => ({ identifier: 'sec', limit: 2, duration: 1000 }));
    secure('GET', 'getOverride', 'read_override', () => ({ identifier: 'sec' }));
    secure('GET', 'listOverrides', 'read_override', () => ({}));
    secure('POST', 'deleteOverride', 'delete_override', () => ({ identifier: 'sec' }));
  });
}
