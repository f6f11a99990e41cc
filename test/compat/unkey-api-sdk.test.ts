import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Unkey, and, or } from '@unkey/api';
import { DIALECTS, OPERATOR } from '../helpers/harness.ts';
import { startKeyhold, type KeyholdServer } from '../helpers/unkey-server.ts';
import { expectV1, expectV1Error, sdkStyleCall } from '../helpers/unkey-sdk.ts';
import { drain } from '../helpers/migrations.ts';
import { createMigration } from '../../src/services/migrations/migration-records.ts';

// Issue 11: Unkey's own v1 SDK, @unkey/api 0.38, pointed at Keyhold with `baseUrl`, unmodified. Every method of
// the SDK is called over real HTTP and its `result` is checked against the shape the SDK's own OpenAPI types declare
// (test/helpers/unkey-shapes.ts). Roles, permissions, identities and rate limits: unkey-api-sdk-rbac.test.ts;
// verification analytics: unkey-api-sdk-analytics.test.ts.

const sha256 = (s: string) => createHash('sha256').update(s).digest('base64');

for (const dialect of DIALECTS) {
  describe(`@unkey/api 0.38 against Keyhold: keys, apis, migrations, errors (${dialect})`, () => {
    let server: KeyholdServer;
    let unkey: Unkey;
    let apiId: string;
    before(async () => {
      server = await startKeyhold(dialect);
      // retry.attempts 0: a 5xx fails the test at once instead of after the SDK's five back-offs.
      unkey = new Unkey({ rootKey: server.root, baseUrl: server.baseUrl, retry: { attempts: 0 } });
      apiId = expectV1(await unkey.apis.create({ name: 'sdk-api' }), 'apis.createApi', 'post').apiId;
    });
    after(() => server.close());

    test('apis.create, apis.get', async () => {
      const created = expectV1(await unkey.apis.create({ name: 'sdk-get' }), 'apis.createApi', 'post');
      const api = expectV1(await unkey.apis.get({ apiId: created.apiId }), 'apis.getApi', 'get');
      assert.deepEqual(api, { id: created.apiId, name: 'sdk-get', workspaceId: server.workspaceId });
    });

    test('keys.create, keys.get (with decrypt), keys.verify, keys.update, keys.updateRemaining, keys.delete', async () => {
      const { key, keyId } = expectV1(
        await unkey.keys.create({
          apiId,
          prefix: 'sdk',
          name: 'sdk key',
          externalId: 'user_sdk',
          meta: { plan: 'pro' },
          remaining: 10,
          refill: { interval: 'monthly', amount: 10, refillDay: 3 },
          ratelimit: { async: false, type: 'consistent', limit: 50, duration: 60_000 },
          roles: ['sdk-reader'],
          permissions: ['sdk.read'],
          enabled: true,
          recoverable: true,
          environment: 'test',
          expires: Date.now() + 3_600_000,
        }),
        'keys.createKey',
        'post',
      );
      assert.match(key, /^sdk_/);
      const got = expectV1(await unkey.keys.get({ keyId, decrypt: true }), 'keys.getKey', 'get');
      assert.equal(got.id, keyId);
      assert.equal(got.apiId, apiId);
      assert.equal(got.plaintext, key);
      // The SDK sends decrypt=false as the string "false": no plaintext (v1 read any non-empty string as true).
      assert.equal(expectV1(await unkey.keys.get({ keyId, decrypt: false }), 'keys.getKey', 'get').plaintext, undefined);
      assert.equal(got.remaining, 10);
      assert.deepEqual(got.refill && { interval: got.refill.interval, amount: got.refill.amount }, { interval: 'monthly', amount: 10 });
      assert.deepEqual([got.ratelimit?.limit, got.ratelimit?.duration], [50, 60_000]);
      assert.equal(got.identity?.externalId, 'user_sdk');
      assert.deepEqual(got.roles, ['sdk-reader']);

      const verified = expectV1(
        await unkey.keys.verify({ key, apiId, authorization: { permissions: or('sdk.read', and('sdk.write', 'sdk.admin')) } }),
        'keys.verifyKey',
        'post',
      );
      assert.deepEqual([verified.valid, verified.code, verified.keyId, verified.remaining], [true, 'VALID', keyId, 9]);
      assert.equal(verified.identity?.externalId, 'user_sdk');
      const denied = expectV1(await unkey.keys.verify({ key, authorization: { permissions: 'sdk.write' } }), 'keys.verifyKey', 'post');
      assert.deepEqual([denied.valid, denied.code], [false, 'INSUFFICIENT_PERMISSIONS']);
      // verifyKey's own client sends `Authorization: Bearer public`, which keys.verifyKey ignores.
      const anonymous = new Unkey({ rootKey: 'public', baseUrl: server.baseUrl, retry: { attempts: 0 } });
      const spent = expectV1(await anonymous.keys.verify({ key, remaining: { cost: 2 } }), 'keys.verifyKey', 'post');
      assert.deepEqual([spent.valid, spent.remaining], [true, 7]);

      expectV1(
        await unkey.keys.update({ keyId, name: 'renamed', meta: null, expires: null, ratelimit: null, enabled: true, externalId: null }),
        'keys.updateKey',
        'post',
      );
      const updated = expectV1(await unkey.keys.get({ keyId }), 'keys.getKey', 'get');
      assert.deepEqual(
        [updated.name, updated.meta, updated.expires, updated.ratelimit, updated.identity],
        ['renamed', undefined, undefined, undefined, undefined],
      );

      const inc = expectV1(await unkey.keys.updateRemaining({ keyId, op: 'increment', value: 5 }), 'keys.updateRemaining', 'post');
      assert.equal(inc.remaining, 12);
      // Deliberate: a key with a refill keeps a number of credits (v1 would make it unlimited and keep the refill).
      expectV1Error(await unkey.keys.updateRemaining({ keyId, op: 'set', value: null }), 'BAD_REQUEST');
      expectV1(await unkey.keys.update({ keyId, refill: null }), 'keys.updateKey', 'post');
      const unlimited = expectV1(await unkey.keys.updateRemaining({ keyId, op: 'set', value: null }), 'keys.updateRemaining', 'post');
      assert.equal(unlimited.remaining, null);

      expectV1(await unkey.keys.delete({ keyId }), 'keys.deleteKey', 'post');
      const gone = expectV1(await unkey.keys.verify({ key }), 'keys.verifyKey', 'post');
      assert.deepEqual([gone.valid, gone.code], [false, 'NOT_FOUND']);
      expectV1Error(await unkey.keys.get({ keyId }), 'NOT_FOUND');
    });

    test('keys.whoami (no SDK method: sent as the SDK sends requests), keys.delete permanent', async () => {
      const { key, keyId } = expectV1(await unkey.keys.create({ apiId, name: 'who', meta: { a: 1 } }), 'keys.createKey', 'post');
      const who = expectV1(
        await sdkStyleCall<{ id: string; name?: string }>(server.baseUrl, server.root, 'keys.whoami', { key }),
        'keys.whoami',
        'post',
      );
      assert.deepEqual([who.id, who.name], [keyId, 'who']);
      expectV1(await unkey.keys.delete({ keyId, permanent: true }), 'keys.deleteKey', 'post');
      expectV1Error(await sdkStyleCall(server.baseUrl, server.root, 'keys.whoami', { key }), 'NOT_FOUND');
    });

    test('apis.listKeys (pages, externalId, decrypt, revalidateKeysCache), apis.deleteKeys (no SDK method), apis.delete', async () => {
      const list = expectV1(await unkey.apis.create({ name: 'sdk-list' }), 'apis.createApi', 'post').apiId;
      const ids: string[] = [];
      for (const externalId of ['user_a', 'user_a', 'user_b'])
        ids.push(expectV1(await unkey.keys.create({ apiId: list, externalId, recoverable: true }), 'keys.createKey', 'post').keyId);
      const first = expectV1(await unkey.apis.listKeys({ apiId: list, limit: 2, revalidateKeysCache: true }), 'apis.listKeys', 'get');
      assert.equal(first.total, 3);
      assert.ok(first.cursor, 'a cursor to the next page');
      const second = expectV1(await unkey.apis.listKeys({ apiId: list, limit: 2, cursor: first.cursor }), 'apis.listKeys', 'get');
      assert.deepEqual([...first.keys, ...second.keys].map((k) => k.id).sort(), [...ids].sort());
      const mine = expectV1(await unkey.apis.listKeys({ apiId: list, externalId: 'user_a', decrypt: true }), 'apis.listKeys', 'get');
      assert.equal(mine.keys.length, 2);
      assert.ok(mine.keys.every((k) => typeof k.plaintext === 'string'));

      const deleted = expectV1(
        await sdkStyleCall<{ deletedKeys: number }>(server.baseUrl, server.root, 'apis.deleteKeys', { apiId: list }),
        'apis.deleteKeys',
        'post',
      );
      assert.equal(deleted.deletedKeys, 3);
      assert.deepEqual(expectV1(await unkey.apis.listKeys({ apiId: list }), 'apis.listKeys', 'get').keys, []);
      expectV1(await unkey.apis.delete({ apiId: list }), 'apis.deleteApi', 'post');
      expectV1Error(await unkey.apis.get({ apiId: list }), 'NOT_FOUND');
    });

    test('migrations.createKeys (hash and plaintext), migrations.enqueueKeys (202)', async () => {
      const plaintext = `legacy_${Date.now()}_plain`;
      const hashed = `legacy_${Date.now()}_hashed`;
      const { keyIds } = expectV1(
        await unkey.migrations.createKeys([
          { apiId, plaintext, name: 'plain', externalId: 'user_migrated', enabled: true },
          { apiId, hash: { value: sha256(hashed), variant: 'sha256_base64' }, start: 'lega', remaining: 5 },
        ]),
        'migrations.createKeys',
        'post',
      );
      assert.equal(keyIds.length, 2);
      for (const key of [plaintext, hashed]) assert.equal(expectV1(await unkey.keys.verify({ key }), 'keys.verifyKey', 'post').valid, true);

      const { migrationId } = await createMigration(server.store.db, server.workspaceId, 'sdk', OPERATOR);
      const queued = `legacy_${Date.now()}_queued`;
      expectV1(
        await unkey.migrations.enqueueKeys({ migrationId, apiId, keys: [{ hash: { value: sha256(queued), variant: 'sha256_base64' } }] }),
        'migrations.enqueueKeys',
        'post',
        '202',
      );
      await drain(server.store); // the worker of the server process, run here until the queue is empty
      assert.equal(expectV1(await unkey.keys.verify({ key: queued }), 'keys.verifyKey', 'post').valid, true);
    });

    test('errors reach the SDK with code, message, docs and requestId', async () => {
      expectV1Error(await unkey.keys.get({ keyId: 'key_unknown' }), 'NOT_FOUND');
      expectV1Error(await unkey.apis.create({ name: 'ab' }), 'BAD_REQUEST');
      const stranger = new Unkey({ rootKey: 'kh_root_1111111111111111111111111', baseUrl: server.baseUrl, retry: { attempts: 0 } });
      expectV1Error(await stranger.apis.get({ apiId }), 'UNAUTHORIZED');
      const reader = new Unkey({ rootKey: await server.rootKey(['api.*.read_api']), baseUrl: server.baseUrl, retry: { attempts: 0 } });
      const denied = expectV1Error(await reader.apis.create({ name: 'not-allowed' }), 'INSUFFICIENT_PERMISSIONS');
      assert.match(denied.message, /api\.\*\.create_api/);
      expectV1(await unkey.permissions.createPermission({ name: 'sdk.dup' }), 'permissions.createPermission', 'post');
      expectV1Error(await unkey.permissions.createPermission({ name: 'sdk.dup' }), 'CONFLICT');
    });
  });
}
