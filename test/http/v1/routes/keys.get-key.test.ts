import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { keyRow } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';

for (const dialect of DIALECTS) {
  describe(`keys.getKey (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('get-api');
    });
    after(() => w.close());

    test('returns the full Key object, every member from the stored key', async () => {
      const expires = Date.now() + 3_600_000;
      const meta = { tier: 'gold', limits: { seats: 3 }, tags: ['a', 'b'] };
      const { key, keyId } = await w.createKey({
        apiId,
        prefix: 'gk',
        name: 'getter',
        externalId: 'user_get',
        meta,
        expires,
        remaining: 9,
        refill: { interval: 'monthly', amount: 9, refillDay: 15 },
        ratelimit: { limit: 7, duration: 1000 },
        environment: 'production',
        roles: ['reader', 'auditor'],
        permissions: ['b.read', 'a.read'],
      });
      const res = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.plaintext, undefined);
      const row = await keyRow(w, keyId);
      const identity = await w.store.db.selectFrom('identities').selectAll().where('id', '=', row.identity_id!).executeTakeFirstOrThrow();
      assert.deepEqual(res.json, {
        id: keyId,
        start: key.slice(0, 'gk_'.length + 4),
        apiId,
        workspaceId: w.workspaceId,
        name: 'getter',
        ownerId: 'user_get',
        externalId: 'user_get',
        meta,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
        expires,
        remaining: 9,
        refill: { interval: 'monthly', amount: 9, refillDay: 15, lastRefillAt: row.last_refill_at },
        ratelimit: { async: false, type: 'consistent', limit: 7, duration: 1000, refillRate: 7, refillInterval: 1000 },
        roles: ['auditor', 'reader'],
        permissions: ['a.read', 'b.read'],
        enabled: true,
        environment: 'production',
        identity: { id: identity.id, externalId: 'user_get', meta: {} },
      });
      assert.equal(res.json.start, row.start);
      assert.equal(typeof res.json.createdAt, 'number');
    });

    test('a bare key has no optional members', async () => {
      const { keyId } = await w.createKey({ apiId });
      const res = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(Object.keys(res.json).sort(), [
        'apiId',
        'createdAt',
        'enabled',
        'id',
        'permissions',
        'roles',
        'start',
        'updatedAt',
        'workspaceId',
      ]);
    });

    test('reflects later changes to the stored key, its identity and its limit', async () => {
      const { keyId } = await w.createKey({ apiId, externalId: 'user_changes', ratelimit: { limit: 1, duration: 1000 } });
      const row = await keyRow(w, keyId);
      await w.store.db
        .updateTable('keys')
        .set({ name: 'renamed', remaining: 42, enabled: 0, last_used_at: row.created_at + 5, updated_at: row.created_at + 10 })
        .where('id', '=', keyId)
        .execute();
      await w.store.db
        .updateTable('identities')
        .set({ meta: JSON.stringify({ org: 'acme' }) })
        .where('id', '=', row.identity_id!)
        .execute();
      await w.store.db.updateTable('ratelimits').set({ limit: 99, type: 'fast' }).where('key_id', '=', keyId).execute();
      const res = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(res.json.name, 'renamed');
      assert.equal(res.json.remaining, 42);
      assert.equal(res.json.enabled, false);
      assert.equal(res.json.lastUsedAt, row.created_at + 5);
      assert.equal(res.json.updatedAt, row.created_at + 10);
      assert.deepEqual(res.json.identity, { id: row.identity_id, externalId: 'user_changes', meta: { org: 'acme' } });
      assert.deepEqual(res.json.ratelimit, { async: true, type: 'fast', limit: 99, duration: 1000, refillRate: 99, refillInterval: 1000 });
    });

    test("only the limit named default is the key's ratelimit", async () => {
      const { keyId } = await w.createKey({ apiId });
      const now = Date.now();
      await w.store.db
        .insertInto('ratelimits')
        .values({
          id: 'rl_notdefault1111111111111',
          workspace_id: w.workspaceId,
          key_id: keyId,
          identity_id: null,
          name: 'burst',
          type: 'consistent',
          limit: 3,
          duration: 1000,
          auto_apply: 0,
          created_at: now,
          updated_at: now,
        })
        .execute();
      const res = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(res.json.ratelimit, undefined);
    });

    test('permissions are effective: direct ∪ through roles, de-duplicated and sorted', async () => {
      const { keyId } = await w.createKey({ apiId, roles: ['union-role', 'empty-role'], permissions: ['direct.only', 'both.ways'] });
      const viaRoleOnly = await w.createKey({ apiId, roles: ['union-role'] });
      // The role grants `role.only` and `both.ways` (the latter also attached directly to the first key).
      await w.createKey({ apiId, permissions: ['role.only', 'unrelated.perm'] });
      const role = await w.store.db
        .selectFrom('roles')
        .selectAll()
        .where('name', '=', 'union-role')
        .where('workspace_id', '=', w.workspaceId)
        .executeTakeFirstOrThrow();
      const perms = await w.store.db
        .selectFrom('permissions')
        .selectAll()
        .where('slug', 'in', ['role.only', 'both.ways'])
        .where('workspace_id', '=', w.workspaceId)
        .execute();
      assert.equal(perms.length, 2);
      const now = Date.now();
      await w.store.db
        .insertInto('roles_permissions')
        .values(perms.map((p) => ({ role_id: role.id, permission_id: p.id, workspace_id: w.workspaceId, created_at: now })))
        .execute();

      const res = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json.roles, ['empty-role', 'union-role']);
      assert.deepEqual(res.json.permissions, ['both.ways', 'direct.only', 'role.only']);
      const other = await w.get('/v1/keys.getKey', { keyId: viaRoleOnly.keyId });
      assert.deepEqual(other.json.roles, ['union-role']);
      assert.deepEqual(other.json.permissions, ['both.ways', 'role.only']);

      // Removing the role from the key removes what it granted; the direct permissions stay.
      await w.store.db.deleteFrom('keys_roles').where('key_id', '=', keyId).where('role_id', '=', role.id).execute();
      const after = await w.get('/v1/keys.getKey', { keyId });
      assert.deepEqual(after.json.roles, ['empty-role']);
      assert.deepEqual(after.json.permissions, ['both.ways', 'direct.only']);
    });

    test('unknown, malformed or deleted key → 404 key-not-found', async () => {
      const { keyId } = await w.createKey({ apiId });
      const del = await w.post('/v1/keys.deleteKey', { keyId });
      assert.equal(del.status, 200, del.body);
      for (const id of ['key_1111111111111111111111', 'not-a-key-id', keyId]) {
        const res = await w.get('/v1/keys.getKey', { keyId: id });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        assert.ok(res.json.error.detail.includes(id), res.json.error.detail);
      }
    });

    test('a key of a deleted api → 404', async () => {
      const api = await w.createApi('doomed');
      const { keyId } = await w.createKey({ apiId: api });
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: api })).status, 200);
      const res = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(res.status, 404, res.body);
    });

    test('missing or empty keyId, or a decrypt that is not a boolean → 400', async () => {
      const { keyId } = await w.createKey({ apiId });
      for (const [query, path] of [
        [{}, '/keyId'],
        [{ keyId: '' }, '/keyId'],
        [{ keyId, decrypt: 'maybe' }, '/decrypt'],
      ] as const) {
        const res = await w.get('/v1/keys.getKey', query);
        assert.equal(res.status, 400, res.body);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.deepEqual(
          res.json.error.errors.map((e: { path: string }) => e.path),
          [path],
        );
      }
    });

    test('read_key for this api or api.* is enough; for another api, or another action → 403 naming this api', async () => {
      const { keyId } = await w.createKey({ apiId });
      const otherApi = await w.createApi('other-get');
      for (const permissions of [[`api.${apiId}.read_key`], ['api.*.read_key'], ['*']]) {
        const res = await w.get('/v1/keys.getKey', { keyId }, await w.rootKey(permissions));
        assert.equal(res.status, 200, `${permissions}: ${res.body}`);
        assert.equal(res.json.id, keyId);
      }
      for (const permissions of [
        [`api.${otherApi}.read_key`],
        [`api.${apiId}.read_api`, `api.${apiId}.update_key`],
        ['api.*.decrypt_key'],
      ]) {
        const res = await w.get('/v1/keys.getKey', { keyId }, await w.rootKey(permissions));
        assert.equal(res.status, 403, `${permissions}: ${res.body}`);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.ok(res.json.error.detail.includes(`api.${apiId}.read_key`), res.json.error.detail);
      }
    });

    test('decrypt=true also needs decrypt_key (403 naming it); with it, a key that is not recoverable has no plaintext', async () => {
      const { key, keyId } = await w.createKey({ apiId });
      const readOnly = await w.rootKey([`api.${apiId}.read_key`]);
      const denied = await w.get('/v1/keys.getKey', { keyId, decrypt: true }, readOnly);
      assert.equal(denied.status, 403, denied.body);
      assert.equal(denied.json.error.code, 'INSUFFICIENT_PERMISSIONS');
      assert.ok(denied.json.error.detail.includes(`api.${apiId}.decrypt_key`), denied.json.error.detail);
      assert.ok(!denied.json.error.detail.includes('read_key'), denied.json.error.detail);
      const plain = await w.get('/v1/keys.getKey', { keyId, decrypt: false }, readOnly);
      assert.equal(plain.status, 200, plain.body);
      for (const permissions of [
        [`api.${apiId}.read_key`, `api.${apiId}.decrypt_key`],
        ['api.*.read_key', 'api.*.decrypt_key'],
      ]) {
        const res = await w.get('/v1/keys.getKey', { keyId, decrypt: true }, await w.rootKey(permissions));
        assert.equal(res.status, 200, res.body);
        assert.equal(res.json.id, keyId);
        assert.equal(res.json.plaintext, undefined);
        assert.ok(!JSON.stringify(res.json).includes(key));
      }
      const neither = await w.get('/v1/keys.getKey', { keyId, decrypt: true }, await w.rootKey(['api.*.create_key']));
      assert.equal(neither.status, 403, neither.body);
      for (const p of [`api.${apiId}.read_key`, `api.${apiId}.decrypt_key`])
        assert.ok(neither.json.error.detail.includes(p), neither.json.error.detail);
    });

    // The 403 names the API of the key the request is about; `request` creates it, so read it afterwards.
    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.read_key`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure');
        const { keyId } = await w.createKey({ apiId: securityApiId });
        return { method: 'GET', path: '/v1/keys.getKey', query: { keyId } };
      },
      foreign: async (w, other) => {
        const { keyId } = await w.createKey({ apiId: await w.createApi('foreign', other.root) }, other.root);
        return { method: 'GET', path: '/v1/keys.getKey', query: { keyId } };
      },
    });

    test("another workspace's key is 404 whatever the permissions, and the same as an unknown key", async () => {
      const other = await w.otherWorkspace();
      const { keyId } = await w.createKey({ apiId: await w.createApi('theirs', other.root) }, other.root);
      const theirs = (await keyRow(w, keyId)).api_id;
      for (const key of [w.root, await w.rootKey(['api.*.read_key', 'api.*.decrypt_key']), await w.rootKey([`api.${theirs}.read_key`])]) {
        const res = await w.get('/v1/keys.getKey', { keyId }, key);
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
      }
      const own = await w.get('/v1/keys.getKey', { keyId }, other.root);
      assert.equal(own.status, 200, own.body);
      assert.equal(own.json.workspaceId, other.workspaceId);
    });
  });
}
