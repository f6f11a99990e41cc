import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { count } from '../../../helpers/rows.ts';
import { roleIdOf } from '../../../helpers/rbac.ts';
import { securityTests } from '../../../helpers/security.ts';

for (const dialect of DIALECTS) {
  describe(`keys.setRoles (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
    });
    after(() => w.close());

    const createRole = async (name: string) => {
      const key = await w.createKey({ apiId, roles: [name] });
      const id = await roleIdOf(w, name);
      await w.post('/v1/keys.deleteKey', { keyId: key.keyId, permanent: true });
      return id;
    };
    const rolesOf = async (keyId: string) => (await w.get<{ roles: string[] }>('/v1/keys.getKey', { keyId })).json.roles;

    test('replaces the set: adds and removes in one call, by id and by name, response sorted by name', async () => {
      const admin = await createRole('admin');
      const billing = await createRole('billing');
      const { keyId } = await w.createKey({ apiId, roles: ['admin', 'viewer'] });
      const res = await w.post('/v1/keys.setRoles', { keyId, roles: [{ name: 'billing' }, { id: admin }] });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, [
        { id: admin, name: 'admin' },
        { id: billing, name: 'billing' },
      ]);
      assert.deepEqual(await rolesOf(keyId), ['admin', 'billing']);
      const events = (
        await w.store.db
          .selectFrom('audit_logs')
          .select(['event', 'diff'])
          .where('target_id', '=', keyId)
          .where('event', 'like', 'authorization.%')
          .orderBy('id')
          .execute()
      ).map((e) => `${e.event}:${JSON.parse(e.diff!).role}`);
      assert.ok(events.includes('authorization.disconnect_role_and_key:viewer'), events.join());
      assert.ok(events.includes('authorization.connect_role_and_key:billing'), events.join());
    });

    test('duplicates collapse; id wins over name; response equals the connected set', async () => {
      const reader = await createRole('reader');
      const { keyId } = await w.createKey({ apiId });
      const res = await w.post('/v1/keys.setRoles', {
        keyId,
        roles: [{ id: reader }, { name: 'reader' }, { id: reader, name: 'ignored-name' }],
      });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, [{ id: reader, name: 'reader' }]);
      const links = await w.store.db.selectFrom('keys_roles').select('role_id').where('key_id', '=', keyId).execute();
      assert.deepEqual(
        links.map((l) => l.role_id),
        [reader],
      );
    });

    test('create:true creates an unknown role when the root key holds rbac.*.create_role', async () => {
      const { keyId } = await w.createKey({ apiId });
      const key = await w.rootKey(['rbac.*.add_role_to_key', 'rbac.*.create_role', 'api.*.read_key']);
      const res = await w.post<Array<{ id: string; name: string }>>(
        '/v1/keys.setRoles',
        { keyId, roles: [{ name: 'brand-new', create: true }] },
        key,
      );
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.length, 1);
      assert.equal(res.json[0].name, 'brand-new');
      assert.match(res.json[0].id, /^role_/);
      const created = await w.store.db.selectFrom('audit_logs').select('event').where('target_id', '=', res.json[0].id).execute();
      assert.deepEqual(
        created.map((e) => e.event),
        ['role.create'],
      );
    });

    test('create:true without rbac.*.create_role → 403 naming it; key and roles unchanged', async () => {
      await createRole('keep-me');
      const { keyId } = await w.createKey({ apiId, roles: ['keep-me'] });
      const roles = await count(w.store.db, 'roles');
      const res = await w.post(
        '/v1/keys.setRoles',
        { keyId, roles: [{ name: 'not-yet', create: true }] },
        await w.rootKey(['rbac.*.add_role_to_key']),
      );
      assert.equal(res.status, 403, res.body);
      assert.match(res.json.error.detail, /rbac\.\*\.create_role/);
      assert.equal(await count(w.store.db, 'roles'), roles);
      assert.deepEqual(await rolesOf(keyId), ['keep-me']);
    });

    test('unknown id or unknown name without create → 404 naming each; roles unchanged', async () => {
      await createRole('stays');
      const { keyId } = await w.createKey({ apiId, roles: ['stays'] });
      const res = await w.post('/v1/keys.setRoles', { keyId, roles: [{ id: 'role_doesnotexist' }, { name: 'ghost' }, { name: 'stays' }] });
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/role-not-found');
      assert.match(res.json.error.detail, /role_doesnotexist/);
      assert.match(res.json.error.detail, /ghost/);
      assert.deepEqual(await rolesOf(keyId), ['stays']);
    });

    test('a role of another workspace is unknown here', async () => {
      const other = await w.otherWorkspace();
      const otherApi = await w.createApi('other-api', other.root);
      await w.createKey({ apiId: otherApi, roles: ['foreign-role'] }, other.root);
      const foreignRole = await w.store.db
        .selectFrom('roles')
        .select('id')
        .where('workspace_id', '=', other.workspaceId)
        .executeTakeFirstOrThrow();
      const { keyId } = await w.createKey({ apiId });
      const res = await w.post('/v1/keys.setRoles', { keyId, roles: [{ id: foreignRole.id }] });
      assert.equal(res.status, 404, res.body);
      assert.deepEqual(await rolesOf(keyId), []);
    });

    test('keyId "" / roles [] / item without id or name / unknown key → 400, 400, 400, 404', async () => {
      const { keyId } = await w.createKey({ apiId });
      const empty = await w.post('/v1/keys.setRoles', { keyId: '', roles: [] });
      assert.equal(empty.status, 400, empty.body);
      assert.deepEqual(empty.json.error.errors.map((e: { path: string }) => e.path).sort(), ['/keyId', '/roles']);
      const neither = await w.post('/v1/keys.setRoles', { keyId, roles: [{ name: 'x' }, { create: true }] });
      assert.equal(neither.status, 400, neither.body);
      assert.deepEqual(neither.json.error.errors, [{ path: '/roles/1', message: 'must have id or name' }]);
      const missingKey = await w.post('/v1/keys.setRoles', { keyId: 'key_nope', roles: [{ name: 'x', create: true }] });
      assert.equal(missingKey.status, 404, missingKey.body);
      assert.equal(missingKey.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
    });

    test('a deleted key is not found', async () => {
      const { keyId } = await w.createKey({ apiId });
      await w.post('/v1/keys.deleteKey', { keyId });
      const res = await w.post('/v1/keys.setRoles', { keyId, roles: [{ name: 'x', create: true }] });
      assert.equal(res.status, 404, res.body);
    });

    test('two concurrent setRoles on one key end with exactly one of the two sets', async () => {
      for (const n of ['a1', 'a2', 'b1', 'b2']) await createRole(n);
      for (let round = 0; round < 5; round++) {
        const { keyId } = await w.createKey({ apiId });
        const [ra, rb] = await Promise.all([
          w.post('/v1/keys.setRoles', { keyId, roles: [{ name: 'a1' }, { name: 'a2' }] }),
          w.post('/v1/keys.setRoles', { keyId, roles: [{ name: 'b1' }, { name: 'b2' }] }),
        ]);
        assert.equal(ra.status, 200, ra.body);
        assert.equal(rb.status, 200, rb.body);
        const roles = await rolesOf(keyId);
        assert.ok(JSON.stringify(roles) === '["a1","a2"]' || JSON.stringify(roles) === '["b1","b2"]', `mixed set ${roles.join()}`);
      }
    });

    securityTests(() => w, {
      permission: 'rbac.*.add_role_to_key',
      request: async () => ({
        method: 'POST',
        path: '/v1/keys.setRoles',
        body: { keyId: (await w.createKey({ apiId })).keyId, roles: [{ name: 'sec', create: true }] },
      }),
      foreign: async (_w, other) => {
        const otherApi = await w.createApi('foreign', other.root);
        const { keyId } = await w.createKey({ apiId: otherApi }, other.root);
        return { method: 'POST', path: '/v1/keys.setRoles', body: { keyId, roles: [{ name: 'sec', create: true }] } };
      },
    });
  });
}
