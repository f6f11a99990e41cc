import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { paths } from '../../../helpers/errors.ts';
import { sha256b64 } from '../../../helpers/hashes.ts';
import { expectedChecksum } from '../../../helpers/formats.ts';
import { keyRow, rootKeyId, snapshot } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';
import { hashKey } from '../../../../src/crypto/keys.ts';

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const decode58 = (s: string): bigint => [...s].reduce((n, c) => n * 58n + BigInt(ALPHABET.indexOf(c)), 0n);

/** Every table a createKey may write: equal snapshots mean nothing was written. */
const TABLES = [
  'keys',
  'identities',
  'roles',
  'permissions',
  'keys_roles',
  'keys_permissions',
  'ratelimits',
  'encrypted_keys',
  'audit_logs',
] as const;
/** A keys.createKey answer. */
type Created = { keyId: string; key: string };
const auditOf = (w: World, targetId: string) =>
  w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', targetId).orderBy('id').execute();

for (const dialect of DIALECTS) {
  describe(`keys.createKey (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('keys-api');
    });
    after(() => w.close());

    test('hashKey matches the SPEC test vector', () => {
      assert.equal(hashKey('MVgWNsyPmv6VthC9moCNAPwS'), 'CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs=');
    });

    test('with a prefix: key is prefix_ + base58, start is prefix_ + 4 chars, only the sha256_base64 hash is stored', async () => {
      const res = await w.post<Created>('/v1/keys.createKey', { apiId, prefix: 'acme' });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(Object.keys(res.json).sort(), ['key', 'keyId']);
      assert.match(res.json.keyId, /^key_[1-9A-HJ-NP-Za-km-z]{22}$/);
      const { key, keyId } = res.json;
      assert.ok(key.startsWith('acme_'), key);
      assert.match(key.slice('acme_'.length), BASE58);
      const row = await keyRow(w, keyId);
      assert.equal(row.hash, sha256b64(key));
      assert.equal(row.start, key.slice(0, 'acme_'.length + 4));
      assert.equal(row.api_id, apiId);
      assert.equal(row.workspace_id, w.workspaceId);
      // The plaintext is stored nowhere: not in the key row, not in any audit record.
      assert.ok(!JSON.stringify(row).includes(key));
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().execute();
      assert.ok(!JSON.stringify(audit).includes(key));
      const got = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(got.status, 200, got.body);
      assert.equal(got.json.start, row.start);
      assert.ok(!JSON.stringify(got.json).includes(key));
    });

    test('without a prefix: key is bare base58 and start is its first 4 characters', async () => {
      for (const body of [{ apiId }, { apiId, prefix: '' }]) {
        const { key, keyId } = await w.createKey(body);
        assert.match(key, BASE58);
        const row = await keyRow(w, keyId);
        assert.equal(row.start, key.slice(0, 4));
        assert.equal(row.hash, sha256b64(key));
      }
    });

    test('a prefix of exactly 16 characters is accepted', async () => {
      const prefix = 'p'.repeat(16);
      const { key, keyId } = await w.createKey({ apiId, prefix });
      assert.ok(key.startsWith(`${prefix}_`));
      assert.equal((await keyRow(w, keyId)).start, key.slice(0, 21));
    });

    test('every key is different and every hash unique', async () => {
      const keys = await Promise.all(Array.from({ length: 10 }, () => w.createKey({ apiId, prefix: 'u' })));
      assert.equal(new Set(keys.map((k) => k.key)).size, 10);
      assert.equal(new Set(keys.map((k) => k.keyId)).size, 10);
    });

    test('byteLength sets the amount of randomness (default 16)', async () => {
      for (const [byteLength, bytes] of [
        [undefined, 16],
        [16, 16],
        [32, 32],
        [255, 255],
      ] as const) {
        for (let i = 0; i < 3; i++) {
          const { key } = await w.createKey({ apiId, prefix: 'bl', ...(byteLength ? { byteLength } : {}) });
          assert.equal(key.slice(-6), expectedChecksum(key.slice(0, -6)), 'the last 6 characters are the checksum');
          const random = key.slice('bl_'.length, -6);
          assert.match(random, BASE58);
          const n = decode58(random);
          // n is uniform below 2^(8·bytes): it fits in `bytes` bytes and (but for ~1e-7 odds) needs more than bytes-3.
          assert.ok(n < 1n << BigInt(8 * bytes), `${key} encodes more than ${bytes} bytes`);
          assert.ok(n >= 1n << BigInt(8 * (bytes - 3)), `${key} encodes fewer than ${bytes - 2} bytes`);
          assert.ok(random.length <= Math.ceil((8 * bytes) / Math.log2(58)), `${random.length} chars for ${bytes} bytes`);
        }
      }
    });

    test("the api's default prefix and byte length apply when the request gives none", async () => {
      const api = await w.createApi('defaults-api');
      await w.store.db.updateTable('apis').set({ default_prefix: 'dflt', default_bytes: 32 }).where('id', '=', api).execute();
      const { key, keyId } = await w.createKey({ apiId: api });
      assert.ok(key.startsWith('dflt_'), key);
      assert.equal((await keyRow(w, keyId)).start, key.slice(0, 'dflt_'.length + 4));
      assert.ok(decode58(key.slice(5, -6)) >= 1n << BigInt(8 * 29), `${key} should carry 32 random bytes`);
      const explicit = await w.createKey({ apiId: api, prefix: 'own', byteLength: 16 });
      assert.ok(explicit.key.startsWith('own_'), explicit.key);
      assert.ok(decode58(explicit.key.slice(4, -6)) < 1n << 128n);
    });

    test('every field is stored and read back through getKey', async () => {
      const t0 = Date.now();
      const body = {
        apiId,
        prefix: 'full',
        name: 'Full key',
        externalId: 'user_full',
        meta: { plan: 'pro', nested: { list: [1, 'two', { three: null }], flag: false }, unicode: 'ünï 🔑' },
        expires: t0 + 86_400_000,
        remaining: 50,
        refill: { interval: 'monthly', amount: 100 },
        ratelimit: { type: 'fast', limit: 10, duration: 60_000 },
        enabled: false,
        environment: 'staging',
        roles: ['full-admin'],
        permissions: ['documents.read'],
      };
      const { key, keyId } = await w.createKey(body);
      const t1 = Date.now();
      const got = await w.get<Loose<{ createdAt: number }>>('/v1/keys.getKey', { keyId });
      assert.equal(got.status, 200, got.body);
      assert.ok(got.json.createdAt >= t0 && got.json.createdAt <= t1, `createdAt ${got.json.createdAt} outside [${t0}, ${t1}]`);
      const identity = await w.store.db
        .selectFrom('identities')
        .selectAll()
        .where('external_id', '=', 'user_full')
        .executeTakeFirstOrThrow();
      assert.deepEqual(got.json, {
        id: keyId,
        start: key.slice(0, 'full_'.length + 4),
        apiId,
        workspaceId: w.workspaceId,
        name: 'Full key',
        ownerId: 'user_full',
        externalId: 'user_full',
        meta: body.meta,
        createdAt: got.json.createdAt,
        updatedAt: got.json.createdAt,
        expires: body.expires,
        remaining: 50,
        refill: { interval: 'monthly', amount: 100, refillDay: 1, lastRefillAt: got.json.createdAt },
        ratelimit: { async: true, type: 'fast', limit: 10, duration: 60_000, refillRate: 10, refillInterval: 60_000 },
        roles: ['full-admin'],
        permissions: ['documents.read'],
        enabled: false,
        environment: 'staging',
        identity: { id: identity.id, externalId: 'user_full', meta: {} },
      });
      const row = await keyRow(w, keyId);
      assert.equal(row.identity_id, identity.id);
      assert.equal(row.enabled, 0);
      assert.equal(row.refill_day, 1);
      assert.deepEqual(JSON.parse(row.meta!), body.meta);
    });

    test('a minimal key has only the mandatory fields; enabled defaults to true', async () => {
      const { key, keyId } = await w.createKey({ apiId });
      const got = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(got.status, 200, got.body);
      assert.deepEqual(got.json, {
        id: keyId,
        start: key.slice(0, 4),
        apiId,
        workspaceId: w.workspaceId,
        createdAt: got.json.createdAt,
        updatedAt: got.json.createdAt,
        roles: [],
        permissions: [],
        enabled: true,
      });
      const row = await keyRow(w, keyId);
      assert.deepEqual(
        [
          row.name,
          row.identity_id,
          row.meta,
          row.environment,
          row.expires_at,
          row.remaining,
          row.refill_interval,
          row.refill_amount,
          row.refill_day,
          row.last_refill_at,
          row.deleted_at,
        ],
        [null, null, null, null, null, null, null, null, null, null, null],
      );
      assert.equal(row.enabled, 1);
      const limits = await w.store.db.selectFrom('ratelimits').select('id').where('key_id', '=', keyId).execute();
      assert.equal(limits.length, 0);
    });

    test('enabled true/false and an empty meta object are stored as given', async () => {
      const on = await w.createKey({ apiId, enabled: true, meta: {} });
      const off = await w.createKey({ apiId, enabled: false });
      assert.equal((await w.get('/v1/keys.getKey', { keyId: on.keyId })).json.enabled, true);
      assert.deepEqual((await w.get('/v1/keys.getKey', { keyId: on.keyId })).json.meta, {});
      assert.equal((await w.get('/v1/keys.getKey', { keyId: off.keyId })).json.enabled, false);
      assert.equal((await keyRow(w, off.keyId)).enabled, 0);
    });

    test('refill: monthly keeps refillDay (default 1), daily has none; lastRefillAt is the creation time', async () => {
      const cases = [
        [{ interval: 'monthly', amount: 5 }, { interval: 'monthly', amount: 5, refillDay: 1 }, 1],
        [{ interval: 'monthly', amount: 7, refillDay: 31 }, { interval: 'monthly', amount: 7, refillDay: 31 }, 31],
        [{ interval: 'daily', amount: 3 }, { interval: 'daily', amount: 3 }, null],
      ] as const;
      for (const [refill, expected, day] of cases) {
        const { keyId } = await w.createKey({ apiId, remaining: 2, refill });
        const got = await w.get('/v1/keys.getKey', { keyId });
        assert.deepEqual(got.json.refill, { ...expected, lastRefillAt: got.json.createdAt });
        assert.equal(got.json.remaining, 2);
        const row = await keyRow(w, keyId);
        assert.equal(row.refill_day, day);
        assert.equal(row.refill_interval, refill.interval);
        assert.equal(row.refill_amount, refill.amount);
      }
    });

    test('ratelimit is stored as one auto-applied limit named default, from duration or refillInterval', async () => {
      const cases = [
        [
          { limit: 5, duration: 1000 },
          { async: false, type: 'consistent', limit: 5, duration: 1000, refillRate: 5, refillInterval: 1000 },
        ],
        [
          { type: 'consistent', limit: 100, duration: 3_600_000 },
          { async: false, type: 'consistent', limit: 100, duration: 3_600_000, refillRate: 100, refillInterval: 3_600_000 },
        ],
        [
          { async: true, limit: 10, refillRate: 3, refillInterval: 5000 },
          { async: true, type: 'fast', limit: 10, duration: 5000, refillRate: 10, refillInterval: 5000 },
        ],
        [
          { type: 'fast', limit: 2, duration: 2000, refillInterval: 9000 },
          { async: true, type: 'fast', limit: 2, duration: 2000, refillRate: 2, refillInterval: 2000 },
        ],
      ] as const;
      for (const [ratelimit, expected] of cases) {
        const { keyId } = await w.createKey({ apiId, ratelimit });
        const got = await w.get('/v1/keys.getKey', { keyId });
        assert.deepEqual(got.json.ratelimit, expected, JSON.stringify(ratelimit));
        const rows = await w.store.db.selectFrom('ratelimits').selectAll().where('key_id', '=', keyId).execute();
        assert.equal(rows.length, 1);
        assert.equal(rows[0].name, 'default');
        assert.equal(rows[0].auto_apply, 1);
        assert.equal(rows[0].identity_id, null);
        assert.equal(rows[0].workspace_id, w.workspaceId);
        assert.equal(rows[0].limit, expected.limit);
        assert.equal(rows[0].duration, expected.duration);
      }
    });

    test('externalId creates the identity once and later keys reuse it', async () => {
      const before = await snapshot(w, TABLES);
      const a = await w.createKey({ apiId, externalId: 'user_reuse' });
      const b = await w.createKey({ apiId, externalId: 'user_reuse' });
      const after = await snapshot(w, TABLES);
      assert.equal(after.identities, before.identities + 1);
      const identity = await w.store.db
        .selectFrom('identities')
        .selectAll()
        .where('external_id', '=', 'user_reuse')
        .executeTakeFirstOrThrow();
      assert.match(identity.id, /^id_/);
      assert.equal(identity.workspace_id, w.workspaceId);
      assert.equal(identity.environment, 'default');
      assert.equal((await keyRow(w, a.keyId)).identity_id, identity.id);
      assert.equal((await keyRow(w, b.keyId)).identity_id, identity.id);
      const got = await w.get('/v1/keys.getKey', { keyId: b.keyId });
      assert.deepEqual(got.json.identity, { id: identity.id, externalId: 'user_reuse', meta: {} });
      assert.equal(got.json.externalId, 'user_reuse');
      assert.equal(got.json.ownerId, 'user_reuse');
    });

    test('the same externalId in another workspace is another identity', async () => {
      const other = await w.otherWorkspace();
      const otherApi = await w.createApi('other-api', other.root);
      await w.createKey({ apiId, externalId: 'user_shared' });
      await w.createKey({ apiId: otherApi, externalId: 'user_shared' }, other.root);
      const identities = await w.store.db
        .selectFrom('identities')
        .select(['id', 'workspace_id'])
        .where('external_id', '=', 'user_shared')
        .execute();
      assert.deepEqual(identities.map((i) => i.workspace_id).sort(), [w.workspaceId, other.workspaceId].sort());
    });

    test('ownerId is an alias of externalId; externalId wins when both are given', async () => {
      const byOwner = await w.createKey({ apiId, ownerId: 'user_owner' });
      const byExternal = await w.createKey({ apiId, externalId: 'user_owner' });
      const ownerIdentity = await w.store.db
        .selectFrom('identities')
        .selectAll()
        .where('external_id', '=', 'user_owner')
        .executeTakeFirstOrThrow();
      assert.equal((await keyRow(w, byOwner.keyId)).identity_id, ownerIdentity.id);
      assert.equal((await keyRow(w, byExternal.keyId)).identity_id, ownerIdentity.id);
      const got = await w.get('/v1/keys.getKey', { keyId: byOwner.keyId });
      assert.equal(got.json.ownerId, 'user_owner');
      assert.equal(got.json.externalId, 'user_owner');

      const both = await w.createKey({ apiId, ownerId: 'user_loser', externalId: 'user_winner' });
      const winner = await w.store.db
        .selectFrom('identities')
        .selectAll()
        .where('external_id', '=', 'user_winner')
        .executeTakeFirstOrThrow();
      assert.equal((await keyRow(w, both.keyId)).identity_id, winner.id);
      const loser = await w.store.db.selectFrom('identities').select('id').where('external_id', '=', 'user_loser').execute();
      assert.equal(loser.length, 0, 'the ownerId that lost creates no identity');
      const gotBoth = await w.get('/v1/keys.getKey', { keyId: both.keyId });
      assert.equal(gotBoth.json.ownerId, 'user_winner');
      assert.equal(gotBoth.json.externalId, 'user_winner');
    });

    test('missing roles and permissions are created with rbac create rights, audited, and reused afterwards', async () => {
      const creator = await w.rootKey(['api.*.create_key', 'rbac.*.create_role', 'rbac.*.create_permission']);
      const creatorId = await rootKeyId(w, creator);
      const before = await snapshot(w, TABLES);
      const res = await w.post<Created>(
        '/v1/keys.createKey',
        { apiId, roles: ['editor', 'viewer', 'editor'], permissions: ['docs.write', 'docs.read'] },
        creator,
      );
      assert.equal(res.status, 200, res.body);
      const { keyId } = res.json;
      const after = await snapshot(w, TABLES);
      assert.equal(after.roles, before.roles + 2);
      assert.equal(after.permissions, before.permissions + 2);
      assert.equal(after.keys_roles, before.keys_roles + 2);
      assert.equal(after.keys_permissions, before.keys_permissions + 2);
      const got = await w.get('/v1/keys.getKey', { keyId });
      assert.deepEqual(got.json.roles, ['editor', 'viewer']);
      assert.deepEqual(got.json.permissions, ['docs.read', 'docs.write']);

      const roles = await w.store.db.selectFrom('roles').selectAll().where('name', 'in', ['editor', 'viewer']).orderBy('name').execute();
      const perms = await w.store.db
        .selectFrom('permissions')
        .selectAll()
        .where('slug', 'in', ['docs.read', 'docs.write'])
        .orderBy('slug')
        .execute();
      for (const r of roles) {
        assert.match(r.id, /^role_/);
        assert.equal(r.workspace_id, w.workspaceId);
      }
      for (const p of perms) {
        assert.match(p.id, /^perm_/);
        assert.equal(p.name, p.slug);
        assert.equal(p.workspace_id, w.workspaceId);
      }

      // Audit: one create per new role/permission, key.create, one connect per link — all with this request id and root key.
      const requestId = res.headers['x-request-id'];
      for (const r of roles)
        assert.deepEqual(
          (await auditOf(w, r.id)).map((a) => a.event),
          ['role.create'],
        );
      for (const p of perms)
        assert.deepEqual(
          (await auditOf(w, p.id)).map((a) => a.event),
          ['permission.create'],
        );
      const keyAudit = await auditOf(w, keyId);
      assert.deepEqual(keyAudit.map((a) => a.event).sort(), [
        'authorization.connect_permission_and_key',
        'authorization.connect_permission_and_key',
        'authorization.connect_role_and_key',
        'authorization.connect_role_and_key',
        'key.create',
      ]);
      const all = [...keyAudit, ...(await auditOf(w, roles[0].id)), ...(await auditOf(w, perms[0].id))];
      for (const a of all) {
        assert.equal(a.request_id, requestId);
        assert.equal(a.actor_type, 'root_key');
        assert.equal(a.actor_id, creatorId);
        assert.equal(a.workspace_id, w.workspaceId);
      }
      const connected = keyAudit
        .filter((a) => a.event === 'authorization.connect_role_and_key')
        .map((a) => JSON.parse(a.diff!).roleId)
        .sort();
      assert.deepEqual(connected, roles.map((r) => r.id).sort());
      const connectedPerms = keyAudit
        .filter((a) => a.event === 'authorization.connect_permission_and_key')
        .map((a) => JSON.parse(a.diff!).permissionId)
        .sort();
      assert.deepEqual(connectedPerms, perms.map((p) => p.id).sort());
      const created = JSON.parse(keyAudit.find((a) => a.event === 'key.create')!.diff!);
      assert.equal(created.apiId, apiId);

      // A second key with the same names creates nothing new and links the same rows.
      const again = await w.post<Created>(
        '/v1/keys.createKey',
        { apiId, roles: ['viewer', 'editor'], permissions: ['docs.read', 'docs.write'] },
        creator,
      );
      assert.equal(again.status, 200, again.body);
      const final = await snapshot(w, TABLES);
      assert.equal(final.roles, after.roles);
      assert.equal(final.permissions, after.permissions);
      assert.equal(final.keys_roles, after.keys_roles + 2);
      assert.equal(final.keys_permissions, after.keys_permissions + 2);
      const links = await w.store.db.selectFrom('keys_roles').select('role_id').where('key_id', '=', again.json.keyId).execute();
      assert.deepEqual(links.map((l) => l.role_id).sort(), roles.map((r) => r.id).sort());
    });

    test('existing roles and permissions connect with only create_key', async () => {
      await w.createKey({ apiId, roles: ['existing-role'], permissions: ['existing.perm'] });
      const onlyCreate = await w.rootKey(['api.*.create_key']);
      const before = await snapshot(w, TABLES);
      const res = await w.post<Created>(
        '/v1/keys.createKey',
        { apiId, roles: ['existing-role'], permissions: ['existing.perm'] },
        onlyCreate,
      );
      assert.equal(res.status, 200, res.body);
      const after = await snapshot(w, TABLES);
      assert.equal(after.roles, before.roles);
      assert.equal(after.permissions, before.permissions);
      const got = await w.get('/v1/keys.getKey', { keyId: res.json.keyId });
      assert.deepEqual(got.json.roles, ['existing-role']);
      assert.deepEqual(got.json.permissions, ['existing.perm']);
    });

    test('roles and permissions of another workspace are not used: same names are created in this one', async () => {
      const other = await w.otherWorkspace();
      const otherApi = await w.createApi('foreign-rbac', other.root);
      await w.createKey({ apiId: otherApi, roles: ['cross-ws-role'], permissions: ['cross.ws'] }, other.root);
      const onlyCreate = await w.rootKey(['api.*.create_key']);
      const denied = await w.post('/v1/keys.createKey', { apiId, roles: ['cross-ws-role'] }, onlyCreate);
      assert.equal(denied.status, 403, denied.body);
      const { keyId } = await w.createKey({ apiId, roles: ['cross-ws-role'], permissions: ['cross.ws'] });
      const roles = await w.store.db.selectFrom('roles').select(['id', 'workspace_id']).where('name', '=', 'cross-ws-role').execute();
      assert.equal(roles.length, 2);
      const link = await w.store.db.selectFrom('keys_roles').select('role_id').where('key_id', '=', keyId).executeTakeFirstOrThrow();
      assert.equal(roles.find((r) => r.id === link.role_id)!.workspace_id, w.workspaceId);
    });

    test('a missing role or permission without the rbac create right → 403 naming it, and nothing is written', async () => {
      await w.createKey({ apiId, roles: ['known-role'], permissions: ['known.perm'] });
      const cases = [
        [['api.*.create_key'], { roles: ['known-role', 'unknown-role'] }, ['rbac.*.create_role']],
        [['api.*.create_key'], { permissions: ['known.perm', 'unknown.perm'] }, ['rbac.*.create_permission']],
        [
          ['api.*.create_key', 'rbac.*.create_permission'],
          { roles: ['unknown-role'], permissions: ['unknown.perm'] },
          ['rbac.*.create_role'],
        ],
        [
          ['api.*.create_key', 'rbac.*.create_role'],
          { roles: ['unknown-role'], permissions: ['unknown.perm'] },
          ['rbac.*.create_permission'],
        ],
        [
          ['api.*.create_key'],
          { roles: ['unknown-role'], permissions: ['unknown.perm'] },
          ['rbac.*.create_role', 'rbac.*.create_permission'],
        ],
      ] as const;
      for (const [held, extra, named] of cases) {
        const key = await w.rootKey([...held]);
        const before = await snapshot(w, TABLES);
        const res = await w.post(
          '/v1/keys.createKey',
          { apiId, externalId: 'user_denied', ratelimit: { limit: 1, duration: 1000 }, ...extra },
          key,
        );
        assert.equal(res.status, 403, res.body);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/auth/insufficient-permissions');
        for (const p of named) assert.ok(res.json.error.detail.includes(p), `${res.json.error.detail} should name ${p}`);
        assert.deepEqual(await snapshot(w, TABLES), before, `nothing may be written for ${JSON.stringify(extra)}`);
      }
      const unknown = await w.store.db.selectFrom('roles').select('id').where('name', '=', 'unknown-role').execute();
      assert.equal(unknown.length, 0);
      const identity = await w.store.db.selectFrom('identities').select('id').where('external_id', '=', 'user_denied').execute();
      assert.equal(identity.length, 0);
    });

    test('an api-specific create_key is enough; one for another api → 403 naming this api', async () => {
      const otherApi = await w.createApi('another-api');
      const specific = await w.rootKey([`api.${apiId}.create_key`]);
      const ok = await w.post<Created>('/v1/keys.createKey', { apiId, name: 'specific' }, specific);
      assert.equal(ok.status, 200, ok.body);
      assert.equal((await keyRow(w, ok.json.keyId)).api_id, apiId);
      const wrongAction = await w.rootKey([`api.${apiId}.read_key`, 'api.*.update_key']);
      const before = await snapshot(w, TABLES);
      const denied = await w.post('/v1/keys.createKey', { apiId: otherApi }, specific);
      assert.equal(denied.status, 403, denied.body);
      assert.ok(denied.json.error.detail.includes(`api.${otherApi}.create_key`), denied.json.error.detail);
      const wrong = await w.post('/v1/keys.createKey', { apiId }, wrongAction);
      assert.equal(wrong.status, 403, wrong.body);
      assert.ok(wrong.json.error.detail.includes(`api.${apiId}.create_key`), wrong.json.error.detail);
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('unknown or deleted api → 404; nothing written', async () => {
      const deleted = await w.createApi('to-delete');
      const del = await w.post('/v1/apis.deleteApi', { apiId: deleted });
      assert.equal(del.status, 200, del.body);
      const before = await snapshot(w, TABLES);
      for (const id of ['api_1111111111111111111111', deleted]) {
        const res = await w.post('/v1/keys.createKey', { apiId: id, externalId: 'user_nowhere', roles: ['nowhere-role'] });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
        assert.ok(res.json.error.detail.includes(id));
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('recoverable:true needs create_key and encrypt_key (403 naming the missing one, nothing written); with both the key is also stored encrypted', async () => {
      const withBoth = await w.rootKey([`api.${apiId}.create_key`, `api.${apiId}.encrypt_key`]);
      const withWildcards = await w.rootKey(['api.*.create_key', 'api.*.encrypt_key']);
      const createOnly = await w.rootKey(['api.*.create_key']);
      const encryptOnly = await w.rootKey(['api.*.encrypt_key']);
      const before = await snapshot(w, TABLES);
      const denied = await w.post('/v1/keys.createKey', { apiId, recoverable: true }, createOnly);
      assert.equal(denied.status, 403, denied.body);
      assert.equal(denied.json.error.code, 'INSUFFICIENT_PERMISSIONS');
      assert.ok(denied.json.error.detail.includes(`api.${apiId}.encrypt_key`), denied.json.error.detail);
      assert.ok(!denied.json.error.detail.includes('create_key'), denied.json.error.detail);
      const denied2 = await w.post('/v1/keys.createKey', { apiId, recoverable: true }, encryptOnly);
      assert.equal(denied2.status, 403, denied2.body);
      assert.ok(denied2.json.error.detail.includes(`api.${apiId}.create_key`), denied2.json.error.detail);
      assert.deepEqual(await snapshot(w, TABLES), before);
      for (const key of [w.root, withBoth, withWildcards]) {
        const res = await w.post<Created>('/v1/keys.createKey', { apiId, recoverable: true }, key);
        assert.equal(res.status, 200, res.body);
        const enc = await w.store.db
          .selectFrom('encrypted_keys')
          .selectAll()
          .where('key_id', '=', res.json.keyId)
          .executeTakeFirstOrThrow();
        assert.equal(enc.workspace_id, w.workspaceId);
        assert.ok(!enc.ciphertext.includes(res.json.key));
        assert.ok(!enc.ciphertext.includes(Buffer.from(res.json.key).toString('base64')));
      }
      const after = await snapshot(w, TABLES);
      assert.equal(after.keys, before.keys + 3);
      assert.equal(after.encrypted_keys, before.encrypted_keys + 3);
      // recoverable:false is an ordinary key: it needs no encrypt_key and is not stored encrypted.
      const plain = await w.post('/v1/keys.createKey', { apiId, recoverable: false }, createOnly);
      assert.equal(plain.status, 200, plain.body);
      assert.equal((await snapshot(w, TABLES)).encrypted_keys, after.encrypted_keys);
    });

    test('invalid bodies → 400 naming each bad member; nothing written', async () => {
      const bigMeta = { blob: 'x'.repeat(64 * 1024) };
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{}, ['/apiId']],
        [{ apiId: '' }, ['/apiId']],
        [{ apiId: 42 }, ['/apiId']],
        [{ apiId, prefix: 'p'.repeat(17) }, ['/prefix']],
        [{ apiId, environment: 'e'.repeat(257) }, ['/environment']],
        [{ apiId, name: 'n'.repeat(257) }, ['/name']],
        [{ apiId, remaining: 0 }, ['/remaining']],
        [{ apiId, remaining: -5 }, ['/remaining']],
        [{ apiId, remaining: 1.5 }, ['/remaining']],
        [{ apiId, remaining: '5' }, ['/remaining']],
        [{ apiId, enabled: 'yes' }, ['/enabled']],
        [{ apiId, recoverable: 'true' }, ['/recoverable']],
        [{ apiId, byteLength: 15 }, ['/byteLength']],
        [{ apiId, byteLength: 256 }, ['/byteLength']],
        [{ apiId, expires: 'tomorrow' }, ['/expires']],
        [{ apiId, externalId: '' }, ['/externalId']],
        [{ apiId, ownerId: '' }, ['/ownerId']],
        [{ apiId, roles: 'admin' }, ['/roles']],
        [{ apiId, roles: ['ok', ''] }, ['/roles/1']],
        [{ apiId, permissions: ['p'.repeat(513)] }, ['/permissions/0']],
        [{ apiId, roles: Array.from({ length: 1001 }, (_, i) => `r${i}`) }, ['/roles']],
        [{ apiId, meta: 'text' }, ['/meta']],
        [{ apiId, meta: bigMeta }, ['/meta']],
        [{ apiId, refill: { interval: 'daily', amount: 1 } }, ['/refill']],
        [{ apiId, remaining: 5, refill: { interval: 'daily', amount: 1, refillDay: 3 } }, ['/refill/refillDay']],
        [{ apiId, remaining: 5, refill: { interval: 'weekly', amount: 1 } }, ['/refill/interval']],
        [{ apiId, remaining: 5, refill: { interval: 'monthly', amount: 0 } }, ['/refill/amount']],
        [{ apiId, remaining: 5, refill: { interval: 'monthly', amount: 1, refillDay: 32 } }, ['/refill/refillDay']],
        [{ apiId, remaining: 5, refill: { amount: 1 } }, ['/refill/interval']],
        [{ apiId, ratelimit: { limit: 10 } }, ['/ratelimit/duration']],
        [{ apiId, ratelimit: { duration: 1000 } }, ['/ratelimit/limit']],
        [{ apiId, ratelimit: { limit: 0, duration: 1000 } }, ['/ratelimit/limit']],
        [{ apiId, ratelimit: { limit: 1, duration: 999 } }, ['/ratelimit/duration']],
        [{ apiId, ratelimit: { limit: 1, duration: 1000, type: 'x' } }, ['/ratelimit/type']],
      ];
      const before = await snapshot(w, TABLES);
      for (const [body, expected] of cases) {
        const res = await w.post('/v1/keys.createKey', body);
        assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 200)}: ${res.body.slice(0, 500)}`);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
        assert.deepEqual(paths(res), expected, `${JSON.stringify(body).slice(0, 200)}: ${res.body.slice(0, 500)}`);
        assert.equal(res.json.error.errors.length, expected.length, `one entry per problem: ${res.body.slice(0, 500)}`);
        for (const e of res.json.error.errors) assert.equal(typeof e.message, 'string');
      }
      const badType = await w.post('/v1/keys.createKey', { apiId, ratelimit: { limit: 1, duration: 1000, type: 'x' } });
      assert.match(badType.json.error.errors[0].message, /fast.*consistent/, 'the allowed values are named');
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('meta of exactly 64 KiB as JSON is accepted; one byte more is not', async () => {
      const exact = { m: 'x'.repeat(64 * 1024 - JSON.stringify({ m: '' }).length) };
      assert.equal(Buffer.byteLength(JSON.stringify(exact)), 64 * 1024);
      const ok = await w.post<Created>('/v1/keys.createKey', { apiId, meta: exact });
      assert.equal(ok.status, 200, ok.body.slice(0, 300));
      assert.deepEqual(JSON.parse((await keyRow(w, ok.json.keyId)).meta!), exact);
      // Multi-byte characters count as bytes, not characters.
      const before = await snapshot(w, TABLES);
      const tooBig = { m: `${'x'.repeat(64 * 1024 - JSON.stringify({ m: '' }).length - 1)}é` };
      const res = await w.post('/v1/keys.createKey', { apiId, meta: tooBig });
      assert.equal(res.status, 400, res.body.slice(0, 300));
      assert.deepEqual(paths(res), ['/meta']);
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('several problems in one request are all listed', async () => {
      const before = await snapshot(w, TABLES);
      const schemaOnly = await w.post('/v1/keys.createKey', {
        apiId,
        prefix: 'p'.repeat(17),
        environment: 'e'.repeat(257),
        remaining: 0,
        enabled: 'yes',
        byteLength: 8,
      });
      assert.equal(schemaOnly.status, 400, schemaOnly.body);
      assert.deepEqual(paths(schemaOnly), ['/byteLength', '/enabled', '/environment', '/prefix', '/remaining']);

      const semanticOnly = await w.post('/v1/keys.createKey', {
        apiId,
        refill: { interval: 'daily', amount: 1, refillDay: 2 },
        ratelimit: { limit: 1 },
        meta: { big: 'x'.repeat(70_000) },
      });
      assert.equal(semanticOnly.status, 400, semanticOnly.body.slice(0, 500));
      assert.deepEqual(paths(semanticOnly), ['/meta', '/ratelimit/duration', '/refill', '/refill/refillDay']);

      const mixed = await w.post('/v1/keys.createKey', {
        apiId,
        prefix: 'p'.repeat(17),
        refill: { interval: 'monthly', amount: 1 },
        ratelimit: { limit: 1 },
      });
      assert.equal(mixed.status, 400, mixed.body);
      assert.deepEqual(paths(mixed), ['/prefix', '/ratelimit/duration', '/refill']);
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('authentication comes before validation: a bad body without a valid root key → 401', async () => {
      const before = await snapshot(w, TABLES);
      for (const key of [null, 'kh_root_1111111111111111111111111']) {
        const res = await w.post('/v1/keys.createKey', { apiId, prefix: 'p'.repeat(17), refill: { interval: 'daily', amount: 1 } }, key);
        assert.equal(res.status, 401, res.body);
      }
      const res = await w.post('/v1/keys.createKey', '{"apiId":', null);
      assert.equal(res.status, 401, res.body);
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('invalid JSON, or a body that is not an object → 400; nothing written', async () => {
      const before = await snapshot(w, TABLES);
      const res = await w.post('/v1/keys.createKey', `{"apiId":"${apiId}",`);
      assert.equal(res.status, 400, res.body);
      assert.equal(res.json.error.code, 'BAD_REQUEST');
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-json');
      for (const body of ['[]', '"text"', 'null']) {
        const r = await w.post('/v1/keys.createKey', body);
        assert.equal(r.status, 400, `${body}: ${r.body}`);
        assert.equal(r.json.error.code, 'BAD_REQUEST');
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('unknown members are ignored and not stored', async () => {
      const res = await w.post<Created>('/v1/keys.createKey', {
        apiId,
        name: 'extras',
        whatever: 1,
        workspaceId: 'ws_1111111111111111111111',
        id: 'key_1111111111111111111111',
        hash: 'abc',
        remaining: 3,
        refill: { interval: 'monthly', amount: 3, extra: true },
        ratelimit: { limit: 1, duration: 1000, extra: 'x' },
      });
      assert.equal(res.status, 200, res.body);
      assert.notEqual(res.json.keyId, 'key_1111111111111111111111');
      const row = await keyRow(w, res.json.keyId);
      assert.equal(row.workspace_id, w.workspaceId);
      assert.equal(row.hash, sha256b64(res.json.key));
      assert.equal(row.meta, null);
      const got = await w.get('/v1/keys.getKey', { keyId: res.json.keyId });
      assert.equal(got.json.whatever, undefined);
      assert.deepEqual(got.json.refill, { interval: 'monthly', amount: 3, refillDay: 1, lastRefillAt: got.json.createdAt });
      assert.deepEqual(got.json.ratelimit, {
        async: false,
        type: 'consistent',
        limit: 1,
        duration: 1000,
        refillRate: 1,
        refillInterval: 1000,
      });
    });

    test('concurrent keys naming the same new identity, roles and permissions converge on one row each', async () => {
      const names = Array.from({ length: 6 }, (_, i) => `conc-role-${i}`);
      const perms = Array.from({ length: 6 }, (_, i) => `conc.perm.${i}`);
      const before = await snapshot(w, TABLES);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          w.post<Created>('/v1/keys.createKey', {
            apiId,
            externalId: 'user_concurrent',
            // Different orders on purpose: creators must not deadlock on each other's rows.
            roles: i % 2 ? names : [...names].reverse(),
            permissions: i % 2 ? [...perms].reverse() : perms,
          }),
        ),
      );
      for (const r of results) assert.equal(r.status, 200, r.body);
      const after = await snapshot(w, TABLES);
      assert.equal(after.keys, before.keys + 8);
      assert.equal(after.identities, before.identities + 1);
      assert.equal(after.roles, before.roles + 6);
      assert.equal(after.permissions, before.permissions + 6);
      assert.equal(after.keys_roles, before.keys_roles + 48);
      assert.equal(after.keys_permissions, before.keys_permissions + 48);
      const created = await w.store.db
        .selectFrom('audit_logs')
        .select('event')
        .where('event', 'in', ['role.create', 'permission.create'])
        .where(
          'request_id',
          'in',
          results.map((r) => String(r.headers['x-request-id'])),
        )
        .execute();
      assert.equal(created.length, 12, 'each new role/permission is audited as created exactly once');
      for (const r of results) {
        const got = await w.get('/v1/keys.getKey', { keyId: r.json.keyId });
        assert.deepEqual(got.json.roles, [...names].sort());
        assert.deepEqual(got.json.permissions, [...perms].sort());
        assert.equal(got.json.externalId, 'user_concurrent');
      }
    });

    // The 403 names the API the request is about; `request` creates it, so read it afterwards.
    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.create_key`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure');
        return { method: 'POST', path: '/v1/keys.createKey', body: { apiId: securityApiId } };
      },
      foreign: async (w, other) => ({
        method: 'POST',
        path: '/v1/keys.createKey',
        body: { apiId: await w.createApi('foreign', other.root) },
      }),
    });

    test('security failures write nothing', async () => {
      const other = await w.otherWorkspace();
      const foreignApi = await w.createApi('foreign-nothing', other.root);
      const noPerm = await w.rootKey(['identity.*.read_identity']);
      const revoked = await w.revokedRootKey();
      const before = await snapshot(w, TABLES);
      for (const [key, body, status] of [
        [null, { apiId }, 401],
        [revoked, { apiId }, 401],
        [noPerm, { apiId, externalId: 'user_sec', roles: ['sec-role'] }, 403],
        [w.root, { apiId: foreignApi, externalId: 'user_sec', roles: ['sec-role'] }, 404],
      ] as const) {
        const res = await w.post('/v1/keys.createKey', body, key);
        assert.equal(res.status, status, res.body);
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });
  });
}
