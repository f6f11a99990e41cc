import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { keyRow, keyRowIfAny, snapshot } from '../../helpers/rows.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';
import { windowWithRoom } from '../../helpers/timing.ts';

/** What a key write touches: a failed one leaves every count as it was. */
const TABLES = [
  'keys',
  'encrypted_keys',
  'ratelimits',
  'identities',
  'roles',
  'permissions',
  'keys_roles',
  'keys_permissions',
  'audit_logs',
] as const;

type Created = { keyId: string; key: string };

for (const dialect of DIALECTS) {
  describe(`v2 keys.createKey, getKey, whoami, deleteKey (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('v2-keys');
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'admin' })).status, 200);
    });
    after(() => w.close());

    const create = async (body: Record<string, unknown>) => v2Data<Created>(await w.post('/v2/keys.createKey', { apiId, ...body }));
    const get = async (keyId: string, extra: Record<string, unknown> = {}) => v2Data(await w.post('/v2/keys.getKey', { keyId, ...extra }));

    test('createKey with every v2 member; getKey answers KeyResponseData', async () => {
      const { keyId, key } = await create({
        prefix: 'sk',
        name: 'billing',
        externalId: 'user_v2',
        meta: { plan: 'pro' },
        roles: ['admin'],
        permissions: ['docs.read', 'docs.write'],
        expires: 4_000_000_000_000,
        credits: { remaining: 10, refill: { interval: 'monthly', amount: 100, refillDay: 5 } },
        ratelimits: [
          { name: 'requests', limit: 10, duration: 60_000, autoApply: true },
          { name: 'tokens', limit: 1000, duration: 3_600_000, autoApply: false },
        ],
        enabled: true,
      });
      assert.match(keyId, /^key_/);
      assert.match(key, /^sk_/);
      const data = await get(keyId);
      const row = await keyRow(w, keyId);
      const identity = data.identity as unknown as Record<string, unknown>;
      const limits = data.ratelimits as unknown as Array<Record<string, unknown>>;
      assert.deepEqual(
        { ...data, identity: undefined, ratelimits: undefined },
        {
          keyId,
          start: row.start,
          enabled: true,
          createdAt: row.created_at,
          updatedAt: row.updated_at,
          name: 'billing',
          meta: { plan: 'pro' },
          expires: 4_000_000_000_000,
          credits: { remaining: 10, refill: { interval: 'monthly', amount: 100, refillDay: 5 } },
          permissions: ['docs.read', 'docs.write'],
          roles: ['admin'],
          identity: undefined,
          ratelimits: undefined,
        },
      );
      assert.equal(identity.externalId, 'user_v2');
      assert.equal(identity.id, (await keyRow(w, keyId)).identity_id);
      assert.equal(identity.meta, undefined, 'an empty meta is left out');
      for (const l of limits) assert.match(String(l.id), /^rl_/);
      assert.deepEqual(
        limits.map(({ id, ...rest }) => rest),
        [
          { name: 'requests', limit: 10, duration: 60_000, autoApply: true },
          { name: 'tokens', limit: 1000, duration: 3_600_000, autoApply: false },
        ],
      );
    });

    test('a minimal key omits every empty member (never null)', async () => {
      const { keyId } = await create({});
      const data = await get(keyId);
      assert.deepEqual(Object.keys(data).sort(), ['createdAt', 'enabled', 'keyId', 'start', 'updatedAt']);
    });

    test('credits.remaining 0 is allowed; null is unlimited (no credits member); a daily refill has no day', async () => {
      const zero = await create({ credits: { remaining: 0 } });
      assert.deepEqual((await get(zero.keyId)).credits, { remaining: 0 });
      const unlimited = await create({ credits: { remaining: null } });
      assert.equal((await get(unlimited.keyId)).credits, undefined);
      const daily = await create({ credits: { remaining: 5, refill: { interval: 'daily', amount: 5 } } });
      assert.deepEqual((await get(daily.keyId)).credits, { remaining: 5, refill: { interval: 'daily', amount: 5 } });
    });

    test('a key created through v2 is read by v1 getKey and verified by v1 keys.verifyKey', async () => {
      const { keyId, key } = await create({
        externalId: 'user_cross',
        permissions: ['docs.read'],
        credits: { remaining: 2 },
        ratelimits: [{ name: 'default', limit: 1, duration: 60_000, autoApply: true }],
      });
      const v1 = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(v1.status, 200, v1.body);
      assert.equal(v1.json.remaining, 2);
      assert.equal(v1.json.externalId, 'user_cross');
      assert.deepEqual(v1.json.permissions, ['docs.read']);
      assert.deepEqual(v1.json.ratelimit, {
        async: false,
        type: 'consistent',
        limit: 1,
        duration: 60_000,
        refillRate: 1,
        refillInterval: 60_000,
      });
      assert.equal(v1.json.ratelimits, undefined, 'v1 shows only its own members');
      assert.deepEqual(Object.keys(v1.json.identity).sort(), ['externalId', 'id', 'meta']);
      // 1 a minute, in windows aligned to the minute: both verifications must fall in one window.
      await windowWithRoom(60_000, 5_000);
      const first = await w.post('/v1/keys.verifyKey', { key, authorization: { permissions: 'docs.read' } }, null);
      assert.equal(first.json.valid, true, first.body);
      assert.equal(first.json.remaining, 1);
      const second = await w.post('/v1/keys.verifyKey', { key }, null);
      assert.equal(second.json.code, 'RATE_LIMITED', 'the `default` limit of v2 is v1 ratelimit');
    });

    test('a key created through v1 is read by v2 getKey', async () => {
      const { keyId } = await w.createKey({
        apiId,
        name: 'v1-made',
        ownerId: 'owner_v1',
        remaining: 7,
        refill: { interval: 'monthly', amount: 7 },
        ratelimit: { async: true, limit: 3, duration: 1000 },
        roles: ['admin'],
      });
      const data = await get(keyId);
      assert.equal(data.name, 'v1-made');
      assert.deepEqual(data.credits, { remaining: 7, refill: { interval: 'monthly', amount: 7, refillDay: 1 } });
      assert.deepEqual(data.roles, ['admin']);
      assert.equal((data.identity as unknown as { externalId: string }).externalId, 'owner_v1');
      const [limit] = data.ratelimits as unknown as Array<Record<string, unknown>>;
      assert.deepEqual({ ...limit, id: undefined }, { id: undefined, name: 'default', limit: 3, duration: 1000, autoApply: true });
    });

    test('recoverable keys: getKey decrypt returns plaintext; others have none', async () => {
      const { keyId, key } = await create({ recoverable: true });
      assert.equal((await get(keyId, { decrypt: true })).plaintext, key);
      assert.equal((await get(keyId)).plaintext, undefined);
      const plain = await create({});
      assert.equal((await get(plain.keyId, { decrypt: true })).plaintext, undefined);
    });

    test('createKey problems are 400s at v2 paths and write nothing', async () => {
      const before = await snapshot(w, TABLES);
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{ credits: { remaining: null, refill: { interval: 'daily', amount: 1 } } }, ['/credits/refill']],
        [{ credits: { remaining: 1, refill: { interval: 'monthly', amount: 1 } } }, ['/credits/refill/refillDay']],
        [{ credits: { remaining: 1, refill: { interval: 'daily', amount: 1, refillDay: 3 } } }, ['/credits/refill/refillDay']],
        [
          {
            ratelimits: [
              { name: 'dup', limit: 1, duration: 1000, autoApply: true },
              { name: 'dup', limit: 2, duration: 1000, autoApply: true },
            ],
          },
          ['/ratelimits/1/name'],
        ],
        [
          { ratelimits: [{ name: 'x', limit: 1, duration: 999 }] },
          ['/ratelimits/0/autoApply', '/ratelimits/0/duration', '/ratelimits/0/name'],
        ],
        [{ prefix: 'bad prefix', byteLength: 8 }, ['/byteLength', '/prefix']],
        [{ externalId: 'with space', expires: 4_102_444_800_001 }, ['/expires', '/externalId']],
      ];
      for (const [body, locations] of cases) {
        const res = await w.post('/v2/keys.createKey', { apiId, ...body });
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res).sort(), locations, JSON.stringify(body));
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('an unknown role is a 404 role_not_found (roles are never created) and writes nothing', async () => {
      const before = await snapshot(w, TABLES);
      const res = await w.post('/v2/keys.createKey', { apiId, roles: ['admin', 'ghost'], permissions: ['new.perm'], externalId: 'nobody' });
      assertV2Error(res, 404, 'unkey/data/role_not_found');
      assert.match(res.json.error.detail, /ghost/);
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('unknown API → 404; a missing create right is masked as the same 404', async () => {
      const missing = await w.post('/v2/keys.createKey', { apiId: 'api_missing' });
      assertV2Error(missing, 404, 'unkey/data/api_not_found');
      const reader = await w.rootKey(['api.*.read_key']);
      const hidden = await w.post('/v2/keys.createKey', { apiId }, reader);
      assertV2Error(hidden, 404, 'unkey/data/api_not_found');
      const creator = await w.rootKey([`api.${apiId}.create_key`]);
      const noEncrypt = await w.post('/v2/keys.createKey', { apiId, recoverable: true }, creator);
      assertV2Error(noEncrypt, 404, 'unkey/data/api_not_found');
      // The create right for permissions is Keyhold's own rule: a 403 naming it, not hidden.
      const noCreatePermission = await w.post('/v2/keys.createKey', { apiId, permissions: ['brand.new'] }, creator);
      assertV2Error(noCreatePermission, 403, 'unkey/authorization/insufficient_permissions');
      assert.match(noCreatePermission.json.error.detail, /rbac\.\*\.create_permission/);
    });

    test('getKey: unknown key 404; decrypt without the right 403', async () => {
      assertV2Error(await w.post('/v2/keys.getKey', { keyId: 'key_missing' }), 404, 'unkey/data/key_not_found');
      const { keyId } = await create({ recoverable: true });
      const reader = await w.rootKey(['api.*.read_key']);
      assertV2Error(await w.post('/v2/keys.getKey', { keyId, decrypt: true }, reader), 403, 'unkey/authorization/insufficient_permissions');
      assertV2Error(await w.post('/v2/keys.getKey', { keyId: 'k' }), 400, 'unkey/application/invalid_input');
    });

    test('whoami describes the key of a plaintext (sorted permissions, never plaintext), without spending it', async () => {
      const { keyId, key } = await create({
        permissions: ['b.perm', 'a.perm'],
        credits: { remaining: 1 },
        recoverable: true,
        enabled: false,
      });
      const data = v2Data(await w.post('/v2/keys.whoami', { key }));
      assert.equal(data.keyId, keyId);
      assert.equal(data.enabled, false);
      assert.deepEqual(data.permissions, ['a.perm', 'b.perm']);
      assert.deepEqual(data.credits, { remaining: 1 });
      assert.equal(data.plaintext, undefined);
      assertV2Error(await w.post('/v2/keys.whoami', { key: 'sk_not_a_key' }), 404, 'unkey/data/key_not_found');
      const hidden = await w.post('/v2/keys.whoami', { key }, await w.rootKey(['api.*.update_key']));
      assertV2Error(hidden, 404, 'unkey/data/key_not_found');
      assert.equal(hidden.json.error.detail, (await w.post('/v2/keys.whoami', { key: 'sk_not_a_key' })).json.error.detail);
    });

    test('deleteKey soft by default, permanent removes the row; a second delete is a 404', async () => {
      const soft = await create({});
      assert.deepEqual(v2Data(await w.post('/v2/keys.deleteKey', { keyId: soft.keyId })), {});
      assert.ok((await keyRow(w, soft.keyId)).deleted_at);
      assertV2Error(await w.post('/v2/keys.deleteKey', { keyId: soft.keyId }), 404, 'unkey/data/key_not_found');
      assertV2Error(await w.post('/v2/keys.getKey', { keyId: soft.keyId }), 404, 'unkey/data/key_not_found');
      const hard = await create({ ratelimits: [{ name: 'per-second', limit: 1, duration: 1000, autoApply: true }] });
      v2Data(await w.post('/v2/keys.deleteKey', { keyId: hard.keyId, permanent: true }));
      assert.equal(await keyRowIfAny(w, hard.keyId), undefined);
      const verified = await w.post('/v1/keys.verifyKey', { key: hard.key }, null);
      assert.equal(verified.json.code, 'NOT_FOUND');
      const kept = await create({});
      const reader = await w.rootKey(['api.*.read_key']);
      const before = await snapshot(w, TABLES);
      const row = await keyRow(w, kept.keyId);
      assertV2Error(await w.post('/v2/keys.deleteKey', { keyId: kept.keyId }, reader), 403, 'unkey/authorization/insufficient_permissions');
      assertV2Error(await w.post('/v2/keys.deleteKey', { keyId: 'key_missing', permanent: true }), 404, 'unkey/data/key_not_found');
      assert.deepEqual(await snapshot(w, TABLES), before);
      assert.deepEqual(await keyRow(w, kept.keyId), row);
    });

    describe('security: keys.createKey', () =>
      v2SecurityTests(() => w, {
        path: '/v2/keys.createKey',
        body: async () => ({ apiId }),
        permission: 'create_key',
        masked: 'unkey/data/api_not_found',
        foreign: { body: async (w, other) => ({ apiId: await w.createApi('theirs', other.root) }), type: 'unkey/data/api_not_found' },
      }));
    const foreignKey = async (w: World, other: { root: string }) => {
      const theirApi = await w.createApi('theirs', other.root);
      return w.createKey({ apiId: theirApi }, other.root);
    };
    describe('security: keys.getKey', () =>
      v2SecurityTests(() => w, {
        path: '/v2/keys.getKey',
        body: async () => ({ keyId: (await create({})).keyId }),
        permission: 'read_key',
        foreign: { body: async (w, other) => ({ keyId: (await foreignKey(w, other)).keyId }), type: 'unkey/data/key_not_found' },
      }));
    describe('security: keys.whoami', () =>
      v2SecurityTests(() => w, {
        path: '/v2/keys.whoami',
        body: async () => ({ key: (await create({})).key }),
        permission: 'read_key',
        masked: 'unkey/data/key_not_found',
        foreign: { body: async (w, other) => ({ key: (await foreignKey(w, other)).key }), type: 'unkey/data/key_not_found' },
      }));
    describe('security: keys.deleteKey', () =>
      v2SecurityTests(() => w, {
        path: '/v2/keys.deleteKey',
        body: async () => ({ keyId: (await create({})).keyId }),
        permission: 'delete_key',
        foreign: { body: async (w, other) => ({ keyId: (await foreignKey(w, other)).keyId }), type: 'unkey/data/key_not_found' },
      }));
  });
}
