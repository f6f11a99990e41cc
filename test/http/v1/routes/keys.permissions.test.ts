import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/domain/ids.ts';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { securityTests } from '../../../helpers/security.ts';
import { errorPaths } from '../../../helpers/errors.ts';
import { snapshot } from '../../../helpers/rows.ts';
import {
  auditEvents,
  auditOf,
  createPermission,
  createRole,
  directPermissions,
  keyView,
  permissionIdOf,
  RBAC_TABLES,
  unique,
} from '../../../helpers/rbac.ts';

for (const dialect of DIALECTS) {
  describe(`keys.addPermissions / removePermissions / setPermissions (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
    });
    after(() => w.close());

    /** Four fresh permission slugs, sorted, and a key holding the first one directly and `viaRole` through a role. */
    const fixture = async () => {
      const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((x) => unique(`kp.${x}`));
      const viaRole = unique('kp.via-role');
      const role = unique('kp-role');
      await createRole(w, role, [viaRole]);
      for (const s of [b, c]) await createPermission(w, s);
      const { keyId } = await w.createKey({ apiId, permissions: [a], roles: [role] });
      return { a, b, c, d, viaRole, keyId };
    };

    describe('addPermissions', () => {
      test('connects every listed permission (by slug, deprecated name, id; created on request); response = the requested ones sorted by name', async () => {
        const { a, b, c, d, viaRole, keyId } = await fixture();
        const res = await w.post('/v1/keys.addPermissions', {
          keyId,
          permissions: [{ slug: c }, { name: b }, { id: await permissionIdOf(w, a) }, { slug: d, create: true }, { slug: c }],
        });
        assert.equal(res.status, 200, res.body);
        const dId = await permissionIdOf(w, d);
        assert.match(dId, /^perm_/);
        assert.deepEqual(res.json, [
          { id: await permissionIdOf(w, a), name: a },
          { id: await permissionIdOf(w, b), name: b },
          { id: await permissionIdOf(w, c), name: c },
          { id: dId, name: d },
        ]);
        assert.deepEqual(await directPermissions(w, keyId), [a, b, c, d]);
        // getKey shows the effective set: direct ∪ through roles.
        assert.deepEqual((await keyView(w, keyId)).permissions, [a, b, c, d, viaRole].sort());
        // `a` was already connected: no second link, no audit record for it.
        assert.deepEqual(
          await auditOf(w, res, keyId, 'authorization.'),
          [b, c, d].map((s) => `authorization.connect_permission_and_key:${s}`),
        );
        assert.deepEqual(await auditEvents(w, dId), ['permission.create']);
      });

      test('id wins over slug, slug over the deprecated name', async () => {
        const { b, c, d, keyId } = await fixture();
        await createPermission(w, d);
        const res = await w.post<Array<{ id: string; name: string }>>('/v1/keys.addPermissions', {
          keyId,
          permissions: [
            { id: await permissionIdOf(w, b), slug: c },
            { slug: d, name: c },
          ],
        });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(
          res.json.map((p: { name: string }) => p.name),
          [b, d],
        );
      });

      test('the response names a permission by its name, which may differ from its slug', async () => {
        const { keyId } = await fixture();
        const slug = unique('kp.slug');
        const id = await createPermission(w, 'Readable.Name', { slug });
        const res = await w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug }] });
        assert.deepEqual(res.json, [{ id, name: 'Readable.Name' }]);
        assert.ok((await keyView(w, keyId)).permissions.includes(slug));
      });

      test('unknown ids and slugs → 404 naming every one; nothing connected or created (atomic)', async () => {
        const { a, b, keyId } = await fixture();
        const before = await snapshot(w, RBAC_TABLES);
        const res = await w.post('/v1/keys.addPermissions', {
          keyId,
          permissions: [
            { slug: b },
            { id: 'perm_nope1' },
            { id: 'perm_nope2' },
            { slug: 'ghost.x' },
            { name: 'ghost.y' },
            { slug: unique('would-create'), create: true },
          ],
        });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/permission-not-found');
        assert.equal(res.json.error.detail, 'permission ids not found: perm_nope1, perm_nope2; permissions not found: ghost.x, ghost.y');
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        assert.deepEqual(await directPermissions(w, keyId), [a]);
      });

      test('create without rbac.*.create_permission → 403 naming it; nothing changed', async () => {
        const { a, b, keyId } = await fixture();
        const key = await w.rootKey(['rbac.*.add_permission_to_key']);
        const before = await snapshot(w, RBAC_TABLES);
        const res = await w.post(
          '/v1/keys.addPermissions',
          { keyId, permissions: [{ slug: b }, { slug: unique('new'), create: true }] },
          key,
        );
        assert.equal(res.status, 403, res.body);
        assert.equal(res.json.error.detail, 'Missing permission: rbac.*.create_permission');
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        assert.deepEqual(await directPermissions(w, keyId), [a]);
        // Existing permissions need only add_permission_to_key.
        assert.equal((await w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug: b }] }, key)).status, 200);
        assert.deepEqual(await directPermissions(w, keyId), [a, b]);
      });

      test('validation: every problem at once, with paths', async () => {
        const { keyId } = await fixture();
        assert.deepEqual(errorPaths(await w.post('/v1/keys.addPermissions', { keyId: '', permissions: [] })), ['/keyId', '/permissions']);
        assert.deepEqual(errorPaths(await w.post('/v1/keys.addPermissions', {})), ['/keyId', '/permissions']);
        assert.deepEqual(
          errorPaths(
            await w.post('/v1/keys.addPermissions', {
              keyId,
              permissions: [{ slug: 's'.repeat(513) }, { id: '' }, { name: 'ok', create: 'yes' }],
            }),
          ),
          ['/permissions/0/slug', '/permissions/1/id', '/permissions/2/create'],
        );
        const neither = await w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug: 'x' }, { create: true }] });
        assert.equal(neither.status, 400, neither.body);
        assert.deepEqual(neither.json.error.errors, [{ path: '/permissions/1', message: 'must have id, slug or name' }]);
        const tooMany = await w.post('/v1/keys.addPermissions', {
          keyId,
          permissions: Array.from({ length: 1001 }, (_, i) => ({ slug: `p${i}` })),
        });
        assert.deepEqual(errorPaths(tooMany), ['/permissions']);
      });

      test('unknown, deleted and foreign keys → 404; foreign permission ids → 404', async () => {
        const { b } = await fixture();
        const missing = await w.post('/v1/keys.addPermissions', { keyId: 'key_nope', permissions: [{ slug: b }] });
        assert.equal(missing.status, 404, missing.body);
        assert.equal(missing.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        const { keyId: deleted } = await w.createKey({ apiId });
        await w.post('/v1/keys.deleteKey', { keyId: deleted });
        assert.equal((await w.post('/v1/keys.addPermissions', { keyId: deleted, permissions: [{ slug: b }] })).status, 404);
        const other = await w.otherWorkspace();
        const foreignPermission = await createPermission(w, unique('theirs'), { key: other.root });
        const { keyId } = await w.createKey({ apiId });
        const res = await w.post('/v1/keys.addPermissions', { keyId, permissions: [{ id: foreignPermission }] });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/permission-not-found');
        assert.deepEqual(await directPermissions(w, keyId), []);
      });

      test('a key holds at most 1000 direct permissions: the one that would exceed → 400, nothing added', async () => {
        const { keyId } = await w.createKey({ apiId });
        const now = Date.now();
        const rows = Array.from({ length: 1000 }, (_, i) => ({
          id: newId('perm'),
          workspace_id: w.workspaceId,
          name: `bulk.${i}`,
          slug: `bulk.${i}`,
          description: null,
          created_at: now,
          updated_at: now,
        }));
        await w.store.db.insertInto('permissions').values(rows).execute();
        await w.store.db
          .insertInto('keys_permissions')
          .values(rows.map((r) => ({ key_id: keyId, permission_id: r.id, workspace_id: w.workspaceId, created_at: now })))
          .execute();
        const extra = unique('one-too-many');
        const res = await w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug: 'bulk.0' }, { slug: extra, create: true }] });
        assert.deepEqual(errorPaths(res), ['/permissions']);
        assert.equal(res.json.error.errors[0].message, 'a key can have at most 1000 permissions; this would make 1001');
        assert.equal((await directPermissions(w, keyId)).length, 1000);
        assert.equal((await w.store.db.selectFrom('permissions').select('id').where('slug', '=', extra).execute()).length, 0);
        // Re-adding ones it already has is fine.
        assert.equal((await w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug: 'bulk.0' }] })).status, 200);
      });

      test('concurrent adds of overlapping sets on one key both succeed and leave the union', async () => {
        const slugs = ['1', '2', '3'].map((x) => unique(`kp.conc${x}`));
        for (const s of slugs) await createPermission(w, s);
        for (let round = 0; round < 5; round++) {
          const { keyId } = await w.createKey({ apiId });
          const [r1, r2] = await Promise.all([
            w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug: slugs[0] }, { slug: slugs[1] }] }),
            w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug: slugs[1] }, { slug: slugs[2] }] }),
          ]);
          assert.equal(r1.status, 200, r1.body);
          assert.equal(r2.status, 200, r2.body);
          assert.deepEqual(await directPermissions(w, keyId), [...slugs].sort());
          assert.equal((await auditEvents(w, keyId, 'authorization.')).length, 3);
        }
      });

      securityTests(() => w, {
        permission: 'rbac.*.add_permission_to_key',
        request: async () => ({
          method: 'POST',
          path: '/v1/keys.addPermissions',
          body: { keyId: (await w.createKey({ apiId })).keyId, permissions: [{ slug: 'sec', create: true }] },
        }),
        foreign: async (_w, other) => {
          const { keyId } = await w.createKey({ apiId: await w.createApi('foreign', other.root) }, other.root);
          return { method: 'POST', path: '/v1/keys.addPermissions', body: { keyId, permissions: [{ slug: 'sec', create: true }] } };
        },
      });
    });

    describe('removePermissions', () => {
      test('honours every entry (by slug, deprecated name and id); permissions through roles stay; audited per permission', async () => {
        const { a, b, c, d, viaRole, keyId } = await fixture();
        await w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug: b }, { slug: c }, { slug: d, create: true }] });
        const res = await w.post('/v1/keys.removePermissions', {
          keyId,
          permissions: [{ slug: a }, { name: b }, { id: await permissionIdOf(w, c) }],
        });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, {});
        assert.deepEqual(await directPermissions(w, keyId), [d]);
        assert.deepEqual((await keyView(w, keyId)).permissions, [d, viaRole].sort());
        assert.deepEqual(
          await auditOf(w, res, keyId, 'authorization.'),
          [a, b, c].map((s) => `authorization.disconnect_permission_and_key:${s}`),
        );
        // The permissions themselves still exist.
        assert.equal((await w.get('/v1/permissions.getPermission', { permissionId: await permissionIdOf(w, a) })).status, 200);
      });

      test('a permission held only through a role, or not held at all, is ignored: 200, nothing written', async () => {
        const { a, b, viaRole, keyId } = await fixture();
        const before = await snapshot(w, RBAC_TABLES);
        const res = await w.post('/v1/keys.removePermissions', { keyId, permissions: [{ slug: viaRole }, { slug: b }] });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, {});
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        assert.deepEqual((await keyView(w, keyId)).permissions, [a, viaRole].sort());
      });

      test('unknown ids and slugs → 404 naming every one; nothing removed (atomic)', async () => {
        const { a, keyId } = await fixture();
        const before = await snapshot(w, RBAC_TABLES);
        const res = await w.post('/v1/keys.removePermissions', {
          keyId,
          permissions: [{ slug: a }, { id: 'perm_gone' }, { slug: 'ghost.z' }],
        });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/permission-not-found');
        assert.equal(res.json.error.detail, 'permission ids not found: perm_gone; permissions not found: ghost.z');
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        assert.deepEqual(await directPermissions(w, keyId), [a]);
      });

      test('validation and unknown key', async () => {
        const { a, keyId } = await fixture();
        assert.deepEqual(errorPaths(await w.post('/v1/keys.removePermissions', { keyId: '', permissions: [] })), [
          '/keyId',
          '/permissions',
        ]);
        const neither = await w.post('/v1/keys.removePermissions', { keyId, permissions: [{}, { slug: a }, { create: true }] });
        assert.equal(neither.status, 400, neither.body);
        assert.deepEqual(neither.json.error.errors, [
          { path: '/permissions/0', message: 'must have id, slug or name' },
          { path: '/permissions/2', message: 'must have id, slug or name' },
        ]);
        const missing = await w.post('/v1/keys.removePermissions', { keyId: 'key_nope', permissions: [{ slug: a }] });
        assert.equal(missing.status, 404, missing.body);
        assert.equal(missing.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        assert.deepEqual(await directPermissions(w, keyId), [a]);
      });

      securityTests(() => w, {
        permission: 'rbac.*.remove_permission_from_key',
        request: async () => {
          const slug = unique('sec');
          return {
            method: 'POST',
            path: '/v1/keys.removePermissions',
            body: { keyId: (await w.createKey({ apiId, permissions: [slug] })).keyId, permissions: [{ slug }] },
          };
        },
        foreign: async (_w, other) => {
          const { keyId } = await w.createKey({ apiId: await w.createApi('foreign', other.root), permissions: ['theirs'] }, other.root);
          return { method: 'POST', path: '/v1/keys.removePermissions', body: { keyId, permissions: [{ slug: 'theirs' }] } };
        },
      });
    });

    describe('setPermissions', () => {
      test('replaces the direct permissions with exactly the listed set; response = that set sorted by name; audited', async () => {
        const { a, b, c, d, viaRole, keyId } = await fixture();
        await w.post('/v1/keys.addPermissions', { keyId, permissions: [{ slug: b }] });
        const res = await w.post('/v1/keys.setPermissions', {
          keyId,
          permissions: [{ slug: d, create: true }, { name: c }, { id: await permissionIdOf(w, b) }, { slug: c }],
        });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, [
          { id: await permissionIdOf(w, b), name: b },
          { id: await permissionIdOf(w, c), name: c },
          { id: await permissionIdOf(w, d), name: d },
        ]);
        assert.deepEqual(await directPermissions(w, keyId), [b, c, d]);
        assert.deepEqual((await keyView(w, keyId)).permissions, [b, c, d, viaRole].sort());
        assert.deepEqual(await auditOf(w, res, keyId, 'authorization.'), [
          `authorization.connect_permission_and_key:${c}`,
          `authorization.connect_permission_and_key:${d}`,
          `authorization.disconnect_permission_and_key:${a}`,
        ]);
        assert.deepEqual(await auditEvents(w, await permissionIdOf(w, d)), ['permission.create']);
      });

      test('needs both add_permission_to_key and remove_permission_from_key, whatever the change', async () => {
        const { a, b, keyId } = await fixture();
        const body = { keyId, permissions: [{ slug: a }, { slug: b }] };
        const addOnly = await w.post('/v1/keys.setPermissions', body, await w.rootKey(['rbac.*.add_permission_to_key']));
        assert.equal(addOnly.status, 403, addOnly.body);
        assert.equal(addOnly.json.error.detail, 'Missing permission: rbac.*.remove_permission_from_key');
        const removeOnly = await w.post('/v1/keys.setPermissions', body, await w.rootKey(['rbac.*.remove_permission_from_key']));
        assert.equal(removeOnly.status, 403, removeOnly.body);
        assert.equal(removeOnly.json.error.detail, 'Missing permission: rbac.*.add_permission_to_key');
        const neither = await w.post('/v1/keys.setPermissions', body, await w.rootKey(['api.*.read_key']));
        assert.equal(neither.json.error.detail, 'Missing permissions: rbac.*.add_permission_to_key, rbac.*.remove_permission_from_key');
        assert.deepEqual(await directPermissions(w, keyId), [a]);
        const both = await w.post(
          '/v1/keys.setPermissions',
          body,
          await w.rootKey(['rbac.*.add_permission_to_key', 'rbac.*.remove_permission_from_key']),
        );
        assert.equal(both.status, 200, both.body);
        assert.deepEqual(await directPermissions(w, keyId), [a, b]);
      });

      test('unknown entries → 404 naming each; create without create_permission → 403; the key is unchanged either way', async () => {
        const { a, b, keyId } = await fixture();
        const before = await snapshot(w, RBAC_TABLES);
        const unknown = await w.post('/v1/keys.setPermissions', {
          keyId,
          permissions: [{ slug: b }, { id: 'perm_nope' }, { name: 'ghost.q' }],
        });
        assert.equal(unknown.status, 404, unknown.body);
        assert.equal(unknown.json.error.detail, 'permission ids not found: perm_nope; permissions not found: ghost.q');
        assert.deepEqual(await snapshot(w, RBAC_TABLES), before);
        const key = await w.rootKey(['rbac.*.add_permission_to_key', 'rbac.*.remove_permission_from_key']);
        const counted = await snapshot(w, RBAC_TABLES);
        const denied = await w.post(
          '/v1/keys.setPermissions',
          { keyId, permissions: [{ slug: b }, { slug: unique('fresh'), create: true }] },
          key,
        );
        assert.equal(denied.status, 403, denied.body);
        assert.equal(denied.json.error.detail, 'Missing permission: rbac.*.create_permission');
        assert.deepEqual(await snapshot(w, RBAC_TABLES), counted);
        assert.deepEqual(await directPermissions(w, keyId), [a]);
      });

      test('validation and unknown key', async () => {
        const { a, keyId } = await fixture();
        assert.deepEqual(errorPaths(await w.post('/v1/keys.setPermissions', { keyId: '', permissions: [] })), ['/keyId', '/permissions']);
        const neither = await w.post('/v1/keys.setPermissions', { keyId, permissions: [{ create: true }] });
        assert.deepEqual(neither.json.error.errors, [{ path: '/permissions/0', message: 'must have id, slug or name' }]);
        const missing = await w.post('/v1/keys.setPermissions', { keyId: 'key_nope', permissions: [{ slug: a }] });
        assert.equal(missing.status, 404, missing.body);
        assert.equal(missing.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
      });

      test('two concurrent setPermissions on one key end with exactly one of the two sets', async () => {
        const slugs = ['a1', 'a2', 'b1', 'b2'].map((x) => unique(`kp.set.${x}`));
        for (const s of slugs) await createPermission(w, s);
        for (let round = 0; round < 5; round++) {
          const { keyId } = await w.createKey({ apiId, permissions: [slugs[0]] });
          const [ra, rb] = await Promise.all([
            w.post('/v1/keys.setPermissions', { keyId, permissions: [{ slug: slugs[0] }, { slug: slugs[1] }] }),
            w.post('/v1/keys.setPermissions', { keyId, permissions: [{ slug: slugs[2] }, { slug: slugs[3] }] }),
          ]);
          assert.equal(ra.status, 200, ra.body);
          assert.equal(rb.status, 200, rb.body);
          const got = JSON.stringify(await directPermissions(w, keyId));
          assert.ok(got === JSON.stringify(slugs.slice(0, 2)) || got === JSON.stringify(slugs.slice(2)), `mixed set ${got}`);
        }
      });

      securityTests(() => w, {
        permission: 'rbac.*.add_permission_to_key',
        request: async () => ({
          method: 'POST',
          path: '/v1/keys.setPermissions',
          body: { keyId: (await w.createKey({ apiId })).keyId, permissions: [{ slug: 'sec', create: true }] },
        }),
        foreign: async (_w, other) => {
          const { keyId } = await w.createKey({ apiId: await w.createApi('foreign', other.root) }, other.root);
          return { method: 'POST', path: '/v1/keys.setPermissions', body: { keyId, permissions: [{ slug: 'sec', create: true }] } };
        },
      });
    });
  });
}
