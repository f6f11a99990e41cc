import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/domain/ids.ts';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { errorPaths } from '../../../helpers/errors.ts';
import { count } from '../../../helpers/rows.ts';
import { auditEvents, createPermission, createRole, keyView, unique } from '../../../helpers/rbac.ts';

for (const dialect of DIALECTS) {
  describe(`permissions.createPermission / getPermission / listPermissions / deletePermission (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
    });
    after(() => w.close());

    test('createPermission: slug defaults to name; getPermission returns exactly the stored object; audited', async () => {
      const res = await w.post<{ permissionId: string }>('/v1/permissions.createPermission', {
        name: 'documents.read',
        description: 'Read documents',
      });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(Object.keys(res.json), ['permissionId']);
      assert.match(res.json.permissionId, /^perm_[1-9A-HJ-NP-Za-km-z]{22}$/);
      const got = await w.get('/v1/permissions.getPermission', { permissionId: res.json.permissionId });
      assert.equal(got.status, 200, got.body);
      assert.deepEqual(got.json, {
        id: res.json.permissionId,
        name: 'documents.read',
        slug: 'documents.read',
        description: 'Read documents',
      });
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', res.json.permissionId).execute();
      assert.deepEqual(
        audit.map((a) => a.event),
        ['permission.create'],
      );
      assert.equal(audit[0].request_id, res.headers['x-request-id']);
      assert.deepEqual(JSON.parse(audit[0].diff!), { name: 'documents.read', slug: 'documents.read', description: 'Read documents' });
    });

    test('createPermission: an explicit slug is kept apart from the name; no description → member absent', async () => {
      const permissionId = await createPermission(w, 'billing:invoices.*', { slug: 'billing-invoices' });
      const got = await w.get('/v1/permissions.getPermission', { permissionId });
      assert.deepEqual(got.json, { id: permissionId, name: 'billing:invoices.*', slug: 'billing-invoices' });
    });

    test('createPermission: invalid name, slug and description are all reported at once; nothing written', async () => {
      const before = await count(w.store.db, 'permissions');
      const all = await w.post('/v1/permissions.createPermission', { name: 'has space', slug: 'x/y', description: 'd'.repeat(1025) });
      assert.deepEqual(errorPaths(all), ['/description', '/name', '/slug']);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.createPermission', { name: '' })), ['/name']);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.createPermission', { name: 'a'.repeat(513) })), ['/name']);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.createPermission', {})), ['/name']);
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.createPermission', { name: 'ok', slug: '' })), ['/slug']);
      assert.equal(await count(w.store.db, 'permissions'), before);
      // 512 characters is the maximum, and every allowed character class is accepted.
      const long = `aZ09_.:-*${'x'.repeat(503)}`;
      const permissionId = await createPermission(w, long);
      assert.equal((await w.get('/v1/permissions.getPermission', { permissionId })).json.slug, long);
    });

    test('createPermission: a slug that exists → 409 naming it, whatever the name; nothing written', async () => {
      const slug = unique('dup');
      await createPermission(w, slug);
      const before = await count(w.store.db, 'permissions');
      const again = await w.post('/v1/permissions.createPermission', { name: slug });
      assert.equal(again.status, 409, again.body);
      assert.equal(again.json.error.type, 'https://keyhold.dev/errors/data/conflict');
      assert.equal(again.json.error.code, 'CONFLICT');
      assert.equal(again.json.error.detail, `Permission with slug "${slug}" already exists in this workspace`);
      const viaSlug = await w.post('/v1/permissions.createPermission', { name: 'another-name', slug });
      assert.equal(viaSlug.status, 409, viaSlug.body);
      assert.equal(await count(w.store.db, 'permissions'), before);
    });

    test('createPermission: concurrent creators of one slug → exactly one 200, the rest 409', async () => {
      const slug = unique('race');
      const results = await Promise.all(Array.from({ length: 6 }, () => w.post('/v1/permissions.createPermission', { name: slug })));
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409], results.map((r) => r.body).join('\n'));
      const rows = await w.store.db.selectFrom('permissions').select('id').where('slug', '=', slug).execute();
      assert.equal(rows.length, 1);
    });

    test('the same slug may exist in another workspace', async () => {
      const slug = unique('shared');
      const other = await w.otherWorkspace();
      const theirs = await createPermission(w, slug, { key: other.root });
      const ours = await createPermission(w, slug);
      assert.notEqual(theirs, ours);
    });

    test("getPermission: unknown id and another workspace's permission → 404; empty id → 400", async () => {
      const unknown = await w.get('/v1/permissions.getPermission', { permissionId: 'perm_doesnotexist' });
      assert.equal(unknown.status, 404, unknown.body);
      assert.equal(unknown.json.error.type, 'https://keyhold.dev/errors/data/permission-not-found');
      assert.equal(unknown.json.error.detail, 'permission perm_doesnotexist not found');
      const other = await w.otherWorkspace();
      const foreign = await createPermission(w, unique('theirs'), { key: other.root });
      assert.equal((await w.get('/v1/permissions.getPermission', { permissionId: foreign })).status, 404);
      assert.deepEqual(errorPaths(await w.get('/v1/permissions.getPermission', { permissionId: '' })), ['/permissionId']);
    });

    test("listPermissions: a bare array of the workspace's permissions in id order, unpaginated; other workspaces invisible", async () => {
      const other = await w.otherWorkspace();
      const key = other.root;
      const created: Array<{ id: string; name: string; slug: string; description: string }> = [];
      for (let i = 0; i < 5; i++)
        created.push({
          id: await createPermission(w, `list.${i}`, { key, description: `d${i}` }),
          name: `list.${i}`,
          slug: `list.${i}`,
          description: `d${i}`,
        });
      await createPermission(w, unique('not-theirs'));
      // Ids are time-sortable only to the millisecond: the order is the ids' order.
      const inOrder = [...created].sort((a, b) => (a.id < b.id ? -1 : 1));
      const all = await w.get('/v1/permissions.listPermissions', {}, key);
      assert.equal(all.status, 200, all.body);
      assert.deepEqual(all.json, inOrder);
      // The paging parameters of earlier releases are not parameters any more: ignored, the whole list answers.
      assert.deepEqual((await w.get('/v1/permissions.listPermissions', { limit: 2, cursor: inOrder[1].id }, key)).json, inOrder);
      const mine = await w.get<Array<{ id: string }>>('/v1/permissions.listPermissions', {});
      assert.ok(Array.isArray(mine.json), mine.body);
      assert.ok(!mine.json.some((p) => created.some((c) => c.id === p.id)));
      const ours = await w.store.db
        .selectFrom('permissions')
        .select('id')
        .where('workspace_id', '=', w.workspaceId)
        .orderBy('id')
        .execute();
      assert.deepEqual(
        mine.json.map((p) => p.id),
        ours.map((r) => r.id),
      );
    });

    test('listPermissions and listRoles: every item of the workspace, past any page size (1001 of each, roles with permissions)', async () => {
      const other = await w.otherWorkspace();
      const now = Date.now();
      const N = 1001;
      const perms = Array.from({ length: N }, (_, i) => ({
        id: newId('perm'),
        workspace_id: other.workspaceId,
        name: `bulk.${i}`,
        slug: `bulk.${i}`,
        description: null,
        created_at: now,
        updated_at: now,
      }));
      const roles = Array.from({ length: N }, (_, i) => ({
        id: newId('role'),
        workspace_id: other.workspaceId,
        name: `bulk-${i}`,
        description: null,
        created_at: now,
        updated_at: now,
      }));
      await w.store.db.insertInto('permissions').values(perms).execute();
      await w.store.db.insertInto('roles').values(roles).execute();
      // Role i holds permission i: the links of roles beyond the first IN_LIST_CHUNK are found too.
      await w.store.db
        .insertInto('roles_permissions')
        .values(roles.map((r, i) => ({ role_id: r.id, permission_id: perms[i].id, workspace_id: other.workspaceId, created_at: now })))
        .execute();
      const byId = <T extends { id: string }>(xs: T[]) => [...xs].sort((a, b) => (a.id < b.id ? -1 : 1));

      const listed = await w.get<Array<{ id: string }>>('/v1/permissions.listPermissions', {}, other.root);
      assert.equal(listed.status, 200, listed.body.slice(0, 300));
      assert.deepEqual(
        listed.json.map((p) => p.id),
        byId(perms).map((p) => p.id),
      );
      const listedRoles = await w.get<Array<{ id: string; name: string; permissions: Array<{ slug: string }> }>>(
        '/v1/permissions.listRoles',
        {},
        other.root,
      );
      assert.equal(listedRoles.status, 200, listedRoles.body.slice(0, 300));
      assert.deepEqual(
        listedRoles.json.map((r) => r.id),
        byId(roles).map((r) => r.id),
      );
      for (const r of listedRoles.json)
        assert.deepEqual(
          r.permissions.map((p) => p.slug),
          [`bulk.${r.name.slice('bulk-'.length)}`],
          r.name,
        );
    });

    test('deletePermission: hard delete; keys and roles lose it at once; audited with what it disconnected', async () => {
      const slug = unique('doomed');
      const keep = unique('kept');
      const permissionId = await createPermission(w, slug);
      const roleName = unique('role-with-doomed');
      const roleId = await createRole(w, roleName, [slug, keep]);
      const { keyId } = await w.createKey({ apiId, permissions: [slug] });
      const viaRole = await w.createKey({ apiId, roles: [roleName] });
      assert.deepEqual((await keyView(w, viaRole.keyId)).permissions, [keep, slug].sort());

      const res = await w.post('/v1/permissions.deletePermission', { permissionId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});
      assert.equal((await w.get('/v1/permissions.getPermission', { permissionId })).status, 404);
      assert.deepEqual((await keyView(w, keyId)).permissions, []);
      assert.deepEqual((await keyView(w, viaRole.keyId)).permissions, [keep]);
      const role = await w.get<Loose<{ permissions: Array<{ slug: string }> }>>('/v1/permissions.getRole', { roleId });
      assert.deepEqual(
        role.json.permissions.map((p: { slug: string }) => p.slug),
        [keep],
      );
      assert.deepEqual(
        await w.store.db.selectFrom('roles_permissions').select('role_id').where('permission_id', '=', permissionId).execute(),
        [],
      );
      assert.deepEqual(
        await w.store.db.selectFrom('keys_permissions').select('key_id').where('permission_id', '=', permissionId).execute(),
        [],
      );
      const audit = await w.store.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('target_id', '=', permissionId)
        .where('event', '=', 'permission.delete')
        .execute();
      assert.equal(audit.length, 1);
      assert.deepEqual(JSON.parse(audit[0].diff!), { name: slug, slug, disconnectedKeys: 1, disconnectedRoles: 1 });

      const again = await w.post('/v1/permissions.deletePermission', { permissionId });
      assert.equal(again.status, 404, again.body);
      assert.equal(again.json.error.type, 'https://keyhold.dev/errors/data/permission-not-found');
    });

    test("deletePermission: empty id → 400; another workspace's permission → 404 and it survives", async () => {
      assert.deepEqual(errorPaths(await w.post('/v1/permissions.deletePermission', { permissionId: '' })), ['/permissionId']);
      const other = await w.otherWorkspace();
      const foreign = await createPermission(w, unique('survivor'), { key: other.root });
      assert.equal((await w.post('/v1/permissions.deletePermission', { permissionId: foreign })).status, 404);
      assert.equal((await w.get('/v1/permissions.getPermission', { permissionId: foreign }, other.root)).status, 200);
      assert.deepEqual(await auditEvents(w, foreign), ['permission.create']);
    });

    test('each operation accepts exactly its own rbac permission', async () => {
      const permissionId = await createPermission(w, unique('scoped'), { key: await w.rootKey(['rbac.*.create_permission']) });
      assert.equal(
        (await w.get('/v1/permissions.getPermission', { permissionId }, await w.rootKey(['rbac.*.read_permission']))).status,
        200,
      );
      assert.equal((await w.get('/v1/permissions.listPermissions', {}, await w.rootKey(['rbac.*.read_permission']))).status, 200);
      const wrong = await w.post(
        '/v1/permissions.deletePermission',
        { permissionId },
        await w.rootKey(['rbac.*.create_permission', 'rbac.*.read_permission']),
      );
      assert.equal(wrong.status, 403, wrong.body);
      assert.equal(wrong.json.error.detail, 'Missing permission: rbac.*.delete_permission');
      assert.equal(
        (await w.post('/v1/permissions.deletePermission', { permissionId }, await w.rootKey(['rbac.*.delete_permission']))).status,
        200,
      );
    });

    describe('security: createPermission', () => {
      securityTests(() => w, {
        permission: 'rbac.*.create_permission',
        request: async () => ({ method: 'POST', path: '/v1/permissions.createPermission', body: { name: unique('sec') } }),
      });
    });
    describe('security: getPermission', () => {
      securityTests(() => w, {
        permission: 'rbac.*.read_permission',
        request: async () => ({
          method: 'GET',
          path: '/v1/permissions.getPermission',
          query: { permissionId: await createPermission(w, unique('sec')) },
        }),
        foreign: async (_w, other) => ({
          method: 'GET',
          path: '/v1/permissions.getPermission',
          query: { permissionId: await createPermission(w, unique('sec'), { key: other.root }) },
        }),
      });
    });
    describe('security: listPermissions', () => {
      securityTests(() => w, {
        permission: 'rbac.*.read_permission',
        request: async () => ({ method: 'GET', path: '/v1/permissions.listPermissions' }),
      });
    });
    describe('security: deletePermission', () => {
      securityTests(() => w, {
        permission: 'rbac.*.delete_permission',
        request: async () => ({
          method: 'POST',
          path: '/v1/permissions.deletePermission',
          body: { permissionId: await createPermission(w, unique('sec')) },
        }),
        foreign: async (_w, other) => ({
          method: 'POST',
          path: '/v1/permissions.deletePermission',
          body: { permissionId: await createPermission(w, unique('sec'), { key: other.root }) },
        }),
      });
    });
  });
}
