import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { snapshot } from '../../helpers/rows.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';

const TABLES = ['keys_roles', 'keys_permissions', 'permissions', 'roles', 'audit_logs'] as const;

type Permission = { id: string; name: string; slug: string; description?: string };
type Role = { id: string; name: string; description?: string; permissions?: Permission[] };

for (const dialect of DIALECTS) {
  describe(`v2 keys.add/remove/set Permissions/Roles (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('v2-links');
      const perm = await w.post('/v1/permissions.createPermission', { name: 'read-docs', slug: 'docs.read', description: 'Reading' });
      assert.equal(perm.status, 200, perm.body);
      assert.equal(
        (await w.post('/v1/permissions.createRole', { name: 'reader', description: 'Reads', permissions: ['docs.read'] })).status,
        200,
      );
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'empty' })).status, 200);
    });
    after(() => w.close());

    const newKey = async (body: Record<string, unknown> = {}) =>
      v2Data<{ keyId: string; key: string }>(await w.post('/v2/keys.createKey', { apiId, ...body })).keyId;
    const permissions = async (op: string, keyId: string, list: string[]) =>
      v2Data<Permission[]>(await w.post(`/v2/keys.${op}Permissions`, { keyId, permissions: list }));
    const roles = async (op: string, keyId: string, list: string[]) =>
      v2Data<Role[]>(await w.post(`/v2/keys.${op}Roles`, { keyId, roles: list }));
    const slugs = (ps: Permission[]) => ps.map((p) => p.slug);

    test('addPermissions answers every direct permission after the call; missing slugs are created', async () => {
      const keyId = await newKey({ permissions: ['a.one'] });
      const after = await permissions('add', keyId, ['docs.read', 'b.two', 'docs.read']);
      assert.deepEqual(slugs(after), ['a.one', 'b.two', 'docs.read']);
      const docs = after.find((p) => p.slug === 'docs.read');
      assert.deepEqual({ ...docs, id: undefined }, { id: undefined, name: 'read-docs', slug: 'docs.read', description: 'Reading' });
      assert.equal(after.find((p) => p.slug === 'b.two')?.description, undefined, 'no description: left out');
      assert.deepEqual(slugs(await permissions('add', keyId, ['a.one'])), ['a.one', 'b.two', 'docs.read'], 'already attached: skipped');
      const v1 = await w.get('/v1/keys.getKey', { keyId });
      assert.deepEqual(v1.json.permissions, ['a.one', 'b.two', 'docs.read']);
    });

    test('removePermissions answers what remains; attached-elsewhere slugs are ignored, unknown ones 404', async () => {
      const keyId = await newKey({ permissions: ['a.one', 'docs.read'] });
      assert.deepEqual(slugs(await permissions('remove', keyId, ['a.one', 'b.two'])), ['docs.read']);
      const before = await snapshot(w, TABLES);
      const res = await w.post('/v2/keys.removePermissions', { keyId, permissions: ['docs.read', 'never.made'] });
      assertV2Error(res, 404, 'unkey/data/permission_not_found');
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('setPermissions makes the direct set exactly the list ([] removes all); role permissions stay', async () => {
      const keyId = await newKey({ permissions: ['a.one', 'b.two'], roles: ['reader'] });
      assert.deepEqual(slugs(await permissions('set', keyId, ['b.two', 'c.three'])), ['b.two', 'c.three']);
      assert.deepEqual(await permissions('set', keyId, []), []);
      const data = v2Data(await w.post('/v2/keys.getKey', { keyId }));
      assert.deepEqual(data.permissions, ['docs.read'], 'through the role');
    });

    test('addRoles answers every role of the key with its permissions; unknown names 404 and change nothing', async () => {
      const keyId = await newKey();
      const after = await roles('add', keyId, ['reader', 'empty']);
      assert.deepEqual(
        after.map((r) => ({ ...r, id: undefined, permissions: r.permissions?.map((p) => p.slug) })),
        [
          { id: undefined, name: 'empty', permissions: undefined },
          { id: undefined, name: 'reader', description: 'Reads', permissions: ['docs.read'] },
        ],
      );
      const before = await snapshot(w, TABLES);
      assertV2Error(await w.post('/v2/keys.addRoles', { keyId, roles: ['ghost'] }), 404, 'unkey/data/role_not_found');
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('removeRoles answers the remaining roles; setRoles makes them exactly the list', async () => {
      const keyId = await newKey({ roles: ['reader', 'empty'] });
      assert.deepEqual(
        (await roles('remove', keyId, ['empty'])).map((r) => r.name),
        ['reader'],
      );
      assertV2Error(await w.post('/v2/keys.removeRoles', { keyId, roles: ['ghost'] }), 404, 'unkey/data/role_not_found');
      assert.deepEqual(
        (await roles('set', keyId, ['empty'])).map((r) => r.name),
        ['empty'],
      );
      assert.deepEqual(await roles('set', keyId, []), []);
      const before = await snapshot(w, TABLES);
      assertV2Error(await w.post('/v2/keys.setRoles', { keyId, roles: ['reader', 'ghost'] }), 404, 'unkey/data/role_not_found');
      assert.deepEqual(await snapshot(w, TABLES), before);
      assert.deepEqual(v2Data(await w.post('/v2/keys.getKey', { keyId })).roles, undefined);
    });

    test('a change reaches verification at once (the key leaves every cache)', async () => {
      const { keyId, key } = v2Data<{ keyId: string; key: string }>(await w.post('/v2/keys.createKey', { apiId }));
      const verify = async () => (await w.post('/v1/keys.verifyKey', { key, authorization: { permissions: 'docs.read' } }, null)).json.code;
      assert.equal(await verify(), 'INSUFFICIENT_PERMISSIONS');
      await roles('add', keyId, ['reader']);
      assert.equal(await verify(), 'VALID');
      await roles('remove', keyId, ['reader']);
      assert.equal(await verify(), 'INSUFFICIENT_PERMISSIONS');
    });

    test('body problems: empty lists for add/remove, bad slugs, unknown key', async () => {
      const keyId = await newKey();
      const before = await snapshot(w, TABLES);
      for (const [path, body, locations] of [
        ['/v2/keys.addPermissions', { keyId, permissions: [] }, ['/permissions']],
        ['/v2/keys.removePermissions', { keyId, permissions: ['has space'] }, ['/permissions/0']],
        ['/v2/keys.addRoles', { keyId, roles: [] }, ['/roles']],
        ['/v2/keys.setRoles', { keyId }, ['/roles']],
        ['/v2/keys.setPermissions', { keyId: 'k', permissions: [] }, ['/keyId']],
      ] as const) {
        const res = await w.post(path, body);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), locations, path);
      }
      for (const path of ['/v2/keys.setPermissions', '/v2/keys.setRoles']) {
        const member = path.endsWith('Roles') ? 'roles' : 'permissions';
        assertV2Error(await w.post(path, { keyId: 'key_missing', [member]: [] }), 404, 'unkey/data/key_not_found');
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('creating a missing slug needs rbac.*.create_permission (403 naming it, nothing written)', async () => {
      const keyId = await newKey();
      const linker = await w.rootKey(['rbac.*.add_permission_to_key']);
      const before = await snapshot(w, TABLES);
      const res = await w.post('/v2/keys.addPermissions', { keyId, permissions: ['not.yet'] }, linker);
      assertV2Error(res, 403, 'unkey/authorization/insufficient_permissions');
      assert.match(res.json.error.detail, /rbac\.\*\.create_permission/);
      assert.deepEqual(await snapshot(w, TABLES), before);
      assert.deepEqual(
        slugs(v2Data<Permission[]>(await w.post('/v2/keys.addPermissions', { keyId, permissions: ['docs.read'] }, linker))),
        ['docs.read'],
      );
    });

    const foreignKey = async (w: World, other: { root: string }) =>
      (await w.createKey({ apiId: await w.createApi('theirs', other.root) }, other.root)).keyId;
    for (const [op, member, permission, item] of [
      ['addPermissions', 'permissions', 'rbac.*.add_permission_to_key', 'docs.read'],
      ['removePermissions', 'permissions', 'rbac.*.remove_permission_from_key', 'docs.read'],
      ['setPermissions', 'permissions', 'rbac.*.remove_permission_from_key', 'docs.read'],
      ['addRoles', 'roles', 'rbac.*.add_role_to_key', 'reader'],
      ['removeRoles', 'roles', 'rbac.*.remove_role_from_key', 'reader'],
      ['setRoles', 'roles', 'rbac.*.add_role_to_key', 'reader'],
    ] as const) {
      describe(`security: keys.${op}`, () =>
        v2SecurityTests(() => w, {
          path: `/v2/keys.${op}`,
          body: async () => ({ keyId: await newKey(), [member]: [item] }),
          permission,
          foreign: {
            body: async (w, other) => ({ keyId: await foreignKey(w, other), [member]: [item] }),
            type: 'unkey/data/key_not_found',
          },
        }));
    }
  });
}
