import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Unkey as UnkeyV2 } from 'unkey-api-v2';
import { Unkey as UnkeyV1 } from '@unkey/api';
import { DIALECTS, OPERATOR } from '../helpers/harness.ts';
import { windowWithRoom } from '../helpers/timing.ts';
import { startKeyhold, type KeyholdServer } from '../helpers/unkey-server.ts';
import { expectV1 } from '../helpers/unkey-sdk.ts';
import { createMigration } from '../../src/services/migrations/migration-records.ts';

// Issue 14: Unkey's own v2 SDK, @unkey/api 2.5.1 (installed as `unkey-api-v2` beside the v1 SDK 0.38), pointed at
// Keyhold with `serverURL`, unmodified. The SDK parses every answer with its own zod schemas, so a call that
// resolves proves the shape; a refused call throws the SDK's typed error. The v1 SDK runs against the same server,
// on the same keys.

const hex = (s: string) => createHash('sha256').update(s).digest('hex');

for (const dialect of DIALECTS) {
  describe(`@unkey/api 2.5.1 and 0.38 against one Keyhold (${dialect})`, () => {
    let server: KeyholdServer;
    let v2: UnkeyV2;
    let v1: UnkeyV1;
    let apiId: string;
    before(async () => {
      server = await startKeyhold(dialect);
      v2 = new UnkeyV2({ rootKey: server.root, serverURL: server.baseUrl, retryConfig: { strategy: 'none' } });
      v1 = new UnkeyV1({ rootKey: server.root, baseUrl: server.baseUrl, retry: { attempts: 0 } });
      apiId = (await v2.apis.createApi({ name: 'sdk-v2' })).data.apiId;
    });
    after(() => server.close());

    test('apis: createApi, getApi, listKeys, deleteApi', async () => {
      const { data } = await v2.apis.createApi({ name: 'doomed-v2' });
      assert.deepEqual((await v2.apis.getApi({ apiId: data.apiId })).data, { id: data.apiId, name: 'doomed-v2' });
      await v2.keys.createKey({ apiId: data.apiId, name: 'one' });
      const listed = (await v2.apis.listKeys({ apiId: data.apiId, limit: 10 })).result;
      assert.equal(listed.data.length, 1);
      assert.equal(listed.pagination?.hasMore, false);
      await v2.apis.deleteApi({ apiId: data.apiId });
      await assert.rejects(v2.apis.getApi({ apiId: data.apiId }), (e: { statusCode?: number }) => e.statusCode === 404);
    });

    test('keys: createKey, getKey, whoami, verifyKey, updateKey, updateCredits, deleteKey; v1 reads and verifies the same key', async () => {
      const created = await v2.keys.createKey({
        apiId,
        prefix: 'sdk',
        name: 'v2 key',
        externalId: 'user_v2',
        meta: { plan: 'pro' },
        credits: { remaining: 10 },
        ratelimits: [{ name: 'requests', limit: 100, duration: 60_000, autoApply: true }],
        enabled: true,
      });
      const { key, keyId } = created.data;
      assert.match(key, /^sdk_/);
      const got = (await v2.keys.getKey({ keyId })).data;
      assert.equal(got.name, 'v2 key');
      assert.equal(got.credits?.remaining, 10);
      assert.equal((await v2.keys.whoami({ key })).data.keyId, keyId);

      const verified = (await v2.keys.verifyKey({ key })).data;
      assert.equal(verified.valid, true);
      assert.equal(verified.code, 'VALID');
      assert.equal(verified.credits, 9);

      const viaV1 = expectV1(await v1.keys.verify({ key, apiId }), 'keys.verifyKey', 'post');
      assert.equal(viaV1.valid, true);
      assert.equal(viaV1.remaining, 8);
      assert.equal(expectV1(await v1.keys.get({ keyId }), 'keys.getKey', 'get').name, 'v2 key');

      await v2.keys.updateKey({ keyId, name: 'renamed', enabled: false });
      assert.equal((await v2.keys.verifyKey({ key })).data.code, 'DISABLED');
      await v2.keys.updateKey({ keyId, enabled: true });
      await v2.keys.updateCredits({ keyId, operation: 'set', value: 3 });
      assert.equal((await v2.keys.getKey({ keyId })).data.credits?.remaining, 3);
      await v2.keys.updateCredits({ keyId, operation: 'increment', value: 2 });
      assert.equal((await v2.keys.getKey({ keyId })).data.credits?.remaining, 5);

      await v2.keys.deleteKey({ keyId });
      assert.equal((await v2.keys.verifyKey({ key })).data.code, 'NOT_FOUND');
    });

    test('a key made by the v1 SDK is read and verified by the v2 SDK', async () => {
      const { key, keyId } = expectV1(await v1.keys.create({ apiId, name: 'v1 key', remaining: 2 }), 'keys.createKey', 'post');
      assert.equal((await v2.keys.getKey({ keyId })).data.name, 'v1 key');
      const verified = (await v2.keys.verifyKey({ key, credits: { cost: 2 } })).data;
      assert.deepEqual([verified.valid, verified.credits], [true, 0]);
      assert.equal((await v2.keys.verifyKey({ key })).data.code, 'USAGE_EXCEEDED');
    });

    test('keys: permissions and roles', async () => {
      const { keyId, key } = (await v2.keys.createKey({ apiId })).data;
      await v2.permissions.createPermission({ name: 'documents.read', slug: 'documents.read' });
      const role = (await v2.permissions.createRole({ name: 'reader' })).data;
      await v2.keys.addPermissions({ keyId, permissions: ['documents.read'] });
      await v2.keys.addRoles({ keyId, roles: ['reader'] });
      assert.equal((await v2.keys.verifyKey({ key, permissions: 'documents.read' })).data.valid, true);
      assert.equal((await v2.keys.verifyKey({ key, permissions: 'documents.write' })).data.code, 'INSUFFICIENT_PERMISSIONS');
      await v2.keys.setPermissions({ keyId, permissions: [] });
      await v2.keys.removeRoles({ keyId, roles: ['reader'] });
      await v2.keys.setRoles({ keyId, roles: ['reader'] });
      await v2.keys.removePermissions({ keyId, permissions: ['documents.read'] });
      assert.deepEqual((await v2.keys.getKey({ keyId })).data.roles, ['reader']);
      assert.equal((await v2.permissions.getRole({ role: role.roleId })).data.name, 'reader');
    });

    test('keys.rerollKey: a new key with the old one’s attributes; the old one expires after the grace period', async () => {
      const old = (await v2.keys.createKey({ apiId, name: 'rolling', meta: { tier: 'gold' } })).data;
      const rolled = (await v2.keys.rerollKey({ keyId: old.keyId, expiration: 0 })).data;
      assert.notEqual(rolled.keyId, old.keyId);
      assert.equal((await v2.keys.getKey({ keyId: rolled.keyId })).data.name, 'rolling');
      assert.equal((await v2.keys.verifyKey({ key: rolled.key })).data.valid, true);
      assert.equal((await v2.keys.verifyKey({ key: old.key })).data.code, 'EXPIRED');
    });

    test('keys.migrateKeys and the lazy migration of a hex-hashed key', async () => {
      const { migrationId } = await createMigration(server.store.db, server.workspaceId, 'v2-sdk', OPERATOR, 'sha256_hex');
      const secret = 'legacy_key_0123456789abcdef';
      const migrated = (await v2.keys.migrateKeys({ migrationId, apiId, keys: [{ hash: hex(secret), name: 'legacy' }] })).data;
      assert.equal(migrated.migrated.length, 1);
      assert.equal((await v2.keys.verifyKey({ key: secret })).data.code, 'NOT_FOUND');
      assert.equal((await v2.keys.verifyKey({ key: secret, migrationId })).data.valid, true);
      assert.equal((await v2.keys.verifyKey({ key: secret })).data.valid, true);
    });

    test('identities and permissions', async () => {
      const { identityId } = (await v2.identities.createIdentity({ externalId: 'acme', meta: { plan: 'team' } })).data;
      assert.equal((await v2.identities.getIdentity({ identity: identityId })).data.externalId, 'acme');
      await v2.identities.updateIdentity({ identity: identityId, meta: { plan: 'enterprise' } });
      assert.ok((await v2.identities.listIdentities({ limit: 10 })).result.data.some((i) => i.id === identityId));
      await v2.identities.deleteIdentity({ identity: identityId });
      const { permissionId } = (await v2.permissions.createPermission({ name: 'billing.read', slug: 'billing.read' })).data;
      assert.equal((await v2.permissions.getPermission({ permission: permissionId })).data.slug, 'billing.read');
      assert.ok((await v2.permissions.listPermissions({})).result.data.some((p) => p.id === permissionId));
      const { roleId } = (await v2.permissions.createRole({ name: 'billing' })).data;
      assert.ok((await v2.permissions.listRoles({})).result.data.some((r) => r.id === roleId));
      await v2.permissions.deleteRole({ role: roleId });
      await v2.permissions.deletePermission({ permission: permissionId });
    });

    test('ratelimit: limit (counted with v1’s), multiLimit, overrides', async () => {
      await windowWithRoom(60_000, 5_000); // 2 a minute: the three calls in one window of the minute
      const first = (await v2.ratelimit.limit({ namespace: 'sdk-v2', identifier: 'u1', limit: 2, duration: 60_000 })).data;
      assert.equal(first.success, true);
      const viaV1 = expectV1(
        await v1.ratelimits.limit({ namespace: 'sdk-v2', identifier: 'u1', limit: 2, duration: 60_000 }),
        'ratelimits.limit',
        'post',
      );
      assert.equal(viaV1.success, true);
      assert.equal((await v2.ratelimit.limit({ namespace: 'sdk-v2', identifier: 'u1', limit: 2, duration: 60_000 })).data.success, false);
      const multi = await v2.ratelimit.multiLimit([
        { namespace: 'sdk-v2', identifier: 'u2', limit: 5, duration: 60_000 },
        { namespace: 'sdk-v2', identifier: 'u3', limit: 5, duration: 60_000 },
      ]);
      assert.equal(multi.data.passed, true);
      await v2.ratelimit.setOverride({ namespace: 'sdk-v2', identifier: 'vip', limit: 1000, duration: 60_000 });
      assert.equal((await v2.ratelimit.getOverride({ namespace: 'sdk-v2', identifier: 'vip' })).data.limit, 1000);
      assert.equal((await v2.ratelimit.listOverrides({ namespace: 'sdk-v2' })).result.data.length, 1);
      await v2.ratelimit.deleteOverride({ namespace: 'sdk-v2', identifier: 'vip' });
    });

    test('errors are the SDK’s typed errors: 404, 400 with its problems, 403', async () => {
      await assert.rejects(v2.keys.getKey({ keyId: 'key_missing' }), (e: { statusCode?: number }) => e.statusCode === 404);
      await assert.rejects(v2.apis.createApi({ name: 'x' }), (e: { statusCode?: number }) => e.statusCode === 400);
      const weak = new UnkeyV2({
        rootKey: await server.rootKey(['identity.*.read_identity']),
        serverURL: server.baseUrl,
        retryConfig: { strategy: 'none' },
      });
      await assert.rejects(weak.apis.createApi({ name: 'forbidden' }), (e: { statusCode?: number }) => e.statusCode === 403);
    });
  });
}
