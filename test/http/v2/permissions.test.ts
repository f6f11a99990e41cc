import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { snapshot } from '../../helpers/rows.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';

interface Permission {
  id: string;
  name: string;
  slug: string;
  description?: string;
}
interface Role {
  id: string;
  name: string;
  description?: string;
  permissions?: Permission[];
}
interface Page<T> {
  data: T[];
  pagination: { cursor?: string; hasMore: boolean };
}

const TABLES = ['permissions', 'roles', 'roles_permissions', 'audit_logs'] as const;
const unique = () => Math.random().toString(36).slice(2, 10);

/** Every item of a v2 list, page by page (`limit` at a time), checking the pagination members on the way. */
async function listAll<T extends { id: string }>(w: World, path: string, body: Record<string, unknown>): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await w.post<Page<T>>(path, { ...body, ...(cursor ? { cursor } : {}) });
    assert.equal(res.status, 200, res.body);
    all.push(...res.json.data);
    if (!res.json.pagination.hasMore) {
      assert.deepEqual(res.json.pagination, { hasMore: false });
      return all;
    }
    cursor = res.json.pagination.cursor;
  }
}

for (const dialect of DIALECTS) {
  describe(`v2 permissions.* (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const createPermission = async (body: Record<string, unknown>) =>
      v2Data<{ permissionId: string }>(await w.post('/v2/permissions.createPermission', body)).permissionId;
    const createRole = async (body: Record<string, unknown>) =>
      v2Data<{ roleId: string }>(await w.post('/v2/permissions.createRole', body)).roleId;

    test('createPermission, then getPermission by id and by slug; v1 sees the same permission', async () => {
      const permissionId = await createPermission({ name: 'Read documents', slug: 'documents.read', description: 'Reading' });
      assert.match(permissionId, /^perm_/);
      const expected = { id: permissionId, name: 'Read documents', slug: 'documents.read', description: 'Reading' };
      assert.deepEqual(v2Data(await w.post('/v2/permissions.getPermission', { permission: permissionId })), expected);
      assert.deepEqual(v2Data(await w.post('/v2/permissions.getPermission', { permission: 'documents.read' })), expected);
      assert.deepEqual((await w.get('/v1/permissions.getPermission', { permissionId })).json, expected);
    });

    test('a permission without (or with an empty) description shows none', async () => {
      for (const body of [
        { name: 'n1', slug: `s1.${unique()}` },
        { name: 'n2', slug: `s2.${unique()}`, description: '' },
      ]) {
        const permissionId = await createPermission(body);
        const got = await w.post('/v2/permissions.getPermission', { permission: permissionId });
        assert.deepEqual(v2Data(got), { id: permissionId, name: body.name, slug: body.slug });
        assert.ok(!got.body.includes('null'));
      }
    });

    test('createPermission: a duplicate slug → 409, bad members → 400 locating them; nothing written', async () => {
      await createPermission({ name: 'dup', slug: 'dup.slug' });
      const before = await snapshot(w, TABLES);
      assertV2Error(
        await w.post('/v2/permissions.createPermission', { name: 'other', slug: 'dup.slug' }),
        409,
        'unkey/data/resource_already_exists',
      );
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{ name: 'no slug' }, ['/slug']],
        [{ slug: 'no.name' }, ['/name']],
        [{ name: 'x', slug: 'has space' }, ['/slug']],
        [{ name: 'x', slug: 's'.repeat(129) }, ['/slug']],
        [{ name: '', slug: 'ok' }, ['/name']],
        [{ name: 'x', slug: 'ok', description: 'd'.repeat(513) }, ['/description']],
      ];
      for (const [body, locations] of cases) {
        const res = await w.post('/v2/permissions.createPermission', body);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), locations, JSON.stringify(body));
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('getPermission / deletePermission of an unknown permission → 404 permission_not_found', async () => {
      for (const path of ['/v2/permissions.getPermission', '/v2/permissions.deletePermission']) {
        assertV2Error(await w.post(path, { permission: 'perm_missing' }), 404, 'unkey/data/permission_not_found');
      }
    });

    test('listPermissions: every permission by id, page by page; search in id, name, slug and description', async () => {
      const w2 = await world(dialect);
      try {
        const ids: string[] = [];
        for (const [name, slug, description] of [
          ['Read', 'docs.read', 'Reading DOCS'],
          ['Write', 'docs.write', undefined],
          ['Billing', 'billing.view', 'the money page'],
        ] as const) {
          const res = await w2.post<{ data: { permissionId: string } }>('/v2/permissions.createPermission', { name, slug, description });
          ids.push(res.json.data.permissionId);
        }
        ids.sort();
        const all = await listAll<Permission>(w2, '/v2/permissions.listPermissions', { limit: 2 });
        assert.deepEqual(
          all.map((p) => p.id),
          ids,
        );
        const search = async (text: string) =>
          (await listAll<Permission>(w2, '/v2/permissions.listPermissions', { search: text })).map((p) => p.slug).sort();
        assert.deepEqual(await search('DOCS.'), ['docs.read', 'docs.write']);
        assert.deepEqual(await search('money pa'), ['billing.view']);
        assert.deepEqual(await search('reading docs'), ['docs.read']);
        assert.deepEqual(await search(ids[0]), [all[0].slug]);
        assert.deepEqual(await search('%'), []);
        const bad = await w2.post('/v2/permissions.listPermissions', { limit: 0 });
        assertV2Error(bad, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(bad), ['/limit']);
      } finally {
        await w2.close();
      }
    });

    test('deletePermission by slug: data {}; the roles holding it lose it; then 404', async () => {
      const permissionId = await createPermission({ name: 'temp', slug: 'temp.perm' });
      const roleId = await createRole({ name: `holder-${unique()}`, permissions: ['temp.perm'] });
      assert.deepEqual(v2Data(await w.post('/v2/permissions.deletePermission', { permission: 'temp.perm' })), {});
      assertV2Error(await w.post('/v2/permissions.getPermission', { permission: permissionId }), 404, 'unkey/data/permission_not_found');
      assert.equal(v2Data<Role>(await w.post('/v2/permissions.getRole', { role: roleId })).permissions, undefined);
    });

    test('createRole with permissions (existing and new), then getRole by id and by name; v1 sees it', async () => {
      await createPermission({ name: 'Existing', slug: 'role.b' });
      const roleId = await createRole({ name: 'editor', description: 'Edits', permissions: ['role.b', 'role.a'] });
      assert.match(roleId, /^role_/);
      const role = v2Data<Role>(await w.post('/v2/permissions.getRole', { role: roleId }));
      assert.deepEqual(v2Data(await w.post('/v2/permissions.getRole', { role: 'editor' })), role);
      assert.equal(role.name, 'editor');
      assert.equal(role.description, 'Edits');
      assert.deepEqual(
        role.permissions?.map((p) => [p.name, p.slug]),
        [
          ['role.a', 'role.a'],
          ['Existing', 'role.b'],
        ],
      );
      const v1 = await w.get<{ permissions: Permission[] }>('/v1/permissions.getRole', { roleId });
      assert.deepEqual(
        v1.json.permissions.map((p) => p.id),
        role.permissions?.map((p) => p.id),
      );
      const bare = await createRole({ name: 'bare' });
      assert.deepEqual(v2Data(await w.post('/v2/permissions.getRole', { role: 'bare' })), { id: bare, name: 'bare' });
    });

    test('createRole: a duplicate name → 409; new slugs without rbac.*.create_permission → 403; bad members → 400; nothing written', async () => {
      await createRole({ name: 'taken' });
      const roleOnly = await w.rootKey(['rbac.*.create_role']);
      const before = await snapshot(w, TABLES);
      assertV2Error(await w.post('/v2/permissions.createRole', { name: 'taken' }), 409, 'unkey/data/resource_already_exists');
      const denied = await w.post('/v2/permissions.createRole', { name: `r-${unique()}`, permissions: ['brand.new'] }, roleOnly);
      assertV2Error(denied, 403, 'unkey/authorization/insufficient_permissions');
      assert.match(denied.json.error.detail, /rbac\.\*\.create_permission/);
      for (const [body, locations] of [
        [{}, ['/name']],
        [{ name: 'n'.repeat(129) }, ['/name']],
        [{ name: 'ok', permissions: ['bad slug'] }, ['/permissions/0']],
        [{ name: 'ok', permissions: 'x' }, ['/permissions']],
      ] as const) {
        const res = await w.post('/v2/permissions.createRole', body);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), locations, JSON.stringify(body));
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('getRole / deleteRole of an unknown role → 404 role_not_found', async () => {
      for (const path of ['/v2/permissions.getRole', '/v2/permissions.deleteRole']) {
        assertV2Error(await w.post(path, { role: 'nobody' }), 404, 'unkey/data/role_not_found');
      }
    });

    test('listRoles: every role with its permissions, page by page; search in id, name and description', async () => {
      const w2 = await world(dialect);
      try {
        const post = async (body: Record<string, unknown>) =>
          (await w2.post<{ data: { roleId: string } }>('/v2/permissions.createRole', body)).json.data.roleId;
        const ids = [
          await post({ name: 'admin.role', permissions: ['all.things'] }),
          await post({ name: 'viewer.role', description: 'Looks only' }),
          await post({ name: 'auditor.role' }),
        ].sort();
        const all = await listAll<Role>(w2, '/v2/permissions.listRoles', { limit: 1 });
        assert.deepEqual(
          all.map((r) => r.id),
          ids,
        );
        assert.deepEqual(
          all.find((r) => r.name === 'admin.role')?.permissions?.map((p) => p.slug),
          ['all.things'],
        );
        assert.equal(all.find((r) => r.name === 'auditor.role')?.permissions, undefined);
        const search = async (text: string) =>
          (await listAll<Role>(w2, '/v2/permissions.listRoles', { search: text })).map((r) => r.name).sort();
        assert.deepEqual(await search('LOOKS'), ['viewer.role']);
        assert.deepEqual(await search('n.ro'), ['admin.role']);
        assert.deepEqual(await search('.role'), ['admin.role', 'auditor.role', 'viewer.role']);
      } finally {
        await w2.close();
      }
    });

    test('deleteRole by name: data {}; keys holding it lose it; then 404', async () => {
      const roleId = await createRole({ name: 'short-lived', permissions: ['sl.perm'] });
      const apiId = await w.createApi('roles');
      const { keyId } = await w.createKey({ apiId, roles: ['short-lived'] });
      assert.deepEqual(v2Data(await w.post('/v2/permissions.deleteRole', { role: 'short-lived' })), {});
      assertV2Error(await w.post('/v2/permissions.getRole', { role: roleId }), 404, 'unkey/data/role_not_found');
      const links = await w.store.db.selectFrom('keys_roles').select('role_id').where('key_id', '=', keyId).execute();
      assert.deepEqual(links, []);
    });

    test('setRolePermissions: the role holds exactly the listed slugs (missing ones created); answer sorted by slug; [] clears', async () => {
      await createPermission({ name: 'Zed', slug: 'set.z' });
      const roleId = await createRole({ name: `setter-${unique()}`, permissions: ['set.old'] });
      const set = v2Data<Permission[]>(
        await w.post('/v2/permissions.setRolePermissions', { roleId, permissions: ['set.z', 'set.new', 'set.z'] }),
      );
      assert.deepEqual(
        set.map((p) => [p.slug, p.name]),
        [
          ['set.new', 'set.new'],
          ['set.z', 'Zed'],
        ],
      );
      for (const p of set) assert.match(p.id, /^perm_/);
      const role = v2Data<Role>(await w.post('/v2/permissions.getRole', { role: roleId }));
      assert.deepEqual(role.permissions, set);
      assert.deepEqual(v2Data(await w.post('/v2/permissions.setRolePermissions', { roleId, permissions: [] })), []);
      assert.equal(v2Data<Role>(await w.post('/v2/permissions.getRole', { role: roleId })).permissions, undefined);
    });

    test('setRolePermissions: an unknown role (or a role name) → 404; bad members → 400; 403 to create; nothing written', async () => {
      const name = `named-${unique()}`;
      const roleId = await createRole({ name, permissions: ['kept.perm'] });
      const key = await w.rootKey(['rbac.*.create_role']);
      const before = await snapshot(w, TABLES);
      for (const id of ['role_missing', name]) {
        const res = await w.post('/v2/permissions.setRolePermissions', { roleId: id, permissions: ['fresh.one'] });
        assertV2Error(res, 404, 'unkey/data/role_not_found');
      }
      for (const [body, locations] of [
        [{ roleId }, ['/permissions']],
        [{ permissions: [] }, ['/roleId']],
        [{ roleId: 'r', permissions: [] }, ['/roleId']],
        [{ roleId, permissions: ['ok', 'not ok'] }, ['/permissions/1']],
      ] as const) {
        const res = await w.post('/v2/permissions.setRolePermissions', body);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), locations, JSON.stringify(body));
      }
      const denied = await w.post('/v2/permissions.setRolePermissions', { roleId, permissions: ['never.created'] }, key);
      assertV2Error(denied, 403, 'unkey/authorization/insufficient_permissions');
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    const newRole = async (w: World, key = w.root) => {
      const res = await w.post<{ data: { roleId: string } }>('/v2/permissions.createRole', { name: `sec-${unique()}` }, key);
      return res.json.data.roleId;
    };
    const newPermission = async (w: World, key = w.root) => {
      const res = await w.post<{ data: { permissionId: string } }>(
        '/v2/permissions.createPermission',
        { name: 'sec', slug: `sec.${unique()}` },
        key,
      );
      return res.json.data.permissionId;
    };
    const cases = [
      { op: 'createPermission', permission: 'rbac.*.create_permission', body: async () => ({ name: 'n', slug: `sec.${unique()}` }) },
      {
        op: 'getPermission',
        permission: 'rbac.*.read_permission',
        body: async (w: World) => ({ permission: await newPermission(w) }),
        foreign: {
          body: async (w: World, o: { root: string }) => ({ permission: await newPermission(w, o.root) }),
          type: 'unkey/data/permission_not_found',
        },
      },
      { op: 'listPermissions', permission: 'rbac.*.read_permission', body: async () => ({}) },
      {
        op: 'deletePermission',
        permission: 'rbac.*.delete_permission',
        body: async (w: World) => ({ permission: await newPermission(w) }),
        foreign: {
          body: async (w: World, o: { root: string }) => ({ permission: await newPermission(w, o.root) }),
          type: 'unkey/data/permission_not_found',
        },
      },
      { op: 'createRole', permission: 'rbac.*.create_role', body: async () => ({ name: `sec-${unique()}` }) },
      {
        op: 'getRole',
        permission: 'rbac.*.read_role',
        body: async (w: World) => ({ role: await newRole(w) }),
        foreign: { body: async (w: World, o: { root: string }) => ({ role: await newRole(w, o.root) }), type: 'unkey/data/role_not_found' },
      },
      { op: 'listRoles', permission: 'rbac.*.read_role', body: async () => ({}) },
      {
        op: 'deleteRole',
        permission: 'rbac.*.delete_role',
        body: async (w: World) => ({ role: await newRole(w) }),
        foreign: { body: async (w: World, o: { root: string }) => ({ role: await newRole(w, o.root) }), type: 'unkey/data/role_not_found' },
      },
      {
        op: 'setRolePermissions',
        permission: 'rbac.*.create_role',
        body: async (w: World) => ({ roleId: await newRole(w), permissions: [] }),
        foreign: {
          body: async (w: World, o: { root: string }) => ({ roleId: await newRole(w, o.root), permissions: [] }),
          type: 'unkey/data/role_not_found',
        },
      },
    ];
    for (const c of cases) {
      describe(`security: permissions.${c.op}`, () =>
        v2SecurityTests(() => w, { path: `/v2/permissions.${c.op}`, body: c.body, permission: c.permission, foreign: c.foreign }));
    }
  });
}
