import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { errorPaths } from '../../../helpers/errors.ts';
import { count, rootKeyId, snapshot } from '../../../helpers/rows.ts';
import { unique } from '../../../helpers/rbac.ts';

interface NamespaceView {
  id: string;
  name: string;
  createdAt: number;
}
type NamespacePage = Loose<{ namespaces: NamespaceView[]; total: number; cursor?: string }>;

/** A window no test run crosses (366 days). */
const LONG = 31_622_400_000;
/** Tables a namespace or override change writes: equal snapshots mean nothing was written. */
const RL_TABLES = ['ratelimit_namespaces', 'ratelimit_overrides', 'audit_logs', 'change_feed'] as const;

/** `[success, remaining]` of one ratelimits.limit call. */
async function decide(w: World, body: Record<string, unknown>, key?: string): Promise<[boolean, number]> {
  const r = await w.post<Loose<{ success: boolean; remaining: number }>>('/v1/ratelimits.limit', body, key);
  assert.equal(r.status, 200, r.body);
  return [r.json.success, r.json.remaining];
}

/** Creates the namespace `name` in the workspace of `key` (by a cost-0 ratelimits.limit) and returns it as the API shows it. */
async function createNamespace(w: World, name: string, key = w.root): Promise<NamespaceView> {
  await decide(w, { namespace: name, identifier: 'setup', limit: 1, duration: 1000, cost: 0 }, key);
  const r = await w.get<NamespaceView>('/v1/ratelimits.getNamespace', { namespaceName: name }, key);
  assert.equal(r.status, 200, r.body);
  return r.json;
}

async function setOverride(w: World, body: Record<string, unknown>, key?: string): Promise<string> {
  const r = await w.post<{ overrideId: string }>('/v1/ratelimits.setOverride', body, key);
  assert.equal(r.status, 200, r.body);
  return r.json.overrideId;
}

const assertNotFound = (r: Response, detail: string) => {
  assert.equal(r.status, 404, r.body);
  assert.equal(r.json.error.code, 'NOT_FOUND');
  assert.equal(r.json.error.type, 'https://keyhold.dev/errors/data/namespace-not-found');
  assert.equal(r.json.error.detail, detail);
};

const assertForbidden = (r: Response, permission: string) => {
  assert.equal(r.status, 403, r.body);
  assert.equal(r.json.error.code, 'INSUFFICIENT_PERMISSIONS');
  assert.equal(r.json.error.detail, `Missing permission: ${permission}`);
};

for (const dialect of DIALECTS) {
  describe(`ratelimits.listNamespaces / getNamespace / deleteNamespace (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('getNamespace: by id or by name, exactly {id, name, createdAt}; the id wins when both are given', async () => {
      const name = unique('orders');
      const t0 = Date.now();
      await decide(w, { namespace: name, identifier: 'u', limit: 1, duration: 1000 });
      const t1 = Date.now();
      const row = await w.store.db
        .selectFrom('ratelimit_namespaces')
        .selectAll()
        .where('name', '=', name)
        .where('workspace_id', '=', w.workspaceId)
        .executeTakeFirstOrThrow();
      const expected = { id: row.id, name, createdAt: row.created_at };
      assert.ok(row.created_at >= t0 && row.created_at <= t1);
      const byId = await w.get('/v1/ratelimits.getNamespace', { namespaceId: row.id });
      assert.equal(byId.status, 200, byId.body);
      assert.deepEqual(byId.json, expected);
      assert.deepEqual((await w.get('/v1/ratelimits.getNamespace', { namespaceName: name })).json, expected);
      const other = await createNamespace(w, unique('orders-other'));
      assert.deepEqual((await w.get('/v1/ratelimits.getNamespace', { namespaceId: row.id, namespaceName: other.name })).json, expected);
      assert.deepEqual((await w.get('/v1/ratelimits.getNamespace', { namespaceId: row.id, namespaceName: 'nope' })).json, expected);
      // Names are exact text.
      assertNotFound(
        await w.get('/v1/ratelimits.getNamespace', { namespaceName: name.toUpperCase() }),
        `namespace ${name.toUpperCase()} not found`,
      );
    });

    test('getNamespace: unknown id or name → 404 data/namespace-not-found; no reference or an empty one → 400 naming it', async () => {
      assertNotFound(
        await w.get('/v1/ratelimits.getNamespace', { namespaceId: 'rlns_1111111111111111111111' }),
        'namespace rlns_1111111111111111111111 not found',
      );
      assertNotFound(
        await w.get('/v1/ratelimits.getNamespace', { namespaceName: 'no-such-namespace' }),
        'namespace no-such-namespace not found',
      );
      // The id wins: an unknown id with an existing name is a 404.
      const existing = await createNamespace(w, unique('exists'));
      assertNotFound(
        await w.get('/v1/ratelimits.getNamespace', { namespaceId: 'rlns_2222222222222222222222', namespaceName: existing.name }),
        'namespace rlns_2222222222222222222222 not found',
      );
      assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.getNamespace', {})), ['/namespaceId']);
      assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.getNamespace', { other: 'x' })), ['/namespaceId']);
      assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.getNamespace', { namespaceId: '' })), ['/namespaceId']);
      assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.getNamespace', { namespaceName: '' })), ['/namespaceName']);
      assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.getNamespace', { namespaceName: 'n'.repeat(256) })), ['/namespaceName']);
    });

    test('getNamespace: ratelimit.<namespaceId>.read_namespace is enough; a grant on another namespace or another action is not', async () => {
      const ns = await createNamespace(w, unique('readable'));
      const other = await createNamespace(w, unique('readable-other'));
      for (const permissions of [[`ratelimit.${ns.id}.read_namespace`], ['ratelimit.*.read_namespace']]) {
        for (const query of [{ namespaceId: ns.id }, { namespaceName: ns.name }] as Array<Record<string, string>>) {
          const r = await w.get('/v1/ratelimits.getNamespace', query, await w.rootKey(permissions));
          assert.equal(r.status, 200, r.body);
          assert.deepEqual(r.json, ns);
        }
      }
      for (const permissions of [
        [`ratelimit.${other.id}.read_namespace`],
        [`ratelimit.${ns.id}.limit`, `ratelimit.${ns.id}.read_override`],
      ]) {
        assertForbidden(
          await w.get('/v1/ratelimits.getNamespace', { namespaceName: ns.name }, await w.rootKey(permissions)),
          `ratelimit.${ns.id}.read_namespace`,
        );
      }
    });

    test("listNamespaces: the workspace's namespaces by id, cursor pagination, `total` on every page; others invisible", async () => {
      const other = await w.otherWorkspace();
      const empty = await w.get<NamespacePage>('/v1/ratelimits.listNamespaces', {}, other.root);
      assert.equal(empty.status, 200, empty.body);
      assert.deepEqual(empty.json, { namespaces: [], total: 0 });

      const created: NamespaceView[] = [];
      for (let i = 0; i < 5; i++) created.push(await createNamespace(w, `list-${i}`, other.root));
      const inOrder = [...created].sort((a, b) => (a.id < b.id ? -1 : 1));
      const all = await w.get<NamespacePage>('/v1/ratelimits.listNamespaces', {}, other.root);
      assert.equal(all.status, 200, all.body);
      assert.deepEqual(all.json, { namespaces: inOrder, total: 5 });

      const pages: NamespaceView[][] = [];
      let cursor: string | undefined;
      do {
        const r = await w.get<NamespacePage>('/v1/ratelimits.listNamespaces', { limit: 2, ...(cursor ? { cursor } : {}) }, other.root);
        assert.equal(r.status, 200, r.body);
        assert.equal(r.json.total, 5);
        pages.push(r.json.namespaces);
        cursor = r.json.cursor;
        if (cursor !== undefined) assert.equal(cursor, r.json.namespaces.at(-1)!.id);
        else assert.equal('cursor' in r.json, false);
      } while (cursor);
      assert.deepEqual(
        pages.map((p) => p.length),
        [2, 2, 1],
      );
      assert.deepEqual(pages.flat(), inOrder);
      // Exactly `limit` left: no cursor after the last full page.
      const last = await w.get<NamespacePage>('/v1/ratelimits.listNamespaces', { limit: 5 }, other.root);
      assert.deepEqual(last.json, { namespaces: inOrder, total: 5 });

      // The first workspace sees none of them.
      const mine = await w.get<NamespacePage>('/v1/ratelimits.listNamespaces', {});
      assert.equal(mine.status, 200, mine.body);
      assert.equal(mine.json.total, await count(w.store.db, 'ratelimit_namespaces', ['workspace_id', w.workspaceId]));
      assert.deepEqual(
        mine.json.namespaces.filter((n) => created.some((c) => c.id === n.id)),
        [],
      );
    });

    test('listNamespaces: limit out of 1..100 or an empty cursor → 400; needs ratelimit.*.read_namespace', async () => {
      for (const limit of [0, 101, -1, 'x', 1.5])
        assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.listNamespaces', { limit })), ['/limit']);
      assert.deepEqual(errorPaths(await w.get('/v1/ratelimits.listNamespaces', { cursor: '' })), ['/cursor']);
      const ns = await createNamespace(w, unique('listable'));
      assertForbidden(
        await w.get('/v1/ratelimits.listNamespaces', {}, await w.rootKey([`ratelimit.${ns.id}.read_namespace`])),
        'ratelimit.*.read_namespace',
      );
      const ok = await w.get<NamespacePage>('/v1/ratelimits.listNamespaces', {}, await w.rootKey(['ratelimit.*.read_namespace']));
      assert.equal(ok.status, 200, ok.body);
      assert.ok(ok.json.namespaces.some((n) => n.id === ns.id));
    });

    test('deleteNamespace: removes it and its overrides, audited; a new namespace of the same name starts from zero', async () => {
      const name = unique('doomed');
      const ns = await createNamespace(w, name);
      await setOverride(w, { namespaceId: ns.id, identifier: 'vip', limit: 1, duration: LONG });
      await setOverride(w, { namespaceId: ns.id, identifier: 'team_*', limit: 1, duration: LONG });
      const keep = await createNamespace(w, unique('survivor'));
      await setOverride(w, { namespaceId: keep.id, identifier: 'vip', limit: 1, duration: LONG });
      const body = { namespace: name, identifier: 'u', limit: 2, duration: LONG };
      assert.deepEqual(await decide(w, body), [true, 1]);
      assert.deepEqual(await decide(w, body), [true, 0]);
      assert.deepEqual(await decide(w, body), [false, 0]);
      assert.deepEqual(await decide(w, { ...body, identifier: 'vip' }), [true, 0], 'the override applies: limit 1');

      const res = await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: ns.id });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});
      assert.equal(await count(w.store.db, 'ratelimit_namespaces', ['id', ns.id]), 0);
      assert.equal(await count(w.store.db, 'ratelimit_overrides', ['namespace_id', ns.id]), 0);
      assert.equal(await count(w.store.db, 'ratelimit_overrides', ['namespace_id', keep.id]), 1);
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', ns.id).orderBy('id').execute();
      assert.deepEqual(
        audit.map((a) => a.event),
        ['ratelimitNamespace.create', 'ratelimitNamespace.delete'],
      );
      const a = audit[1];
      assert.deepEqual(
        [a.workspace_id, a.actor_type, a.actor_id, a.target_type, a.request_id],
        [w.workspaceId, 'root_key', await rootKeyId(w, w.root), 'ratelimitNamespace', res.headers['x-request-id']],
      );
      assert.deepEqual(JSON.parse(a.diff!), { name, overridesDeleted: 2 });

      assertNotFound(await w.get('/v1/ratelimits.getNamespace', { namespaceId: ns.id }), `namespace ${ns.id} not found`);
      assertNotFound(await w.get('/v1/ratelimits.listOverrides', { namespaceId: ns.id }), `namespace ${ns.id} not found`);

      // The same name again: a new namespace (new id, audited), counting from zero, without the old overrides.
      assert.deepEqual(await decide(w, body), [true, 1]);
      assert.deepEqual(await decide(w, { ...body, identifier: 'vip' }), [true, 1]);
      const again = (await w.get<NamespaceView>('/v1/ratelimits.getNamespace', { namespaceName: name })).json;
      assert.notEqual(again.id, ns.id);
      assert.equal(await count(w.store.db, 'audit_logs', ['target_id', again.id]), 1);
      assert.deepEqual((await w.get('/v1/ratelimits.listOverrides', { namespaceId: again.id })).json, { overrides: [], total: 0 });
      // The other namespace and its override are untouched.
      assert.deepEqual((await w.get('/v1/ratelimits.getNamespace', { namespaceId: keep.id })).json, keep);
    });

    test('deleteNamespace by name; a second delete → 404 and nothing more written; concurrent deletes: one succeeds', async () => {
      const name = unique('by-name');
      const ns = await createNamespace(w, name);
      const res = await w.post('/v1/ratelimits.deleteNamespace', { namespaceName: name });
      assert.equal(res.status, 200, res.body);
      assert.equal(await count(w.store.db, 'ratelimit_namespaces', ['id', ns.id]), 0);
      const before = await snapshot(w, RL_TABLES);
      assertNotFound(await w.post('/v1/ratelimits.deleteNamespace', { namespaceName: name }), `namespace ${name} not found`);
      assertNotFound(await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: ns.id }), `namespace ${ns.id} not found`);
      assert.deepEqual(await snapshot(w, RL_TABLES), before);

      const raced = await createNamespace(w, unique('raced'));
      const results = await Promise.all(
        Array.from({ length: 4 }, () => w.post('/v1/ratelimits.deleteNamespace', { namespaceId: raced.id })),
      );
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 404, 404, 404], results.map((r) => r.body).join('\n'));
      assert.equal(await count(w.store.db, 'audit_logs', ['target_id', raced.id]), 2); // create + one delete
    });

    test('deleteNamespace: no reference → 400 /namespaceId; invalid or unknown → nothing written; unknown members are dropped', async () => {
      const ns = await createNamespace(w, unique('kept'));
      const before = await snapshot(w, RL_TABLES);
      assert.deepEqual(errorPaths(await w.post('/v1/ratelimits.deleteNamespace', {})), ['/namespaceId']);
      assert.deepEqual(errorPaths(await w.post('/v1/ratelimits.deleteNamespace', { name: ns.name })), ['/namespaceId']);
      assert.deepEqual(errorPaths(await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: '' })), ['/namespaceId']);
      assert.deepEqual(errorPaths(await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: 7 })), ['/namespaceId']);
      assert.deepEqual(errorPaths(await w.post('/v1/ratelimits.deleteNamespace', { namespaceName: '' })), ['/namespaceName']);
      assertNotFound(await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: 'rlns_nope' }), 'namespace rlns_nope not found');
      assertNotFound(
        await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: 'rlns_nope', namespaceName: ns.name }),
        'namespace rlns_nope not found',
      );
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      const res = await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: ns.id, permanent: true, extra: { a: 1 } });
      assert.equal(res.status, 200, res.body);
      assert.equal(await count(w.store.db, 'ratelimit_namespaces', ['id', ns.id]), 0);
    });

    test('deleteNamespace: ratelimit.<namespaceId>.delete_namespace is enough; grants on another namespace are not, and delete nothing', async () => {
      const ns = await createNamespace(w, unique('deletable'));
      const other = await createNamespace(w, unique('deletable-other'));
      await setOverride(w, { namespaceId: ns.id, identifier: 'x', limit: 1, duration: 1000 });
      const keys = await Promise.all(
        [[`ratelimit.${other.id}.delete_namespace`], [`ratelimit.${ns.id}.read_namespace`, `ratelimit.${ns.id}.delete_override`]].map((p) =>
          w.rootKey(p),
        ),
      );
      const before = await snapshot(w, RL_TABLES);
      for (const key of keys)
        assertForbidden(await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: ns.id }, key), `ratelimit.${ns.id}.delete_namespace`);
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      const scoped = await w.post(
        '/v1/ratelimits.deleteNamespace',
        { namespaceName: ns.name },
        await w.rootKey([`ratelimit.${ns.id}.delete_namespace`]),
      );
      assert.equal(scoped.status, 200, scoped.body);
      const wildcard = await w.post(
        '/v1/ratelimits.deleteNamespace',
        { namespaceId: other.id },
        await w.rootKey(['ratelimit.*.delete_namespace']),
      );
      assert.equal(wildcard.status, 200, wildcard.body);
      assert.equal(await count(w.store.db, 'ratelimit_namespaces', ['id', ns.id]), 0);
      assert.equal(await count(w.store.db, 'ratelimit_namespaces', ['id', other.id]), 0);
    });

    test("another workspace's namespace: 404 by id, by name only its own namespace of that name; never changed", async () => {
      const other = await w.otherWorkspace();
      const theirs = await createNamespace(w, unique('theirs'), other.root);
      await setOverride(w, { namespaceId: theirs.id, identifier: 'x', limit: 1, duration: 1000 }, other.root);
      assertNotFound(await w.get('/v1/ratelimits.getNamespace', { namespaceId: theirs.id }), `namespace ${theirs.id} not found`);
      assertNotFound(await w.get('/v1/ratelimits.getNamespace', { namespaceName: theirs.name }), `namespace ${theirs.name} not found`);
      for (const body of [{ namespaceId: theirs.id }, { namespaceName: theirs.name }]) {
        const r = await w.post('/v1/ratelimits.deleteNamespace', body);
        assert.equal(r.status, 404, r.body);
      }
      // Ours of the same name is another namespace; deleting it leaves theirs.
      const ours = await createNamespace(w, theirs.name);
      assert.notEqual(ours.id, theirs.id);
      assert.equal((await w.post('/v1/ratelimits.deleteNamespace', { namespaceName: theirs.name })).status, 200);
      assert.deepEqual((await w.get('/v1/ratelimits.getNamespace', { namespaceId: theirs.id }, other.root)).json, theirs);
      assert.equal(await count(w.store.db, 'ratelimit_overrides', ['namespace_id', theirs.id]), 1);
    });

    describe('listNamespaces: security', () => {
      securityTests(() => w, {
        permission: 'ratelimit.*.read_namespace',
        request: async () => ({ method: 'GET', path: '/v1/ratelimits.listNamespaces', query: {} }),
      });
    });

    describe('getNamespace: security', () => {
      let namespaceId = '<namespaceId>';
      securityTests(() => w, {
        get permission() {
          return `ratelimit.${namespaceId}.read_namespace`;
        },
        request: async (w) => {
          namespaceId = (await createNamespace(w, unique('secure-get'))).id;
          return { method: 'GET', path: '/v1/ratelimits.getNamespace', query: { namespaceId } };
        },
        foreign: async (w, other) => ({
          method: 'GET',
          path: '/v1/ratelimits.getNamespace',
          query: { namespaceId: (await createNamespace(w, unique('foreign-get'), other.root)).id },
        }),
      });
    });

    describe('deleteNamespace: security', () => {
      let namespaceId = '<namespaceId>';
      securityTests(() => w, {
        get permission() {
          return `ratelimit.${namespaceId}.delete_namespace`;
        },
        request: async (w) => {
          namespaceId = (await createNamespace(w, unique('secure-delete'))).id;
          return { method: 'POST', path: '/v1/ratelimits.deleteNamespace', body: { namespaceId } };
        },
        foreign: async (w, other) => ({
          method: 'POST',
          path: '/v1/ratelimits.deleteNamespace',
          body: { namespaceId: (await createNamespace(w, unique('foreign-delete'), other.root)).id },
        }),
      });
    });
  });
}
