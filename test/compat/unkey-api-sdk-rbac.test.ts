import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Unkey } from '@unkey/api';
import { DIALECTS } from '../helpers/harness.ts';
import { startKeyhold, type KeyholdServer } from '../helpers/unkey-server.ts';
import { expectV1, expectV1Error } from '../helpers/unkey-sdk.ts';

// Issue 11, continued from unkey-api-sdk.test.ts: @unkey/api 0.38's permissions.*, identities.*, ratelimits.* and the
// keys.* methods that connect roles and permissions, against Keyhold over real HTTP, each result checked against the
// shape of the SDK's own OpenAPI types.

const names = (items: Array<{ name: string }>) => items.map((i) => i.name).sort();

for (const dialect of DIALECTS) {
  describe(`@unkey/api 0.38 against Keyhold: permissions, identities, ratelimits (${dialect})`, () => {
    let server: KeyholdServer;
    let unkey: Unkey;
    let apiId: string;
    before(async () => {
      server = await startKeyhold(dialect);
      unkey = new Unkey({ rootKey: server.root, baseUrl: server.baseUrl, retry: { attempts: 0 } });
      apiId = expectV1(await unkey.apis.create({ name: 'sdk-rbac' }), 'apis.createApi', 'post').apiId;
    });
    after(() => server.close());

    test('permissions.createPermission, getPermission, listPermissions, deletePermission', async () => {
      const { permissionId } = expectV1(
        await unkey.permissions.createPermission({ name: 'documents.read', description: 'Read documents' }),
        'permissions.createPermission',
        'post',
      );
      const got = expectV1(await unkey.permissions.getPermission({ permissionId }), 'permissions.getPermission', 'get');
      assert.deepEqual(got, { id: permissionId, name: 'documents.read', slug: 'documents.read', description: 'Read documents' });
      const slugged = expectV1(
        await unkey.permissions.createPermission({ name: 'documents_write', slug: 'documents.write' }),
        'permissions.createPermission',
        'post',
      );
      const all = expectV1(await unkey.permissions.listPermissions(), 'permissions.listPermissions', 'get');
      assert.ok(Array.isArray(all), 'a bare array, as in v1');
      assert.deepEqual(all.map((p) => p.slug).sort(), ['documents.read', 'documents.write']);
      expectV1(await unkey.permissions.deletePermission({ permissionId: slugged.permissionId }), 'permissions.deletePermission', 'post');
      expectV1Error(await unkey.permissions.getPermission({ permissionId: slugged.permissionId }), 'NOT_FOUND');
    });

    test('permissions.createRole, getRole, listRoles, deleteRole', async () => {
      const { roleId } = expectV1(
        await unkey.permissions.createRole({ name: 'editor', description: 'Edits' }),
        'permissions.createRole',
        'post',
      );
      const got = expectV1(await unkey.permissions.getRole({ roleId }), 'permissions.getRole', 'get');
      assert.deepEqual([got.id, got.name, got.description], [roleId, 'editor', 'Edits']);
      const other = expectV1(await unkey.permissions.createRole({ name: 'viewer' }), 'permissions.createRole', 'post');
      const all = expectV1(await unkey.permissions.listRoles(), 'permissions.listRoles', 'get');
      assert.ok(Array.isArray(all), 'a bare array, as in v1');
      assert.deepEqual(names(all), ['editor', 'viewer']);
      expectV1(await unkey.permissions.deleteRole({ roleId: other.roleId }), 'permissions.deleteRole', 'post');
      expectV1Error(await unkey.permissions.getRole({ roleId: other.roleId }), 'NOT_FOUND');
    });

    test('keys.addPermissions, removePermissions, setPermissions', async () => {
      const { key, keyId } = expectV1(await unkey.keys.create({ apiId }), 'keys.createKey', 'post');
      const added = expectV1(
        await unkey.keys.addPermissions({
          keyId,
          permissions: [
            { name: 'p.one', create: true },
            { name: 'p.two', create: true },
          ],
        }),
        'keys.addPermissions',
        'post',
      );
      assert.deepEqual(names(added), ['p.one', 'p.two']);
      const removed = expectV1(
        await unkey.keys.removePermissions({ keyId, permissions: [{ name: 'p.one' }, { id: added.find((p) => p.name === 'p.two')!.id }] }),
        'keys.removePermissions',
        'post',
      );
      assert.deepEqual(removed, {});
      assert.deepEqual(expectV1(await unkey.keys.get({ keyId }), 'keys.getKey', 'get').permissions, []);
      const set = expectV1(
        await unkey.keys.setPermissions({ keyId, permissions: [{ slug: 'p.one' }, { name: 'p.three', create: true }] }),
        'keys.setPermissions',
        'post',
      );
      assert.deepEqual(names(set), ['p.one', 'p.three']);
      const verified = expectV1(await unkey.keys.verify({ key, authorization: { permissions: 'p.three' } }), 'keys.verifyKey', 'post');
      assert.deepEqual([verified.valid, [...(verified.permissions ?? [])].sort()], [true, ['p.one', 'p.three']]);
    });

    test('keys.addRoles, removeRoles, setRoles', async () => {
      const { key, keyId } = expectV1(await unkey.keys.create({ apiId }), 'keys.createKey', 'post');
      const added = expectV1(
        await unkey.keys.addRoles({
          keyId,
          roles: [
            { name: 'r.one', create: true },
            { name: 'r.two', create: true },
          ],
        }),
        'keys.addRoles',
        'post',
      );
      assert.deepEqual(names(added), ['r.one', 'r.two']);
      const removed = expectV1(
        await unkey.keys.removeRoles({ keyId, roles: [{ name: 'r.one' }, { id: added.find((r) => r.name === 'r.two')!.id }] }),
        'keys.removeRoles',
        'post',
      );
      assert.deepEqual(removed, {});
      assert.deepEqual(expectV1(await unkey.keys.get({ keyId }), 'keys.getKey', 'get').roles, []);
      const set = expectV1(
        await unkey.keys.setRoles({ keyId, roles: [{ name: 'r.one' }, { name: 'r.three', create: true }] }),
        'keys.setRoles',
        'post',
      );
      assert.deepEqual(names(set), ['r.one', 'r.three']);
      const verified = expectV1(await unkey.keys.verify({ key }), 'keys.verifyKey', 'post');
      assert.deepEqual([...(verified.roles ?? [])].sort(), ['r.one', 'r.three']);
    });

    test('identities.create, get (by id and by externalId), list, update, delete', async () => {
      const ratelimits = [{ name: 'requests', limit: 10, duration: 60_000 }];
      const { identityId } = expectV1(
        await unkey.identities.create({ externalId: 'user_ident', meta: { tier: 'gold' }, ratelimits }),
        'identities.createIdentity',
        'post',
      );
      const byId = expectV1(await unkey.identities.get({ identityId }), 'identities.getIdentity', 'get');
      const v1Members = ({ id, externalId, meta, ratelimits }: typeof byId) => ({ id, externalId, meta, ratelimits });
      assert.deepEqual(v1Members(byId), { id: identityId, externalId: 'user_ident', meta: { tier: 'gold' }, ratelimits });
      const byExternal = expectV1(await unkey.identities.get({ externalId: 'user_ident' }), 'identities.getIdentity', 'get');
      assert.equal(byExternal.id, identityId);
      expectV1(await unkey.identities.create({ externalId: 'user_other' }), 'identities.createIdentity', 'post');
      const page = expectV1(await unkey.identities.list({ limit: 1 }), 'identities.listIdentities', 'get');
      assert.deepEqual([page.identities.length, page.total], [1, 2]);
      const rest = expectV1(await unkey.identities.list({ limit: 1, cursor: page.cursor }), 'identities.listIdentities', 'get');
      assert.deepEqual([...page.identities, ...rest.identities].map((i) => i.externalId).sort(), ['user_ident', 'user_other']);
      const updated = expectV1(
        await unkey.identities.update({
          identityId,
          meta: { tier: 'platinum' },
          ratelimits: [{ name: 'tokens', limit: 5, duration: 1000 }],
        }),
        'identities.updateIdentity',
        'post',
      );
      assert.deepEqual(v1Members(updated), {
        id: identityId,
        externalId: 'user_ident',
        meta: { tier: 'platinum' },
        ratelimits: [{ name: 'tokens', limit: 5, duration: 1000 }],
      });
      expectV1(await unkey.identities.delete({ identityId }), 'identities.deleteIdentity', 'post');
      expectV1Error(await unkey.identities.get({ identityId }), 'NOT_FOUND');
    });

    test('ratelimits.limit, setOverride, getOverride, listOverrides, deleteOverride', async () => {
      const limit = () => unkey.ratelimits.limit({ namespace: 'sdk-ns', identifier: 'user_1', limit: 2, duration: 3_600_000 });
      const first = expectV1(await limit(), 'ratelimits.limit', 'post');
      assert.deepEqual([first.success, first.limit, first.remaining], [true, 2, 1]);
      assert.ok(first.reset > Date.now());
      expectV1(await limit(), 'ratelimits.limit', 'post');
      assert.equal(expectV1(await limit(), 'ratelimits.limit', 'post').success, false);

      const { overrideId } = expectV1(
        await unkey.ratelimits.setOverride({ namespaceName: 'sdk-ns', identifier: 'vip_*', limit: 5, duration: 60_000, async: false }),
        'ratelimits.setOverride',
        'post',
      );
      const got = expectV1(
        await unkey.ratelimits.getOverride({ namespaceName: 'sdk-ns', identifier: 'vip_*' }),
        'ratelimits.getOverride',
        'get',
      );
      assert.deepEqual([got.id, got.identifier, got.limit, got.duration], [overrideId, 'vip_*', 5, 60_000]);
      const listed = expectV1(await unkey.ratelimits.listOverrides({ namespaceName: 'sdk-ns' }), 'ratelimits.listOverrides', 'get');
      assert.deepEqual([listed.total, listed.overrides.map((o) => o.id)], [1, [overrideId]]);
      const vip = await unkey.ratelimits.limit({ namespace: 'sdk-ns', identifier: 'vip_1', limit: 2, duration: 60_000, cost: 3 });
      assert.deepEqual([expectV1(vip, 'ratelimits.limit', 'post').limit, vip.result?.remaining], [5, 2]);
      expectV1(
        await unkey.ratelimits.deleteOverride({ namespaceName: 'sdk-ns', identifier: 'vip_*' }),
        'ratelimits.deleteOverride',
        'post',
      );
      expectV1Error(await unkey.ratelimits.getOverride({ namespaceName: 'sdk-ns', identifier: 'vip_*' }), 'NOT_FOUND');
      const empty = expectV1(await unkey.ratelimits.listOverrides({ namespaceName: 'sdk-ns' }), 'ratelimits.listOverrides', 'get');
      assert.deepEqual([empty.total, empty.overrides], [0, []]);
    });
  });
}
