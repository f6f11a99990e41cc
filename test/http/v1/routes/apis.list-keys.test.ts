import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { newId } from '../../../../src/domain/ids.ts';

type Query = Record<string, string | number | boolean>;
/** A Key object of an apis.listKeys page, with the members these tests compute with. */
type ListedKey = Loose<{ id: string; createdAt: number; externalId: string; ownerId: string }>;
/** An apis.listKeys page. */
type Page = Loose<{ keys: ListedKey[]; total: number; cursor?: string }>;
const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

for (const dialect of DIALECTS) {
  describe(`apis.listKeys (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    /** Creates `n` keys (in order) on `apiId` and returns their ids. */
    const createKeys = async (apiId: string, n: number, extra: Record<string, unknown> = {}): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push((await w.createKey({ apiId, name: `k${i}`, ...extra })).keyId);
      return ids;
    };

    /** Every page of listKeys with `limit`, following cursors; fails on a non-200 or a runaway loop. */
    const allPages = async (query: Query, key = w.root) => {
      const pages: Page[] = [];
      let cursor: string | undefined;
      do {
        const res = await w.get<Page>('/v1/apis.listKeys', { ...query, ...(cursor ? { cursor } : {}) }, key);
        assert.equal(res.status, 200, res.body);
        pages.push(res.json);
        cursor = res.json.cursor;
        assert.ok(pages.length <= 50, 'pagination does not end');
      } while (cursor !== undefined);
      return pages;
    };

    test('an API without keys → {keys: [], total: 0} and no cursor', async () => {
      const apiId = await w.createApi('empty');
      const res = await w.get<Page>('/v1/apis.listKeys', { apiId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, { keys: [], total: 0 });
    });

    test('a minimal key is listed with only the members it has', async () => {
      const apiId = await w.createApi('minimal');
      const t0 = Date.now();
      const { keyId, key } = await w.createKey({ apiId });
      const t1 = Date.now();
      const res = await w.get<Page>('/v1/apis.listKeys', { apiId });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.total, 1);
      assert.equal(res.json.cursor, undefined);
      const [k] = res.json.keys;
      assert.ok(k.createdAt >= t0 && k.createdAt <= t1, `createdAt ${k.createdAt} not within [${t0}, ${t1}]`);
      assert.deepEqual(k, {
        id: keyId,
        start: key.slice(0, 4),
        apiId,
        workspaceId: w.workspaceId,
        createdAt: k.createdAt,
        updatedAt: k.createdAt,
        roles: [],
        permissions: [],
        enabled: true,
      });
    });

    test('each key shows name, identity, meta, expiry, credits, refill, rate limit, roles, permissions and environment as in getKey', async () => {
      const apiId = await w.createApi('rich');
      const expires = Date.now() + 86_400_000;
      const t0 = Date.now();
      const rich = await w.createKey({
        apiId,
        prefix: 'sk_live',
        name: 'rich key',
        externalId: 'user-rich',
        meta: { plan: 'pro', seats: 3, nested: { a: [1, 2] } },
        roles: ['admin', 'viewer'],
        permissions: ['docs.write', 'docs.read'],
        expires,
        remaining: 50,
        refill: { interval: 'monthly', amount: 100, refillDay: 15 },
        ratelimit: { type: 'fast', limit: 10, duration: 60_000 },
        enabled: false,
        environment: 'staging',
      });
      const plain = await w.createKey({
        apiId,
        ownerId: 'user-plain',
        remaining: 5,
        refill: { interval: 'daily', amount: 7 },
        ratelimit: { async: false, limit: 5, refillInterval: 1000 },
      });
      const t1 = Date.now();

      // A permission reached through a role, one of them also held directly: listed once, sorted.
      const db = w.store.db;
      const admin = await db
        .selectFrom('roles')
        .select('id')
        .where('workspace_id', '=', w.workspaceId)
        .where('name', '=', 'admin')
        .executeTakeFirstOrThrow();
      const read = await db
        .selectFrom('permissions')
        .select('id')
        .where('workspace_id', '=', w.workspaceId)
        .where('slug', '=', 'docs.read')
        .executeTakeFirstOrThrow();
      const del = newId('perm');
      await db
        .insertInto('permissions')
        .values({
          id: del,
          workspace_id: w.workspaceId,
          name: 'docs.delete',
          slug: 'docs.delete',
          description: null,
          created_at: t1,
          updated_at: t1,
        })
        .execute();
      await db
        .insertInto('roles_permissions')
        .values([
          { role_id: admin.id, permission_id: read.id, workspace_id: w.workspaceId, created_at: t1 },
          { role_id: admin.id, permission_id: del, workspace_id: w.workspaceId, created_at: t1 },
        ])
        .execute();
      const richIdentity = await db
        .selectFrom('identities')
        .select('id')
        .where('workspace_id', '=', w.workspaceId)
        .where('external_id', '=', 'user-rich')
        .executeTakeFirstOrThrow();
      await db
        .updateTable('identities')
        .set({ meta: JSON.stringify({ tier: 'gold' }) })
        .where('id', '=', richIdentity.id)
        .execute();
      const plainIdentity = await db
        .selectFrom('identities')
        .select('id')
        .where('workspace_id', '=', w.workspaceId)
        .where('external_id', '=', 'user-plain')
        .executeTakeFirstOrThrow();

      const res = await w.get<Page>('/v1/apis.listKeys', { apiId });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.total, 2);
      assert.equal(res.json.cursor, undefined);
      const got = new Map(res.json.keys.map((k) => [k.id, k]));
      assert.deepEqual(
        res.json.keys.map((k: { id: string }) => k.id),
        [rich.keyId, plain.keyId].sort(byId),
      );

      const r = got.get(rich.keyId)!;
      assert.ok(r.createdAt >= t0 && r.createdAt <= t1);
      assert.deepEqual(r, {
        id: rich.keyId,
        start: rich.key.slice(0, 'sk_live_'.length + 4),
        apiId,
        workspaceId: w.workspaceId,
        name: 'rich key',
        ownerId: 'user-rich',
        externalId: 'user-rich',
        meta: { plan: 'pro', seats: 3, nested: { a: [1, 2] } },
        createdAt: r.createdAt,
        updatedAt: r.createdAt,
        expires,
        remaining: 50,
        refill: { interval: 'monthly', amount: 100, refillDay: 15, lastRefillAt: r.createdAt },
        ratelimit: { async: true, type: 'fast', limit: 10, duration: 60_000, refillRate: 10, refillInterval: 60_000 },
        roles: ['admin', 'viewer'],
        permissions: ['docs.delete', 'docs.read', 'docs.write'],
        enabled: false,
        environment: 'staging',
        identity: { id: richIdentity.id, externalId: 'user-rich', meta: { tier: 'gold' } },
      });
      assert.ok(rich.key.startsWith('sk_live_'));

      const p = got.get(plain.keyId)!;
      assert.deepEqual(p, {
        id: plain.keyId,
        start: plain.key.slice(0, 4),
        apiId,
        workspaceId: w.workspaceId,
        ownerId: 'user-plain',
        externalId: 'user-plain',
        createdAt: p.createdAt,
        updatedAt: p.createdAt,
        remaining: 5,
        refill: { interval: 'daily', amount: 7, lastRefillAt: p.createdAt },
        ratelimit: { async: false, type: 'consistent', limit: 5, duration: 1000, refillRate: 5, refillInterval: 1000 },
        roles: [],
        permissions: [],
        enabled: true,
        identity: { id: plainIdentity.id, externalId: 'user-plain', meta: {} },
      });

      // The same Key object as keys.getKey.
      for (const id of [rich.keyId, plain.keyId]) {
        const one = await w.get('/v1/keys.getKey', { keyId: id });
        assert.equal(one.status, 200, one.body);
        assert.deepEqual(got.get(id), one.json);
      }
    });

    test('pages of `limit` keys in id order, disjoint, covering every key; cursor only while more remain; total exact', async () => {
      const apiId = await w.createApi('paged');
      const ids = await createKeys(apiId, 7);
      const pages = await allPages({ apiId, limit: 3 });
      assert.deepEqual(
        pages.map((p) => p.keys.length),
        [3, 3, 1],
      );
      assert.deepEqual(
        pages.map((p) => p.total),
        [7, 7, 7],
      );
      assert.deepEqual(
        pages.map((p) => p.cursor),
        [pages[0].keys[2].id, pages[1].keys[2].id, undefined],
      );
      assert.equal('cursor' in pages[2], false);
      const listed = pages.flatMap((p) => p.keys.map((k) => k.id));
      assert.equal(new Set(listed).size, listed.length, 'pages overlap');
      assert.deepEqual(listed, [...ids].sort(byId));
    });

    test('a last page that is exactly full has no cursor', async () => {
      const apiId = await w.createApi('exact');
      const ids = await createKeys(apiId, 4);
      const pages = await allPages({ apiId, limit: 2 });
      assert.deepEqual(
        pages.map((p) => p.keys.length),
        [2, 2],
      );
      assert.equal(pages[1].cursor, undefined);
      assert.deepEqual(
        pages.flatMap((p) => p.keys.map((k) => k.id)),
        [...ids].sort(byId),
      );

      const one = await w.get<Page>('/v1/apis.listKeys', { apiId, limit: 4 });
      assert.equal(one.status, 200, one.body);
      assert.deepEqual(
        one.json.keys.map((k: { id: string }) => k.id),
        [...ids].sort(byId),
      );
      assert.equal(one.json.total, 4);
      assert.equal('cursor' in one.json, false);
    });

    test('a cursor at or past the last key → empty page, total unchanged', async () => {
      const apiId = await w.createApi('past-end');
      const ids = (await createKeys(apiId, 2)).sort(byId);
      for (const cursor of [ids[1], 'key_zzzzzzzzzzzzzzzzzzzzzz']) {
        const res = await w.get<Page>('/v1/apis.listKeys', { apiId, cursor });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, { keys: [], total: 2 });
      }
      const res = await w.get<Page>('/v1/apis.listKeys', { apiId, cursor: ids[0] });
      assert.deepEqual(
        res.json.keys.map((k: { id: string }) => k.id),
        [ids[1]],
      );
      assert.equal(res.json.total, 2);
    });

    test('limit defaults to 100, and 100 is accepted', async () => {
      const apiId = await w.createApi('hundred');
      const ids = (await createKeys(apiId, 101)).sort(byId);
      for (const query of [{ apiId }, { apiId, limit: 100 }] as Query[]) {
        const first = await w.get<Page>('/v1/apis.listKeys', query);
        assert.equal(first.status, 200, first.body);
        assert.deepEqual(
          first.json.keys.map((k: { id: string }) => k.id),
          ids.slice(0, 100),
        );
        assert.equal(first.json.total, 101);
        assert.equal(first.json.cursor, ids[99]);
        const second = await w.get<Page>('/v1/apis.listKeys', { ...query, cursor: first.json.cursor });
        assert.deepEqual(
          second.json.keys.map((k: { id: string }) => k.id),
          [ids[100]],
        );
        assert.equal(second.json.total, 101);
        assert.equal(second.json.cursor, undefined);
      }
    });

    test('deleted keys are neither listed nor counted', async () => {
      const apiId = await w.createApi('with-deleted');
      const [a, b, c, d] = await createKeys(apiId, 4);
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: b })).status, 200);
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: d, permanent: true })).status, 200);
      const pages = await allPages({ apiId, limit: 1 });
      assert.deepEqual(
        pages.flatMap((p) => p.keys.map((k) => k.id)),
        [a, c].sort(byId),
      );
      assert.deepEqual(
        pages.map((p) => p.total),
        [2, 2],
      );
    });

    test('keys of other APIs (and other workspaces) are not listed', async () => {
      const apiId = await w.createApi('mine-a');
      const otherApiId = await w.createApi('mine-b');
      const mine = await createKeys(apiId, 2);
      const notMine = await createKeys(otherApiId, 3);
      const other = await w.otherWorkspace();
      const theirApi = await w.createApi('theirs', other.root);
      await w.createKey({ apiId: theirApi }, other.root);
      const res = await w.get<Page>('/v1/apis.listKeys', { apiId });
      assert.deepEqual(
        res.json.keys.map((k: { id: string }) => k.id),
        mine.sort(byId),
      );
      assert.equal(res.json.total, 2);
      const res2 = await w.get<Page>('/v1/apis.listKeys', { apiId: otherApiId });
      assert.deepEqual(
        res2.json.keys.map((k: { id: string }) => k.id),
        notMine.sort(byId),
      );
      assert.equal(res2.json.total, 3);
    });

    test('externalId and the deprecated ownerId filter by identity; externalId wins over ownerId', async () => {
      const apiId = await w.createApi('by-identity');
      const alice = await createKeys(apiId, 3, { externalId: 'alice' });
      const bob = await createKeys(apiId, 1, { ownerId: 'bob' });
      await createKeys(apiId, 2);
      // Alice also holds a key of another API, and another workspace has its own "alice".
      await w.createKey({ apiId: await w.createApi('elsewhere'), externalId: 'alice' });
      const other = await w.otherWorkspace();
      const theirApi = await w.createApi('theirs', other.root);
      await w.createKey({ apiId: theirApi, externalId: 'alice' }, other.root);

      const ids = (res: { json: Page }) => res.json.keys.map((k) => k.id);
      for (const query of [
        { apiId, externalId: 'alice' },
        { apiId, ownerId: 'alice' },
        { apiId, externalId: 'alice', ownerId: 'bob' },
      ] as Query[]) {
        const res = await w.get<Page>('/v1/apis.listKeys', query);
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(ids(res), [...alice].sort(byId), JSON.stringify(query));
        assert.equal(res.json.total, 3);
        assert.ok(res.json.keys.every((k: { externalId: string; ownerId: string }) => k.externalId === 'alice' && k.ownerId === 'alice'));
      }
      for (const query of [
        { apiId, externalId: 'bob' },
        { apiId, ownerId: 'bob' },
      ] as Query[]) {
        const res = await w.get<Page>('/v1/apis.listKeys', query);
        assert.deepEqual(ids(res), bob);
        assert.equal(res.json.total, 1);
      }
      const everyone = await w.get<Page>('/v1/apis.listKeys', { apiId });
      assert.equal(everyone.json.total, 6);

      const pages = await allPages({ apiId, externalId: 'alice', limit: 2 });
      assert.deepEqual(
        pages.map((p) => p.keys.length),
        [2, 1],
      );
      assert.deepEqual(
        pages.map((p) => p.total),
        [3, 3],
      );
      assert.deepEqual(
        pages.flatMap((p) => p.keys.map((k) => k.id)),
        [...alice].sort(byId),
      );
    });

    test('an externalId without identity, or with no key in this API → keys [] and total 0', async () => {
      const apiId = await w.createApi('no-match');
      await createKeys(apiId, 2);
      await w.createKey({ apiId: await w.createApi('only-there'), externalId: 'carol' });
      const other = await w.otherWorkspace();
      await w.createKey({ apiId: await w.createApi('foreign-dave', other.root), externalId: 'dave' }, other.root);
      for (const query of [{ externalId: 'nobody' }, { ownerId: 'nobody' }, { externalId: 'carol' }, { externalId: 'dave' }] as Query[]) {
        const res = await w.get<Page>('/v1/apis.listKeys', { apiId, ...query });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, { keys: [], total: 0 }, JSON.stringify(query));
      }
    });

    test('invalid query → 400 listing every problem by path', async () => {
      const apiId = await w.createApi('validation');
      const cases: Array<[Query, string[]]> = [
        [{ apiId, limit: 0 }, ['/limit']],
        [{ apiId, limit: 101 }, ['/limit']],
        [{ apiId, limit: 'abc' }, ['/limit']],
        [{ apiId, limit: 1.5 }, ['/limit']],
        [{ apiId, limit: -1 }, ['/limit']],
        [{}, ['/apiId']],
        [{ apiId: '' }, ['/apiId']],
        [{ apiId, cursor: '' }, ['/cursor']],
        [{ apiId, externalId: '' }, ['/externalId']],
        [{ apiId, ownerId: '' }, ['/ownerId']],
        [{ apiId, decrypt: 'maybe' }, ['/decrypt']],
        [{ limit: 0, cursor: '' }, ['/apiId', '/cursor', '/limit']],
      ];
      for (const [query, paths] of cases) {
        const res = await w.get('/v1/apis.listKeys', query);
        assert.equal(res.status, 400, `${JSON.stringify(query)}: ${res.body}`);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
        assert.deepEqual(res.json.error.errors.map((e: { path: string }) => e.path).sort(), paths, JSON.stringify(query));
      }
    });

    test('unknown or deleted API → 404', async () => {
      const unknown = await w.get('/v1/apis.listKeys', { apiId: 'api_1111111111111111111111' });
      assert.equal(unknown.status, 404, unknown.body);
      assert.equal(unknown.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
      assert.equal(unknown.json.error.detail, 'api api_1111111111111111111111 not found');
      const apiId = await w.createApi('deleted');
      await createKeys(apiId, 1);
      await w.store.db.updateTable('apis').set({ deleted_at: Date.now() }).where('id', '=', apiId).execute();
      const deleted = await w.get('/v1/apis.listKeys', { apiId });
      assert.equal(deleted.status, 404, deleted.body);
      assert.equal(deleted.json.error.code, 'NOT_FOUND');
    });

    test('needs both read_api and read_key on the API: either alone → 403 naming the other', async () => {
      const apiId = await w.createApi('perm-both');
      const [keyId] = await createKeys(apiId, 1);
      const cases: Array<[string[], string]> = [
        [[`api.${apiId}.read_api`], `Missing permission: api.${apiId}.read_key`],
        [[`api.${apiId}.read_key`], `Missing permission: api.${apiId}.read_api`],
        [['api.*.read_api'], `Missing permission: api.${apiId}.read_key`],
        [['api.*.read_key', `api.${apiId}.decrypt_key`], `Missing permission: api.${apiId}.read_api`],
      ];
      for (const [permissions, detail] of cases) {
        const res = await w.get('/v1/apis.listKeys', { apiId }, await w.rootKey(permissions));
        assert.equal(res.status, 403, `${permissions.join(',')}: ${res.body}`);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.equal(res.json.error.detail, detail);
      }
      for (const permissions of [
        [`api.${apiId}.read_api`, `api.${apiId}.read_key`],
        ['api.*.read_api', 'api.*.read_key'],
        [`api.${apiId}.read_api`, 'api.*.read_key'],
      ]) {
        const res = await w.get<Page>('/v1/apis.listKeys', { apiId }, await w.rootKey(permissions));
        assert.equal(res.status, 200, `${permissions.join(',')}: ${res.body}`);
        assert.deepEqual(
          res.json.keys.map((k: { id: string }) => k.id),
          [keyId],
        );
      }
    });

    test('permissions for a different API id do not grant this one', async () => {
      const apiId = await w.createApi('perm-target');
      const otherApiId = await w.createApi('perm-other');
      const key = await w.rootKey([`api.${otherApiId}.read_api`, `api.${otherApiId}.read_key`]);
      const res = await w.get('/v1/apis.listKeys', { apiId }, key);
      assert.equal(res.status, 403, res.body);
      assert.equal(res.json.error.detail, `Missing permissions: api.${apiId}.read_api, api.${apiId}.read_key`);
      assert.equal((await w.get('/v1/apis.listKeys', { apiId: otherApiId }, key)).status, 200);
    });

    test('decrypt=true also needs decrypt_key; decrypt=false does not', async () => {
      const apiId = await w.createApi('decrypt');
      await createKeys(apiId, 2);
      const reader = await w.rootKey([`api.${apiId}.read_api`, `api.${apiId}.read_key`]);
      const denied = await w.get('/v1/apis.listKeys', { apiId, decrypt: true }, reader);
      assert.equal(denied.status, 403, denied.body);
      assert.equal(denied.json.error.code, 'INSUFFICIENT_PERMISSIONS');
      assert.equal(denied.json.error.detail, `Missing permission: api.${apiId}.decrypt_key`);

      const plain = await w.get<Page>('/v1/apis.listKeys', { apiId, decrypt: false }, reader);
      assert.equal(plain.status, 200, plain.body);
      assert.equal(plain.json.total, 2);

      for (const decryptor of [
        [`api.${apiId}.read_api`, `api.${apiId}.read_key`, `api.${apiId}.decrypt_key`],
        ['api.*.read_api', 'api.*.read_key', 'api.*.decrypt_key'],
      ]) {
        const res = await w.get<Page>('/v1/apis.listKeys', { apiId, decrypt: true }, await w.rootKey(decryptor));
        assert.equal(res.status, 200, res.body);
        // None of these keys is recoverable, so there is nothing to decrypt: the same page without plaintext.
        assert.deepEqual(res.json, plain.json);
        assert.ok(res.json.keys.every((k: Record<string, unknown>) => !('plaintext' in k)));
      }
      const wrongApi = await w.rootKey([
        `api.${apiId}.read_api`,
        `api.${apiId}.read_key`,
        `api.${await w.createApi('decrypt-other')}.decrypt_key`,
      ]);
      const res = await w.get('/v1/apis.listKeys', { apiId, decrypt: true }, wrongApi);
      assert.equal(res.status, 403, res.body);
      assert.equal(res.json.error.detail, `Missing permission: api.${apiId}.decrypt_key`);
    });

    test("another workspace's API is 404 even for a root key without the permissions (never 403)", async () => {
      const other = await w.otherWorkspace();
      const theirs = await w.createApi('theirs', other.root);
      await w.createKey({ apiId: theirs }, other.root);
      for (const key of [
        w.root,
        await w.rootKey(['api.*.read_analytics']),
        await w.rootKey([`api.${theirs}.read_api`, `api.${theirs}.read_key`]),
      ]) {
        const res = await w.get('/v1/apis.listKeys', { apiId: theirs }, key);
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
      }
      assert.equal((await w.get<Page>('/v1/apis.listKeys', { apiId: theirs }, other.root)).json.total, 1);
    });

    // The permission names the API the request is about; `request` creates it, so read it afterwards.
    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.read_key`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure');
        await w.createKey({ apiId: securityApiId });
        return { method: 'GET', path: '/v1/apis.listKeys', query: { apiId: securityApiId } };
      },
      foreign: async (w, other) => {
        const apiId = await w.createApi('foreign', other.root);
        await w.createKey({ apiId }, other.root);
        return { method: 'GET', path: '/v1/apis.listKeys', query: { apiId } };
      },
    });
  });
}
