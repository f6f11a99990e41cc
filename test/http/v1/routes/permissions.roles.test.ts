import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { errorPaths } from '../../../helpers/errors.ts';
import { count, snapshot } from '../../../helpers/rows.ts';
import { auditEvents, auditOf, createPermission, createRole, keyView, permissionIdOf, RBAC_TABLES, unique } from '../../../helpers/rbac.ts';

/** A role as permissions.getRole shows it, with the members these tests compute with. */
type RoleView = Loose<{ permissions: Array<{ slug: string }> }>;

for (const dialect of DIALECTS) {
  describe(`permissions.createRole / getRole / listRoles / deleteRole / setRolePermissions (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
    });
    after(() => w.close());

    test('createRole: attaches existing permissions and creates missing ones; getRole returns exactly the role; audited', async () => {
      const existing = unique('docs.read');
      const existingId = await createPermission(w, existing, { description: 'read' });
      const missing = unique('docs.write');
      const name = unique('editor');
      const res = await w.post<{ roleId: string }>('/v1/permissions.createRole', {
        name,
        description: 'Edits documents',
        permissions: [missing, existing, existing],
      });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(Object.keys(res.json), ['roleId']);
      assert.match(res.json.roleId, /^role_[1-9A-HJ-NP-Za-km-z]{22}$/);
      const missingId = await permissionIdOf(w, missing);
      assert.match(missingId, /^perm_/);
      const got = await w.get('/v1/permissions.getRole', { roleId: res.json.roleId });
      assert.equal(got.status, 200, got.body);
      assert.deepEqual(got.json, {
        id: res.json.roleId,
        name,
        description: 'Edits documents',
        permissions: [
          { id: existingId, name: existing, slug: existing, description: 'read' },
          { id: missingId, name: missing, slug: missing },
        ],
      });
      assert.deepEqual(
        (await auditEvents(w, res.json.roleId)).sort(),
        [
          `authorization.connect_permission_and_role:${existing}`,
          `authorization.connect_permission_and_role:${missing}`,
          'role.create',
        ].sort(),
      );
      assert.deepEqual(await auditEvents(w, missingId), ['permission.create']);
    });

    test('createRole: no permissions, no description → a bare role', async () => {
      const name = unique('bare');
      const roleId = await createRole(w, name);
      assert.deepEqual((await w.get('/v1/permissions.getRole', { roleId })).json, { id: roleId, name, permissions: [] });
    });

    test('createRole: a missing permission without rbac.*.create_permission → 403 naming it; no role, no permission written', async () => {
      const existing = unique('exists');
      await createPermission(w, existing);
      const key = await w.rootKey(['rbac.*.create_role']);
      const before = await snapshot(w, RBAC_TABLES);
      const res = await w.post('/v1/permissions.createRole', { name: unique('blocked'), permissions: [existing, unique('absent')] }, key);
      assert.equal(res.status, 403, res.body);
      assert.equal(res.json.error.detail, 'Missing permission: rbac.*.create_permission');
      assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
      // Existing permissions need no more than create_role.
      const ok = await w.post('/v1/permissions.createRole', { name: unique('allowed'), permissions: [existing] }, key);
      assert.equal(ok.status, 200, ok.body);
    });

    test('createRole: every invalid member is reported; nothing written', async () => {
      const before = await snapshot(w, RBAC_TABLES);
      const res = await w.post('/v1/permissions.createRole', { name: '', description: 'x'.repeat(1025), permissions: ['ok', ''] });
      assert.deepEqual(errorPaths(res), ['/description', '/name', '/permissions/1']);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.createRole', { name: 'n'.repeat(513) })), ['/name']);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.createRole', { description: 'no name' })), ['/name']);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.createRole', { name: 'x', permissions: 'p' })), ['/permissions']);
      assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
      // Role names are free text up to 512 characters.
      const roleId = await createRole(w, `Billing admins (EU) ${'z'.repeat(492)}`);
      assert.equal((await w.get('/v1/permissions.getRole', { roleId })).json.name.length, 512);
    });

    test('createRole: an existing name → 409 with the exact message; concurrent creators → one 200, the rest 409', async () => {
      const name = unique('admin');
      await createRole(w, name);
      const before = await snapshot(w, RBAC_TABLES);
      const again = await w.post('/v1/permissions.createRole', { name, permissions: [unique('would-be-created')] });
      assert.equal(again.status, 409, again.body);
      assert.equal(again.json.error.type, 'https://keyhold.dev/errors/data/conflict');
      assert.equal(again.json.error.detail, `Role with name "${name}" already exists in this workspace`);
      assert.deepEqual(await snapshot(w, RBAC_TABLES), before);

      const raced = unique('raced');
      const results = await Promise.all(Array.from({ length: 6 }, () => w.post('/v1/permissions.createRole', { name: raced })));
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409], results.map((r) => r.body).join('\n'));
      assert.equal((await w.store.db.selectFrom('roles').select('id').where('name', '=', raced).execute()).length, 1);
    });

    test('createRole: the same name may exist in another workspace', async () => {
      const name = unique('everywhere');
      const other = await w.otherWorkspace();
      assert.notEqual(await createRole(w, name, undefined, other.root), await createRole(w, name));
    });

    test("getRole: unknown and another workspace's role → 404; empty id → 400", async () => {
      const unknown = await w.get('/v1/permissions.getRole', { roleId: 'role_doesnotexist' });
      assert.equal(unknown.status, 404, unknown.body);
      assert.equal(unknown.json.error.type, 'https://keyhold.dev/errors/data/role-not-found');
      assert.equal(unknown.json.error.detail, 'role role_doesnotexist not found');
      const other = await w.otherWorkspace();
      const foreign = await createRole(w, unique('theirs'), undefined, other.root);
      assert.equal((await w.get('/v1/permissions.getRole', { roleId: foreign })).status, 404);
      assert.deepEqual(errorPaths(await w.get('/v1/permissions.getRole', { roleId: '' })), ['/roleId']);
    });

    test("listRoles: a bare array of the workspace's roles in id order with their permissions, unpaginated; others invisible", async () => {
      const other = await w.otherWorkspace();
      const key = other.root;
      const created: Array<{ id: string; name: string; permissions: Array<{ id: string; name: string; slug: string }> }> = [];
      for (let i = 0; i < 3; i++)
        created.push({ id: await createRole(w, `r${i}`, i === 1 ? ['p.b', 'p.a'] : undefined, key), name: `r${i}`, permissions: [] });
      created[1].permissions = await Promise.all(
        ['p.a', 'p.b'].map(async (slug) => ({
          id: (
            await w.store.db
              .selectFrom('permissions')
              .select('id')
              .where('slug', '=', slug)
              .where('workspace_id', '=', other.workspaceId)
              .executeTakeFirstOrThrow()
          ).id,
          name: slug,
          slug,
        })),
      );
      // Ids are time-sortable only to the millisecond: the order is the ids' order.
      const inOrder = [...created].sort((a, b) => (a.id < b.id ? -1 : 1));
      const all = await w.get('/v1/permissions.listRoles', {}, key);
      assert.equal(all.status, 200, all.body);
      assert.deepEqual(all.json, inOrder);
      // The paging parameters of earlier releases are not parameters any more: ignored (even invalid ones), the whole list answers.
      for (const query of [{ limit: 2 }, { limit: 2, cursor: inOrder[0].id }, { limit: 0 }, { limit: 101 }] as Array<
        Record<string, string | number>
      >)
        assert.deepEqual((await w.get('/v1/permissions.listRoles', query, key)).json, inOrder, JSON.stringify(query));
      const mine = await w.get<Array<{ id: string }>>('/v1/permissions.listRoles', {});
      assert.ok(Array.isArray(mine.json), mine.body);
      assert.ok(!mine.json.some((r) => created.some((c) => c.id === r.id)));
    });

    test('deleteRole: hard delete; keys lose the role and what it granted; audited; a second delete → 404', async () => {
      const slug = unique('granted');
      const name = unique('doomed-role');
      const roleId = await createRole(w, name, [slug]);
      const { keyId } = await w.createKey({ apiId, roles: [name] });
      assert.deepEqual(await keyView(w, keyId), { roles: [name], permissions: [slug] });

      const res = await w.post('/v1/permissions.deleteRole', { roleId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});
      assert.deepEqual(await keyView(w, keyId), { roles: [], permissions: [] });
      assert.equal((await w.get('/v1/permissions.getRole', { roleId })).status, 404);
      assert.deepEqual(await w.store.db.selectFrom('keys_roles').select('key_id').where('role_id', '=', roleId).execute(), []);
      assert.deepEqual(
        await w.store.db.selectFrom('roles_permissions').select('permission_id').where('role_id', '=', roleId).execute(),
        [],
      );
      // The permission itself stays.
      assert.equal((await w.get('/v1/permissions.getPermission', { permissionId: await permissionIdOf(w, slug) })).status, 200);
      const audit = await w.store.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('target_id', '=', roleId)
        .where('event', '=', 'role.delete')
        .execute();
      assert.equal(audit.length, 1);
      assert.deepEqual(JSON.parse(audit[0].diff!), { name, disconnectedKeys: 1 });

      const again = await w.post('/v1/permissions.deleteRole', { roleId });
      assert.equal(again.status, 404, again.body);
      assert.equal(again.json.error.type, 'https://keyhold.dev/errors/data/role-not-found');
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.deleteRole', { roleId: '' })), ['/roleId']);
    });

    test('setRolePermissions: replaces the set by id, slug and deprecated name, creating on request; keys see it; audited', async () => {
      const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((x) => unique(`srp.${x}`));
      const name = unique('srp-role');
      const roleId = await createRole(w, name, [a, b]);
      const cId = await createPermission(w, c);
      const { keyId } = await w.createKey({ apiId, roles: [name] });
      assert.deepEqual((await keyView(w, keyId)).permissions, [a, b]);

      const res = await w.post('/v1/permissions.setRolePermissions', {
        roleId,
        permissions: [{ slug: b }, { id: cId }, { name: d, create: true }, { slug: b, name: 'ignored' }],
      });
      assert.equal(res.status, 200, res.body);
      const [bId, dId] = [await permissionIdOf(w, b), await permissionIdOf(w, d)];
      assert.deepEqual(res.json, [
        { id: bId, name: b },
        { id: cId, name: c },
        { id: dId, name: d },
      ]);
      assert.deepEqual(
        (await w.get<RoleView>('/v1/permissions.getRole', { roleId })).json.permissions.map((p: { slug: string }) => p.slug),
        [b, c, d],
      );
      assert.deepEqual((await keyView(w, keyId)).permissions, [b, c, d]);

      assert.deepEqual(await auditOf(w, res, roleId), [
        `authorization.connect_permission_and_role:${c}`,
        `authorization.connect_permission_and_role:${d}`,
        `authorization.disconnect_permission_and_role:${a}`,
        'role.update',
      ]);
      const update = await w.store.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('target_id', '=', roleId)
        .where('event', '=', 'role.update')
        .execute();
      assert.equal(update.length, 1);
      assert.deepEqual(JSON.parse(update[0].diff!), { addedPermissions: [c, d], removedPermissions: [a] });
      assert.deepEqual(await auditEvents(w, dId), ['permission.create']);

      // The same set again changes nothing and records nothing.
      const audits = await count(w.store.db, 'audit_logs');
      const same = await w.post('/v1/permissions.setRolePermissions', { roleId, permissions: [{ id: dId }, { slug: c }, { slug: b }] });
      assert.equal(same.status, 200, same.body);
      assert.deepEqual(same.json, res.json);
      assert.equal(await count(w.store.db, 'audit_logs'), audits);
    });

    test('setRolePermissions: an empty list clears the role', async () => {
      const slug = unique('cleared');
      const name = unique('clear-me');
      const roleId = await createRole(w, name, [slug]);
      const { keyId } = await w.createKey({ apiId, roles: [name] });
      const res = await w.post('/v1/permissions.setRolePermissions', { roleId, permissions: [] });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, []);
      assert.deepEqual(await keyView(w, keyId), { roles: [name], permissions: [] });
    });

    test('setRolePermissions: unknown ids and slugs → 404 naming every one; the role is unchanged (atomic)', async () => {
      const [keep, extra] = [unique('keep'), unique('extra')];
      await createPermission(w, extra);
      const roleId = await createRole(w, unique('atomic-role'), [keep]);
      const before = await snapshot(w, RBAC_TABLES);
      const res = await w.post('/v1/permissions.setRolePermissions', {
        roleId,
        permissions: [
          { slug: extra },
          { id: 'perm_nope' },
          { slug: 'ghost.one' },
          { name: 'ghost.two' },
          { slug: unique('new'), create: true },
        ],
      });
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/permission-not-found');
      assert.equal(res.json.error.detail, 'permission ids not found: perm_nope; permissions not found: ghost.one, ghost.two');
      assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
      assert.deepEqual(
        (await w.get<RoleView>('/v1/permissions.getRole', { roleId })).json.permissions.map((p: { slug: string }) => p.slug),
        [keep],
      );
    });

    test('setRolePermissions: create without rbac.*.create_permission → 403 naming it; unchanged. Existing ones need only create_role', async () => {
      const [keep, other] = [unique('keep'), unique('other')];
      await createPermission(w, other);
      const roleId = await createRole(w, unique('guarded-role'), [keep]);
      const key = await w.rootKey(['rbac.*.create_role']);
      const before = await snapshot(w, RBAC_TABLES);
      const res = await w.post(
        '/v1/permissions.setRolePermissions',
        { roleId, permissions: [{ slug: other }, { slug: unique('brand-new'), create: true }] },
        key,
      );
      assert.equal(res.status, 403, res.body);
      assert.equal(res.json.error.detail, 'Missing permission: rbac.*.create_permission');
      assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
      const ok = await w.post<Array<{ id: string; name: string }>>(
        '/v1/permissions.setRolePermissions',
        { roleId, permissions: [{ slug: other }] },
        key,
      );
      assert.equal(ok.status, 200, ok.body);
      assert.deepEqual(
        ok.json.map((p: { name: string }) => p.name),
        [other],
      );
    });

    test('setRolePermissions: invalid items → 400 listing each; unknown or foreign role → 404; foreign permission id → 404', async () => {
      const roleId = await createRole(w, unique('validation-role'));
      const neither = await w.post('/v1/permissions.setRolePermissions', { roleId, permissions: [{ slug: 'x' }, { create: true }, {}] });
      assert.equal(neither.status, 400, neither.body);
      assert.deepEqual(neither.json.error.errors, [
        { path: '/permissions/1', message: 'must have id, slug or name' },
        { path: '/permissions/2', message: 'must have id, slug or name' },
      ]);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.setRolePermissions', { roleId: '', permissions: [{ slug: '' }] })), [
        '/permissions/0/slug',
        '/roleId',
      ]);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.setRolePermissions', { roleId })), ['/permissions']);

      const unknown = await w.post('/v1/permissions.setRolePermissions', { roleId: 'role_nope', permissions: [] });
      assert.equal(unknown.status, 404, unknown.body);
      assert.equal(unknown.json.error.type, 'https://keyhold.dev/errors/data/role-not-found');
      const other = await w.otherWorkspace();
      const foreignRole = await createRole(w, unique('foreign-role'), undefined, other.root);
      assert.equal((await w.post('/v1/permissions.setRolePermissions', { roleId: foreignRole, permissions: [] })).status, 404);
      const foreignPermission = await createPermission(w, unique('foreign-perm'), { key: other.root });
      const res = await w.post('/v1/permissions.setRolePermissions', { roleId, permissions: [{ id: foreignPermission }] });
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/permission-not-found');
    });

    test('setRolePermissions: concurrent calls on one role end with exactly one of the two sets', async () => {
      const slugs = ['a1', 'a2', 'b1', 'b2'].map((s) => unique(`conc.${s}`));
      for (const s of slugs) await createPermission(w, s);
      for (let round = 0; round < 5; round++) {
        const roleId = await createRole(w, unique('conc-role'));
        const [ra, rb] = await Promise.all([
          w.post('/v1/permissions.setRolePermissions', { roleId, permissions: [{ slug: slugs[0] }, { slug: slugs[1] }] }),
          w.post('/v1/permissions.setRolePermissions', { roleId, permissions: [{ slug: slugs[2] }, { slug: slugs[3] }] }),
        ]);
        assert.equal(ra.status, 200, ra.body);
        assert.equal(rb.status, 200, rb.body);
        const got = (await w.get<RoleView>('/v1/permissions.getRole', { roleId })).json.permissions.map((p: { slug: string }) => p.slug);
        assert.ok(
          JSON.stringify(got) === JSON.stringify(slugs.slice(0, 2)) || JSON.stringify(got) === JSON.stringify(slugs.slice(2)),
          `mixed set ${got.join()}`,
        );
      }
    });

    test('each operation accepts exactly its own rbac permission', async () => {
      const roleId = await createRole(w, unique('scoped'), undefined, await w.rootKey(['rbac.*.create_role']));
      const reader = await w.rootKey(['rbac.*.read_role']);
      assert.equal((await w.get('/v1/permissions.getRole', { roleId }, reader)).status, 200);
      assert.equal((await w.get('/v1/permissions.listRoles', {}, reader)).status, 200);
      const denied = await w.post(
        '/v1/permissions.setRolePermissions',
        { roleId, permissions: [] },
        await w.rootKey(['rbac.*.read_role', 'rbac.*.delete_role']),
      );
      assert.equal(denied.status, 403, denied.body);
      assert.equal(denied.json.error.detail, 'Missing permission: rbac.*.create_role');
      const wrong = await w.post('/v1/permissions.deleteRole', { roleId }, await w.rootKey(['rbac.*.create_role', 'rbac.*.read_role']));
      assert.equal(wrong.status, 403, wrong.body);
      assert.equal(wrong.json.error.detail, 'Missing permission: rbac.*.delete_role');
      assert.equal((await w.post('/v1/permissions.deleteRole', { roleId }, await w.rootKey(['rbac.*.delete_role']))).status, 200);
    });

    describe('security: createRole', () => {
      securityTests(() => w, {
        permission: 'rbac.*.create_role',
        request: async () => ({ method: 'POST', path: '/v1/permissions.createRole', body: { name: unique('sec') } }),
      });
    });
    describe('security: getRole', () => {
      securityTests(() => w, {
        permission: 'rbac.*.read_role',
        request: async () => ({ method: 'GET', path: '/v1/permissions.getRole', query: { roleId: await createRole(w, unique('sec')) } }),
        foreign: async (_w, other) => ({
          method: 'GET',
          path: '/v1/permissions.getRole',
          query: { roleId: await createRole(w, unique('sec'), undefined, other.root) },
        }),
      });
    });
    describe('security: listRoles', () => {
      securityTests(() => w, {
        permission: 'rbac.*.read_role',
        request: async () => ({ method: 'GET', path: '/v1/permissions.listRoles' }),
      });
    });
    describe('security: deleteRole', () => {
      securityTests(() => w, {
        permission: 'rbac.*.delete_role',
        request: async () => ({ method: 'POST', path: '/v1/permissions.deleteRole', body: { roleId: await createRole(w, unique('sec')) } }),
        foreign: async (_w, other) => ({
          method: 'POST',
          path: '/v1/permissions.deleteRole',
          body: { roleId: await createRole(w, unique('sec'), undefined, other.root) },
        }),
      });
    });
    describe('security: setRolePermissions', () => {
      securityTests(() => w, {
        permission: 'rbac.*.create_role',
        request: async () => ({
          method: 'POST',
          path: '/v1/permissions.setRolePermissions',
          body: { roleId: await createRole(w, unique('sec')), permissions: [{ slug: unique('sec'), create: true }] },
        }),
        foreign: async (_w, other) => ({
          method: 'POST',
          path: '/v1/permissions.setRolePermissions',
          body: { roleId: await createRole(w, unique('sec'), undefined, other.root), permissions: [] },
        }),
      });
    });
  });
}
