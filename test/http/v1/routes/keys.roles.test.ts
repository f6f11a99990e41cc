import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { securityTests } from '../../../helpers/security.ts';
import { errorPaths } from '../../../helpers/errors.ts';
import { snapshot } from '../../../helpers/rows.ts';
import { auditEvents, auditOf, createRole, keyView, RBAC_TABLES, roleIdOf, unique } from '../../../helpers/rbac.ts';

for (const dialect of DIALECTS) {
  describe(`keys.addRoles / removeRoles (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
    });
    after(() => w.close());

    /** Four fresh roles (a..c exist, d does not), each granting its own permission, and a key holding role a and a direct permission. */
    const fixture = async () => {
      const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((x) => unique(`kr.${x}`));
      for (const r of [a, b, c]) await createRole(w, r, [`${r}.perm`]);
      const direct = unique('kr.direct');
      const { keyId } = await w.createKey({ apiId, roles: [a], permissions: [direct] });
      return { a, b, c, d, direct, keyId };
    };

    describe('addRoles', () => {
      test('connects every listed role (by name and id; created on request); response = the requested ones sorted by name; effective permissions follow', async () => {
        const { a, b, c, d, direct, keyId } = await fixture();
        const res = await w.post('/v1/keys.addRoles', {
          keyId,
          roles: [{ name: c }, { id: await roleIdOf(w, b) }, { name: a }, { name: d, create: true }, { name: c }],
        });
        assert.equal(res.status, 200, res.body);
        const dId = await roleIdOf(w, d);
        assert.match(dId, /^role_[1-9A-HJ-NP-Za-km-z]{22}$/);
        assert.deepEqual(res.json, [
          { id: await roleIdOf(w, a), name: a },
          { id: await roleIdOf(w, b), name: b },
          { id: await roleIdOf(w, c), name: c },
          { id: dId, name: d },
        ]);
        assert.deepEqual(await keyView(w, keyId), {
          roles: [a, b, c, d],
          permissions: [`${a}.perm`, `${b}.perm`, `${c}.perm`, direct].sort(),
        });
        // `a` was already connected: no second link, no audit record for it.
        assert.deepEqual(
          await auditOf(w, res, keyId, 'authorization.'),
          [b, c, d].map((r) => `authorization.connect_role_and_key:${r}`),
        );
        assert.deepEqual(await auditEvents(w, dId), ['role.create']);
      });

      test('id wins over name', async () => {
        const { b, c, keyId } = await fixture();
        const res = await w.post('/v1/keys.addRoles', { keyId, roles: [{ id: await roleIdOf(w, b), name: c }] });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, [{ id: await roleIdOf(w, b), name: b }]);
      });

      test('creating a role needs rbac.*.create_role (create_permission is not enough): 403 naming it, nothing changed', async () => {
        const { a, b, keyId } = await fixture();
        const weak = await w.rootKey(['rbac.*.add_role_to_key', 'rbac.*.create_permission']);
        const strong = await w.rootKey(['rbac.*.add_role_to_key', 'rbac.*.create_role']);
        const before = await snapshot(w, RBAC_TABLES);
        const fresh = unique('kr.fresh');
        const denied = await w.post('/v1/keys.addRoles', { keyId, roles: [{ name: b }, { name: fresh, create: true }] }, weak);
        assert.equal(denied.status, 403, denied.body);
        assert.equal(denied.json.error.detail, 'Missing permission: rbac.*.create_role');
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        assert.deepEqual((await keyView(w, keyId)).roles, [a]);
        const ok = await w.post('/v1/keys.addRoles', { keyId, roles: [{ name: b }, { name: fresh, create: true }] }, strong);
        assert.equal(ok.status, 200, ok.body);
        assert.deepEqual((await keyView(w, keyId)).roles, [a, b, fresh].sort());
      });

      test('unknown ids and names → 404 naming every one; nothing connected or created (atomic)', async () => {
        const { a, b, keyId } = await fixture();
        const before = await snapshot(w, RBAC_TABLES);
        const res = await w.post('/v1/keys.addRoles', {
          keyId,
          roles: [{ name: b }, { id: 'role_nope' }, { name: 'ghost-1' }, { name: 'ghost-2' }, { name: unique('x'), create: true }],
        });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/role-not-found');
        assert.equal(res.json.error.detail, 'role ids not found: role_nope; roles not found: ghost-1, ghost-2');
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        assert.deepEqual((await keyView(w, keyId)).roles, [a]);
      });

      test('validation: every problem at once, with paths', async () => {
        const { keyId } = await fixture();
        assert.deepEqual(errorPaths(await w.post('/v1/keys.addRoles', { keyId: '', roles: [] })), ['/keyId', '/roles']);
        assert.deepEqual(
          errorPaths(await w.post('/v1/keys.addRoles', { keyId, roles: [{ name: '' }, { name: 'n'.repeat(513) }, { id: 7 }] })),
          ['/roles/0/name', '/roles/1/name', '/roles/2/id'],
        );
        const neither = await w.post('/v1/keys.addRoles', { keyId, roles: [{ create: true }, { name: 'x' }] });
        assert.equal(neither.status, 400, neither.body);
        assert.deepEqual(neither.json.error.errors, [{ path: '/roles/0', message: 'must have id or name' }]);
      });

      test("unknown, deleted and foreign keys → 404; another workspace's role → 404", async () => {
        const { b } = await fixture();
        const missing = await w.post('/v1/keys.addRoles', { keyId: 'key_nope', roles: [{ name: b }] });
        assert.equal(missing.status, 404, missing.body);
        assert.equal(missing.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        const { keyId: deleted } = await w.createKey({ apiId });
        await w.post('/v1/keys.deleteKey', { keyId: deleted });
        assert.equal((await w.post('/v1/keys.addRoles', { keyId: deleted, roles: [{ name: b }] })).status, 404);
        const other = await w.otherWorkspace();
        const foreignRole = await createRole(w, unique('kr.theirs'), undefined, other.root);
        const { keyId } = await w.createKey({ apiId });
        const res = await w.post('/v1/keys.addRoles', { keyId, roles: [{ id: foreignRole }] });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/role-not-found');
        assert.deepEqual((await keyView(w, keyId)).roles, []);
      });

      test('concurrent adds of overlapping sets on one key both succeed and leave the union', async () => {
        const names = ['1', '2', '3'].map((x) => unique(`kr.conc${x}`));
        for (const n of names) await createRole(w, n);
        for (let round = 0; round < 5; round++) {
          const { keyId } = await w.createKey({ apiId });
          const [r1, r2] = await Promise.all([
            w.post('/v1/keys.addRoles', { keyId, roles: [{ name: names[0] }, { name: names[1] }] }),
            w.post('/v1/keys.addRoles', { keyId, roles: [{ name: names[1] }, { name: names[2] }] }),
          ]);
          assert.equal(r1.status, 200, r1.body);
          assert.equal(r2.status, 200, r2.body);
          assert.deepEqual((await keyView(w, keyId)).roles, [...names].sort());
          assert.equal((await auditEvents(w, keyId, 'authorization.')).length, 3);
        }
      });

      securityTests(() => w, {
        permission: 'rbac.*.add_role_to_key',
        request: async () => ({
          method: 'POST',
          path: '/v1/keys.addRoles',
          body: { keyId: (await w.createKey({ apiId })).keyId, roles: [{ name: 'sec', create: true }] },
        }),
        foreign: async (_w, other) => {
          const { keyId } = await w.createKey({ apiId: await w.createApi('foreign', other.root) }, other.root);
          return { method: 'POST', path: '/v1/keys.addRoles', body: { keyId, roles: [{ name: 'sec', create: true }] } };
        },
      });
    });

    describe('removeRoles', () => {
      test('honours every entry (by name and id); the key loses what those roles granted; audited per role', async () => {
        const { a, b, c, d, direct, keyId } = await fixture();
        await w.post('/v1/keys.addRoles', { keyId, roles: [{ name: b }, { name: c }, { name: d, create: true }] });
        const res = await w.post('/v1/keys.removeRoles', { keyId, roles: [{ name: a }, { id: await roleIdOf(w, b) }, { name: c }] });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, {});
        assert.deepEqual(await keyView(w, keyId), { roles: [d], permissions: [direct] });
        assert.deepEqual(
          await auditOf(w, res, keyId, 'authorization.'),
          [a, b, c].map((r) => `authorization.disconnect_role_and_key:${r}`),
        );
        // The roles themselves still exist.
        assert.equal((await w.get('/v1/permissions.getRole', { roleId: await roleIdOf(w, a) })).status, 200);
      });

      test('a role the key does not have is ignored: 200, nothing written', async () => {
        const { a, b, keyId } = await fixture();
        const before = await snapshot(w, RBAC_TABLES);
        const res = await w.post('/v1/keys.removeRoles', { keyId, roles: [{ name: b }] });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        assert.deepEqual((await keyView(w, keyId)).roles, [a]);
      });

      test('unknown ids and names → 404 naming every one; nothing removed (atomic)', async () => {
        const { a, keyId } = await fixture();
        const before = await snapshot(w, RBAC_TABLES);
        const res = await w.post('/v1/keys.removeRoles', { keyId, roles: [{ name: a }, { id: 'role_gone' }, { name: 'ghost-r' }] });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/role-not-found');
        assert.equal(res.json.error.detail, 'role ids not found: role_gone; roles not found: ghost-r');
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        assert.deepEqual((await keyView(w, keyId)).roles, [a]);
      });

      test('validation and unknown key; `create` on an item is ignored, never creating', async () => {
        const { a, keyId } = await fixture();
        assert.deepEqual(errorPaths(await w.post('/v1/keys.removeRoles', { keyId: '', roles: [] })), ['/keyId', '/roles']);
        const neither = await w.post('/v1/keys.removeRoles', { keyId, roles: [{ name: a }, {}] });
        assert.equal(neither.status, 400, neither.body);
        assert.deepEqual(neither.json.error.errors, [{ path: '/roles/1', message: 'must have id or name' }]);
        const missing = await w.post('/v1/keys.removeRoles', { keyId: 'key_nope', roles: [{ name: a }] });
        assert.equal(missing.status, 404, missing.body);
        assert.equal(missing.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        const ghost = unique('never-made');
        const res = await w.post('/v1/keys.removeRoles', { keyId, roles: [{ name: ghost, create: true }] });
        assert.equal(res.status, 404, res.body);
        assert.equal((await w.store.db.selectFrom('roles').select('id').where('name', '=', ghost).execute()).length, 0);
        assert.deepEqual((await keyView(w, keyId)).roles, [a]);
      });

      securityTests(() => w, {
        permission: 'rbac.*.remove_role_from_key',
        request: async () => {
          const name = unique('sec');
          return {
            method: 'POST',
            path: '/v1/keys.removeRoles',
            body: { keyId: (await w.createKey({ apiId, roles: [name] })).keyId, roles: [{ name }] },
          };
        },
        foreign: async (_w, other) => {
          const { keyId } = await w.createKey({ apiId: await w.createApi('foreign', other.root), roles: ['theirs'] }, other.root);
          return { method: 'POST', path: '/v1/keys.removeRoles', body: { keyId, roles: [{ name: 'theirs' }] } };
        },
      });
    });
  });
}
