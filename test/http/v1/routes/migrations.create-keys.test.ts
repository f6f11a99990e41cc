import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DIALECTS, world, type Response, type World } from '../../../helpers/harness.ts';
import type { Answer } from '../../../helpers/json.ts';
import { allPaths } from '../../../helpers/errors.ts';
import { sha256b64 } from '../../../helpers/hashes.ts';
import { hashOf, newPlain } from '../../../helpers/migrations.ts';
import { keyRow, rootKeyId, snapshot } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';
import { windowWithRoom } from '../../../helpers/timing.ts';
import { importedStart, isSha256Base64 } from '../../../../src/services/migrations/import-item.ts';
import { buildApp } from '../../../../src/app.ts';

const PATH = '/v1/migrations.createKeys';
/** A hash item for a fresh plaintext key. */
const hashItem = (apiId: string, extra: Record<string, unknown> = {}) => ({ apiId, hash: hashOf(newPlain()), ...extra });

/** Every table an import may write: equal snapshots mean nothing was written. */
const TABLES = [
  'keys',
  'identities',
  'roles',
  'permissions',
  'keys_roles',
  'keys_permissions',
  'ratelimits',
  'encrypted_keys',
  'data_keys',
  'audit_logs',
] as const;
/** A migrations.createKeys answer: the new keys' ids, or the error envelope. */
type Imported = Answer & { keyIds: string[] };
const assertError = (res: Response, status: number, type: string, code: string) => {
  assert.equal(res.status, status, res.body.slice(0, 1000));
  assert.equal(res.json.error.status, status);
  assert.equal(res.json.error.type, `https://keyhold.dev/errors/${type}`);
  assert.equal(res.json.error.code, code);
  assert.match(res.json.meta.requestId, /^req_/);
};

test('importedStart: the caller\'s start, else prefix_ + 4 chars of a plaintext (4 chars without prefix); for a hash prefix_ or ""', () => {
  assert.equal(importedStart({ plaintext: 'abc_defghij', prefix: 'abc' }), 'abc_defg');
  assert.equal(importedStart({ plaintext: 'abcdefghij' }), 'abcd');
  assert.equal(importedStart({ plaintext: 'abcdefghij', prefix: '' }), 'abcd');
  assert.equal(importedStart({ plaintext: 'abcdefghij', start: 'ab' }), 'ab');
  assert.equal(importedStart({ prefix: 'sk' }), 'sk_');
  assert.equal(importedStart({}), '');
  assert.equal(importedStart({ start: 'sk_live_x' }), 'sk_live_x');
});

test('isSha256Base64: exactly the canonical padded base64 of 32 bytes', () => {
  assert.ok(isSha256Base64('CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs='));
  for (let i = 0; i < 200; i++) assert.ok(isSha256Base64(sha256b64(String(i))));
  for (const bad of [
    '',
    'CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs',
    'CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWt=',
    'CptSN3vQ0shZLIsdT5c_tlpeFK_qqxY0R_aQNCfKhWs=',
    Buffer.alloc(31).toString('base64'),
    Buffer.alloc(33).toString('base64'),
    ' CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs=',
    'CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs=\n',
  ]) {
    assert.ok(!isSha256Base64(bad), JSON.stringify(bad));
  }
});

for (const dialect of DIALECTS) {
  describe(`migrations.createKeys (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('import-api');
    });
    after(() => w.close());

    const verify = async (body: Record<string, unknown>) => {
      const r = await w.app.inject({
        method: 'POST',
        url: '/v1/keys.verifyKey',
        payload: body,
        headers: { 'content-type': 'application/json' },
      });
      return r.json();
    };
    const importOk = async (items: unknown[], key?: string): Promise<string[]> => {
      const res = await w.post<Imported>(PATH, items, key);
      assert.equal(res.status, 200, res.body.slice(0, 1000));
      assert.deepEqual(Object.keys(res.json), ['keyIds']);
      assert.equal(res.json.keyIds.length, items.length);
      return res.json.keyIds;
    };

    test('a hashed key (SPEC §4 test vector) is stored as given and verifies VALID with its plaintext', async () => {
      const plain = 'MVgWNsyPmv6VthC9moCNAPwS';
      const before = await snapshot(w, TABLES);
      const [keyId] = await importOk([
        { apiId, hash: { value: 'CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs=', variant: 'sha256_base64' }, name: 'vector' },
      ]);
      assert.match(keyId, /^key_[1-9A-HJ-NP-Za-km-z]{22}$/);
      const row = await keyRow(w, keyId);
      assert.equal(row.hash, 'CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs=');
      assert.equal(row.hash, sha256b64(plain));
      assert.equal(row.workspace_id, w.workspaceId);
      assert.equal(row.api_id, apiId);
      assert.equal(row.start, '', 'a hash without start or prefix has an empty start');
      assert.equal(row.enabled, 1, 'enabled defaults to true');
      const after = await snapshot(w, TABLES);
      assert.equal(after.keys, before.keys + 1);
      assert.equal(after.encrypted_keys, before.encrypted_keys, 'a hashed key has nothing to encrypt');
      const res = await verify({ key: plain, apiId });
      assert.equal(res.valid, true, JSON.stringify(res));
      assert.equal(res.code, 'VALID');
      assert.equal(res.keyId, keyId);
      assert.equal(res.name, 'vector');
      assert.equal((await verify({ key: `${plain}x` })).code, 'NOT_FOUND');
    });

    test('start: given start kept; a hash with a prefix gets prefix_; getKey returns start, name and meta', async () => {
      const meta = { plan: 'pro', nested: { list: [1, 'two', { three: null }] }, unicode: 'ünï 🔑' };
      const ids = await importOk([
        hashItem(apiId, { start: 'sk_live_ab', name: 'with start', meta }),
        hashItem(apiId, { prefix: 'sk' }),
        hashItem(apiId, { prefix: 'sk', start: 'sk_zz' }),
        hashItem(apiId, { prefix: '' }),
      ]);
      const starts = await Promise.all(ids.map(async (id) => (await keyRow(w, id)).start));
      assert.deepEqual(starts, ['sk_live_ab', 'sk_', 'sk_zz', '']);
      const got = await w.get('/v1/keys.getKey', { keyId: ids[0] });
      assert.equal(got.status, 200, got.body);
      assert.equal(got.json.start, 'sk_live_ab');
      assert.equal(got.json.name, 'with start');
      assert.deepEqual(got.json.meta, meta);
      assert.equal(got.json.enabled, true);
    });

    test('keyIds come back in request order, one per item', async () => {
      const plains = Array.from({ length: 25 }, () => newPlain());
      const ids = await importOk(plains.map((p, i) => ({ apiId, hash: hashOf(p), name: `order-${i}` })));
      assert.equal(new Set(ids).size, 25);
      for (let i = 0; i < 25; i++) {
        const row = await keyRow(w, ids[i]);
        assert.equal(row.hash, sha256b64(plains[i]));
        assert.equal(row.name, `order-${i}`);
      }
    });

    test('1000 items in one call', async () => {
      const plains = Array.from({ length: 1000 }, (_, i) => newPlain(`b${i % 7}`));
      const before = await snapshot(w, TABLES);
      const ids = await importOk(
        plains.map((p, i) => ({
          apiId,
          hash: hashOf(p),
          externalId: `bulk_${i % 10}`,
          ...(i % 3 === 0 ? { ratelimit: { type: 'fast', limit: 5, refillRate: 5, refillInterval: 60_000 } } : {}),
        })),
      );
      assert.equal(new Set(ids).size, 1000);
      const after = await snapshot(w, TABLES);
      assert.equal(after.keys, before.keys + 1000);
      assert.equal(after.identities, before.identities + 10);
      assert.equal(after.ratelimits, before.ratelimits + 334);
      assert.equal(after.audit_logs, before.audit_logs + 1000);
      for (const i of [0, 499, 500, 999]) {
        const res = await verify({ key: plains[i] });
        assert.equal(res.code, 'VALID');
        assert.equal(res.keyId, ids[i]);
        assert.equal(res.externalId, `bulk_${i % 10}`);
      }
    });

    test('imported keys verify like created ones: credits, refill, default rate limit, expiry, disabled, environment, identity', async () => {
      const p = Object.fromEntries(
        ['credits', 'limited', 'expired', 'future', 'disabled', 'env', 'refill', 'daily'].map((k) => [k, newPlain(k)]),
      );
      const t0 = Date.now();
      const ids = await importOk([
        { apiId, hash: hashOf(p.credits), remaining: 2 },
        { apiId, hash: hashOf(p.limited), ratelimit: { type: 'consistent', limit: 2, refillRate: 1, refillInterval: 60_000 } },
        { apiId, hash: hashOf(p.expired), expires: t0 - 1000 },
        { apiId, hash: hashOf(p.future), expires: t0 + 3_600_000 },
        { apiId, hash: hashOf(p.disabled), enabled: false },
        { apiId, hash: hashOf(p.env), environment: 'staging', externalId: 'user_env', meta: { tier: 1 } },
        { apiId, hash: hashOf(p.refill), remaining: 5, refill: { interval: 'monthly', amount: 10 } },
        { apiId, hash: hashOf(p.daily), remaining: 5, refill: { interval: 'daily', amount: 3 } },
      ]);
      const [credits, limited, , future, disabled, env, refill, daily] = ids;
      assert.deepEqual(
        [(await verify({ key: p.credits })).code, (await verify({ key: p.credits })).code, (await verify({ key: p.credits })).code],
        ['VALID', 'VALID', 'USAGE_EXCEEDED'],
      );
      assert.equal((await verify({ key: p.credits })).remaining, 0);
      assert.equal((await w.get('/v1/keys.getKey', { keyId: credits })).json.remaining, 0);

      // 2 a minute, in windows aligned to the minute: the three verifications must fall in one window.
      await windowWithRoom(60_000, 5_000);
      const first = await verify({ key: p.limited });
      assert.equal(first.code, 'VALID');
      assert.equal(first.ratelimit.limit, 2);
      assert.equal(first.ratelimit.remaining, 1);
      assert.equal((await verify({ key: p.limited })).code, 'VALID');
      assert.equal((await verify({ key: p.limited })).code, 'RATE_LIMITED');
      const limits = await w.store.db.selectFrom('ratelimits').selectAll().where('key_id', '=', limited).execute();
      assert.equal(limits.length, 1);
      assert.deepEqual(
        [limits[0].name, limits[0].type, limits[0].limit, limits[0].duration, limits[0].auto_apply, limits[0].identity_id],
        ['default', 'consistent', 2, 60_000, 1, null],
      );
      assert.deepEqual((await w.get('/v1/keys.getKey', { keyId: limited })).json.ratelimit, {
        async: false,
        type: 'consistent',
        limit: 2,
        duration: 60_000,
        refillRate: 2,
        refillInterval: 60_000,
      });

      assert.equal((await verify({ key: p.expired })).code, 'EXPIRED');
      const fut = await verify({ key: p.future });
      assert.equal(fut.code, 'VALID');
      assert.equal(fut.expires, t0 + 3_600_000);
      assert.equal((await w.get('/v1/keys.getKey', { keyId: future })).json.expires, t0 + 3_600_000);

      const dis = await verify({ key: p.disabled });
      assert.equal(dis.code, 'DISABLED');
      assert.equal(dis.valid, false);
      assert.equal((await keyRow(w, disabled)).enabled, 0);
      assert.equal((await w.get('/v1/keys.getKey', { keyId: disabled })).json.enabled, false);
      // Re-enabling an imported key works like for any key.
      assert.equal((await w.post('/v1/keys.updateKey', { keyId: disabled, enabled: true })).status, 200);
      assert.equal((await verify({ key: p.disabled })).code, 'VALID');

      const e = await verify({ key: p.env });
      assert.equal(e.code, 'VALID');
      assert.equal(e.environment, 'staging');
      assert.equal(e.externalId, 'user_env');
      assert.equal(e.ownerId, 'user_env');
      assert.deepEqual(e.meta, { tier: 1 });
      const identity = await w.store.db
        .selectFrom('identities')
        .selectAll()
        .where('external_id', '=', 'user_env')
        .executeTakeFirstOrThrow();
      assert.deepEqual(e.identity, { id: identity.id, externalId: 'user_env', meta: {} });
      assert.equal((await keyRow(w, env)).identity_id, identity.id);

      const r = await w.get('/v1/keys.getKey', { keyId: refill });
      assert.deepEqual(r.json.refill, { interval: 'monthly', amount: 10, refillDay: 1, lastRefillAt: r.json.createdAt });
      assert.equal(r.json.remaining, 5);
      const d = await w.get('/v1/keys.getKey', { keyId: daily });
      assert.deepEqual(d.json.refill, { interval: 'daily', amount: 3, lastRefillAt: d.json.createdAt });
      assert.equal((await keyRow(w, daily)).refill_day, null);
    });

    test('the ratelimit type: fast, consistent, async:true → fast, none → consistent (as keys.createKey)', async () => {
      const ids = await importOk([
        hashItem(apiId, { ratelimit: { type: 'fast', limit: 10, refillRate: 10, refillInterval: 1000 } }),
        hashItem(apiId, { ratelimit: { type: 'consistent', limit: 10, refillInterval: 5000 } }),
        hashItem(apiId, { ratelimit: { async: true, limit: 3, refillInterval: 2000 } }),
        hashItem(apiId, { ratelimit: { limit: 4, refillRate: 1, refillInterval: 3000 } }),
      ]);
      const rows = await w.store.db
        .selectFrom('ratelimits')
        .select(['key_id', 'type', 'limit', 'duration', 'name', 'auto_apply'])
        .where('key_id', 'in', ids)
        .execute();
      const byKey = new Map(rows.map((r) => [r.key_id, r]));
      assert.deepEqual(
        ids.map((id) => {
          const r = byKey.get(id)!;
          return [r.name, r.type, r.limit, r.duration, r.auto_apply];
        }),
        [
          ['default', 'fast', 10, 1000, 1],
          ['default', 'consistent', 10, 5000, 1],
          ['default', 'fast', 3, 2000, 1],
          ['default', 'consistent', 4, 3000, 1],
        ],
      );
    });

    test('roles and permissions are linked and count in verification; nothing is created for them', async () => {
      assert.equal((await w.post('/v1/permissions.createPermission', { name: 'docs.read' })).status, 200);
      assert.equal((await w.post('/v1/permissions.createPermission', { name: 'docs.write' })).status, 200);
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'reader', permissions: ['docs.read'] })).status, 200);
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'auditor' })).status, 200);
      const plain = newPlain();
      const before = await snapshot(w, TABLES);
      const [keyId] = await importOk([{ apiId, hash: hashOf(plain), roles: ['reader', 'auditor', 'reader'], permissions: ['docs.write'] }]);
      const after = await snapshot(w, TABLES);
      assert.equal(after.roles, before.roles);
      assert.equal(after.permissions, before.permissions);
      assert.equal(after.keys_roles, before.keys_roles + 2);
      assert.equal(after.keys_permissions, before.keys_permissions + 1);
      const got = await w.get('/v1/keys.getKey', { keyId });
      assert.deepEqual(got.json.roles, ['auditor', 'reader']);
      assert.deepEqual(got.json.permissions, ['docs.read', 'docs.write']);
      const v = await verify({ key: plain, authorization: { permissions: { and: ['docs.read', 'docs.write'] } } });
      assert.equal(v.code, 'VALID');
      assert.deepEqual(v.roles, ['auditor', 'reader']);
      assert.equal((await verify({ key: plain, authorization: { permissions: 'docs.delete' } })).code, 'INSUFFICIENT_PERMISSIONS');
    });

    test('missing roles and permissions → 404 naming every one; nothing is created', async () => {
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'exists-role' })).status, 200);
      const other = await w.otherWorkspace();
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'foreign-role' }, other.root)).status, 200);
      const before = await snapshot(w, TABLES);
      const items = [
        hashItem(apiId, { roles: ['exists-role', 'ghost-a'], externalId: 'user_ghost' }),
        hashItem(apiId, { roles: ['ghost-b', 'ghost-a'], permissions: ['ghost.perm'] }),
      ];
      const res = await w.post(PATH, items);
      assertError(res, 404, 'data/role-not-found', 'NOT_FOUND');
      for (const name of ['ghost-a', 'ghost-b', 'ghost.perm'])
        assert.ok(res.json.error.detail.includes(`"${name}"`), res.json.error.detail);
      assert.ok(!res.json.error.detail.includes('exists-role'), res.json.error.detail);
      const onlyPerms = await w.post(PATH, [hashItem(apiId, { permissions: ['ghost.p1', 'ghost.p2'] })]);
      assertError(onlyPerms, 404, 'data/permission-not-found', 'NOT_FOUND');
      assert.ok(
        onlyPerms.json.error.detail.includes('"ghost.p1"') && onlyPerms.json.error.detail.includes('"ghost.p2"'),
        onlyPerms.json.error.detail,
      );
      // A role of another workspace does not count.
      assertError(await w.post(PATH, [hashItem(apiId, { roles: ['foreign-role'] })]), 404, 'data/role-not-found', 'NOT_FOUND');
      assert.deepEqual(await snapshot(w, TABLES), before);
      const ghosts = await w.store.db.selectFrom('roles').select('id').where('name', 'like', 'ghost%').execute();
      assert.equal(ghosts.length, 0);
    });

    test('externalId creates its identity once and reuses it; ownerId is its alias; externalId wins', async () => {
      await w.post('/v1/identities.createIdentity', { externalId: 'user_existing' });
      const existing = await w.store.db
        .selectFrom('identities')
        .select('id')
        .where('external_id', '=', 'user_existing')
        .executeTakeFirstOrThrow();
      const before = await snapshot(w, TABLES);
      const ids = await importOk([
        hashItem(apiId, { externalId: 'user_new' }),
        hashItem(apiId, { externalId: 'user_new' }),
        hashItem(apiId, { ownerId: 'user_new' }),
        hashItem(apiId, { externalId: 'user_existing' }),
        hashItem(apiId, { ownerId: 'user_loser', externalId: 'user_winner' }),
        hashItem(apiId),
      ]);
      const after = await snapshot(w, TABLES);
      assert.equal(after.identities, before.identities + 2, 'user_new and user_winner');
      const byExt = async (x: string) =>
        (
          await w.store.db
            .selectFrom('identities')
            .select('id')
            .where('external_id', '=', x)
            .where('workspace_id', '=', w.workspaceId)
            .executeTakeFirst()
        )?.id;
      const created = await byExt('user_new');
      assert.ok(created);
      const identityOf = async (id: string) => (await keyRow(w, id)).identity_id;
      assert.deepEqual(await Promise.all(ids.map(identityOf)), [created, created, created, existing.id, await byExt('user_winner'), null]);
      assert.equal(await byExt('user_loser'), undefined, 'the ownerId that lost creates no identity');
      const got = await w.get('/v1/keys.getKey', { keyId: ids[4] });
      assert.equal(got.json.externalId, 'user_winner');
      assert.equal(got.json.ownerId, 'user_winner');
    });

    test('one key.create audit record per key, in the same request, naming the root key', async () => {
      const [keyId] = await importOk([hashItem(apiId, { name: 'audited', externalId: 'user_audit', prefix: 'au' })]);
      const rows = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', keyId).execute();
      assert.equal(rows.length, 1);
      const [a] = rows;
      assert.equal(a.event, 'key.create');
      assert.equal(a.target_type, 'key');
      assert.equal(a.actor_type, 'root_key');
      assert.equal(a.workspace_id, w.workspaceId);
      assert.match(a.request_id!, /^req_/);
      assert.match(a.id, /^log_/);
      assert.equal(a.actor_id, await rootKeyId(w, w.root));
      assert.deepEqual(JSON.parse(a.diff!), {
        apiId,
        start: 'au_',
        name: 'audited',
        externalId: 'user_audit',
        enabled: true,
        source: 'migration',
      });
      const listed = await w.get('/v1/audit.listLogs', {});
      assert.equal(listed.status, 200, listed.body);
    });

    test('invalid items → 400 naming each problem at /<index>/…; nothing written', async () => {
      const bigMeta = { blob: 'x'.repeat(64 * 1024) };
      const h = () => hashOf(newPlain());
      const cases: Array<[unknown, string[]]> = [
        [{}, ['/']],
        ['"text"', ['/']],
        ['null', ['/']],
        [[], ['/']],
        [[{ hash: h() }], ['/0/apiId']],
        [[{ apiId: '', hash: h() }], ['/0/apiId']],
        [[{ apiId }], ['/0']],
        [[{ apiId, hash: h(), plaintext: newPlain() }], ['/0']],
        [['item'], ['/0']],
        [[{ apiId, hash: { value: sha256b64('x'), variant: 'md5' } }], ['/0/hash/variant']],
        [[{ apiId, hash: { value: sha256b64('x') } }], ['/0/hash/variant']],
        [[{ apiId, hash: { variant: 'sha256_base64' } }], ['/0/hash/value']],
        [[{ apiId, hash: { value: 'not base64!', variant: 'sha256_base64' } }], ['/0/hash/value']],
        [[{ apiId, hash: { value: Buffer.alloc(31, 1).toString('base64'), variant: 'sha256_base64' } }], ['/0/hash/value']],
        [[{ apiId, hash: { value: Buffer.alloc(33, 1).toString('base64'), variant: 'sha256_base64' } }], ['/0/hash/value']],
        [[{ apiId, hash: { value: sha256b64('x').replace(/=$/, ''), variant: 'sha256_base64' } }], ['/0/hash/value']],
        [[{ apiId, hash: { value: '', variant: 'sha256_base64' } }], ['/0/hash/value']],
        [[{ apiId, hash: { value: 42, variant: 'sha256_base64' } }], ['/0/hash/value']],
        [[{ apiId, hash: 'abc' }], ['/0/hash']],
        [[{ apiId, plaintext: '' }], ['/0/plaintext']],
        [[{ apiId, plaintext: 'x'.repeat(1025) }], ['/0/plaintext']],
        [[{ apiId, plaintext: 'ab_cdefgh', prefix: 'xy' }], ['/0/prefix']],
        [[{ apiId, plaintext: 'ab_cdefgh', start: 'zz' }], ['/0/start']],
        [[{ apiId, plaintext: 'ab_cdefgh', start: 'ab_cdefgh' }], ['/0/start']],
        [[{ apiId, hash: h(), prefix: 'p'.repeat(9) }], ['/0/prefix']],
        [[{ apiId, hash: h(), name: 'n'.repeat(257) }], ['/0/name']],
        [[{ apiId, hash: h(), environment: 'e'.repeat(257) }], ['/0/environment']],
        [[{ apiId, hash: h(), start: 's'.repeat(65) }], ['/0/start']],
        [[{ apiId, hash: h(), externalId: '' }], ['/0/externalId']],
        [[{ apiId, hash: h(), ownerId: '' }], ['/0/ownerId']],
        [[{ apiId, hash: h(), meta: 'text' }], ['/0/meta']],
        [[{ apiId, hash: h(), meta: bigMeta }], ['/0/meta']],
        [[{ apiId, hash: h(), roles: 'admin' }], ['/0/roles']],
        [[{ apiId, hash: h(), roles: ['ok', ''] }], ['/0/roles/1']],
        [[{ apiId, hash: h(), permissions: ['p'.repeat(513)] }], ['/0/permissions/0']],
        [[{ apiId, hash: h(), roles: Array.from({ length: 1001 }, (_, i) => `r${i}`) }], ['/0/roles']],
        [[{ apiId, hash: h(), expires: 'tomorrow' }], ['/0/expires']],
        [[{ apiId, hash: h(), remaining: 0 }], ['/0/remaining']],
        [[{ apiId, hash: h(), remaining: -1 }], ['/0/remaining']],
        [[{ apiId, hash: h(), remaining: 1.5 }], ['/0/remaining']],
        [[{ apiId, hash: h(), enabled: 'yes' }], ['/0/enabled']],
        [[{ apiId, hash: h(), refill: { interval: 'daily', amount: 1 } }], ['/0/refill']],
        [[{ apiId, hash: h(), remaining: 5, refill: { interval: 'daily', amount: 1, refillDay: 3 } }], ['/0/refill/refillDay']],
        [[{ apiId, hash: h(), remaining: 5, refill: { interval: 'weekly', amount: 1 } }], ['/0/refill/interval']],
        [[{ apiId, hash: h(), remaining: 5, refill: { interval: 'monthly', amount: 0 } }], ['/0/refill/amount']],
        [[{ apiId, hash: h(), remaining: 5, refill: { interval: 'monthly', amount: 1, refillDay: 32 } }], ['/0/refill/refillDay']],
        [[{ apiId, hash: h(), ratelimit: { limit: 10 } }], ['/0/ratelimit/refillInterval']],
        [[{ apiId, hash: h(), ratelimit: { refillInterval: 1000 } }], ['/0/ratelimit/limit']],
        [[{ apiId, hash: h(), ratelimit: { limit: 0, refillInterval: 1000 } }], ['/0/ratelimit/limit']],
        [[{ apiId, hash: h(), ratelimit: { limit: 1, refillInterval: 999 } }], ['/0/ratelimit/refillInterval']],
        [[{ apiId, hash: h(), ratelimit: { limit: 1, refillInterval: 1000, refillRate: 0 } }], ['/0/ratelimit/refillRate']],
        [[{ apiId, hash: h(), ratelimit: { limit: 1, refillInterval: 1000, type: 'x' } }], ['/0/ratelimit/type']],
        [Array.from({ length: 1001 }, () => ({ apiId, hash: h() })), ['/']],
      ];
      const before = await snapshot(w, TABLES);
      for (const [body, expected] of cases) {
        const res = await w.post(PATH, body);
        const what = `${JSON.stringify(body).slice(0, 200)}: ${res.body.slice(0, 500)}`;
        assertError(res, 400, 'request/invalid-body', 'BAD_REQUEST');
        assert.deepEqual(allPaths(res), expected, what);
        for (const e of res.json.error.errors) assert.equal(typeof e.message, 'string');
      }
      const badType = await w.post(PATH, [{ apiId, hash: h(), ratelimit: { limit: 1, refillInterval: 1000, type: 'x' } }]);
      assert.match(badType.json.error.errors[0].message, /fast.*consistent/, 'the allowed values are named');
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('problems of several items are all listed, each with its index; a plaintext never appears in an error', async () => {
      const secret = newPlain('secret');
      const items: unknown[] = Array.from({ length: 1000 }, () => hashItem(apiId));
      items[3] = { apiId, hash: hashOf(newPlain()), plaintext: secret, prefix: 'p'.repeat(9) };
      items[10] = { apiId };
      items[998] = { apiId, plaintext: secret, prefix: 'nope', remaining: 0 };
      items[999] = { apiId, hash: { value: 'short', variant: 'sha256_base64' }, refill: { interval: 'daily', amount: 1, refillDay: 2 } };
      const before = await snapshot(w, TABLES);
      const res = await w.post(PATH, items);
      assertError(res, 400, 'request/invalid-body', 'BAD_REQUEST');
      assert.deepEqual(allPaths(res), [
        '/3',
        '/3/prefix',
        '/10',
        '/998/prefix',
        '/998/remaining',
        '/999/hash/value',
        '/999/refill',
        '/999/refill/refillDay',
      ]);
      assert.ok(!res.body.includes(secret), 'the plaintext is not echoed');
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('all or nothing: a bad 1000th item (409, 404) creates nothing — no key, identity, link, limit or audit record', async () => {
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'atomic-role' })).status, 200);
      const taken = newPlain();
      await importOk([{ apiId, hash: hashOf(taken) }]);
      const good = () =>
        Array.from({ length: 999 }, (_, i) =>
          hashItem(apiId, {
            externalId: `atomic_${i}`,
            roles: ['atomic-role'],
            ratelimit: { limit: 1, refillInterval: 1000 },
            remaining: 3,
          }),
        );
      const before = await snapshot(w, TABLES);
      const conflict = await w.post(PATH, [...good(), { apiId, hash: hashOf(taken) }]);
      assertError(conflict, 409, 'data/conflict', 'CONFLICT');
      assert.deepEqual(allPaths(conflict), ['/999']);
      const missing = await w.post(PATH, [...good(), hashItem(apiId, { roles: ['atomic-missing'] })]);
      assertError(missing, 404, 'data/role-not-found', 'NOT_FOUND');
      const unknownApi = await w.post(PATH, [...good(), hashItem('api_1111111111111111111111')]);
      assertError(unknownApi, 404, 'data/api-not-found', 'NOT_FOUND');
      assert.deepEqual(await snapshot(w, TABLES), before);
      const leaked = await w.store.db.selectFrom('identities').select('id').where('external_id', 'like', 'atomic_%').execute();
      assert.equal(leaked.length, 0);
    });

    test('409 for a hash that exists (created, imported, soft-deleted, other workspace) or repeats within the request, naming the indexes', async () => {
      const created = await w.createKey({ apiId });
      const imported = newPlain();
      await importOk([{ apiId, hash: hashOf(imported) }]);
      const deleted = await w.createKey({ apiId });
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: deleted.keyId })).status, 200);
      const other = await w.otherWorkspace();
      const otherApi = await w.createApi('other-ws-api', other.root);
      const foreign = await w.createKey({ apiId: otherApi }, other.root);
      const before = await snapshot(w, TABLES);
      const res = await w.post(PATH, [
        hashItem(apiId),
        { apiId, hash: hashOf(created.key) },
        hashItem(apiId),
        { apiId, hash: hashOf(imported) },
        { apiId, hash: hashOf(deleted.key) },
        { apiId, hash: hashOf(foreign.key) },
      ]);
      assertError(res, 409, 'data/conflict', 'CONFLICT');
      assert.deepEqual(allPaths(res), ['/1', '/3', '/4', '/5']);
      assert.ok(res.json.error.detail.includes('1, 3, 4, 5'), res.json.error.detail);

      const dup = newPlain();
      const within = await w.post(PATH, [
        hashItem(apiId),
        { apiId, hash: hashOf(dup) },
        hashItem(apiId),
        { apiId, hash: hashOf(dup) },
        { apiId, hash: hashOf(dup) },
      ]);
      assertError(within, 409, 'data/conflict', 'CONFLICT');
      assert.deepEqual(allPaths(within), ['/3', '/4']);
      assert.ok(
        within.json.error.errors.every((e: { message: string }) => e.message.includes('item 1')),
        within.body,
      );
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('concurrent imports of one hash: exactly one succeeds, the others get 409', async () => {
      const plain = newPlain();
      const before = await snapshot(w, TABLES);
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          w.post<Imported>(PATH, [
            hashItem(apiId),
            { apiId, hash: hashOf(plain), externalId: 'user_race' },
            ...(i % 2 ? [hashItem(apiId)] : []),
          ]),
        ),
      );
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 409, 409, 409], results.map((r) => r.body).join('\n'));
      for (const r of results.filter((x) => x.status === 409)) assert.equal(r.json.error.code, 'CONFLICT');
      const winner = results.find((r) => r.status === 200)!;
      const after = await snapshot(w, TABLES);
      assert.equal(after.keys, before.keys + winner.json.keyIds.length);
      assert.equal(after.identities, before.identities + 1);
      assert.equal((await verify({ key: plain })).keyId, winner.json.keyIds[1]);
    });

    test('concurrent imports sharing several hashes in opposite orders: one succeeds, the other gets 409 (no deadlock)', async () => {
      for (let round = 0; round < 3; round++) {
        const shared = Array.from({ length: 400 }, () => hashOf(newPlain()));
        const a = shared.map((hash) => ({ apiId, hash }));
        const b = [...a].reverse();
        const results = await Promise.all([w.post(PATH, [...a, hashItem(apiId)]), w.post(PATH, [hashItem(apiId), ...b])]);
        assert.deepEqual(results.map((r) => r.status).sort(), [200, 409], results.map((r) => r.body.slice(0, 300)).join('\n'));
      }
    });

    test('unknown, deleted or foreign apiId → 404 naming every one; nothing written', async () => {
      const deleted = await w.createApi('to-delete');
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: deleted })).status, 200);
      const other = await w.otherWorkspace();
      const foreign = await w.createApi('foreign-api', other.root);
      const before = await snapshot(w, TABLES);
      for (const id of ['api_1111111111111111111111', deleted, foreign]) {
        const res = await w.post(PATH, [hashItem(apiId, { externalId: 'user_nowhere' }), hashItem(id)]);
        assertError(res, 404, 'data/api-not-found', 'NOT_FOUND');
        assert.ok(res.json.error.detail.includes(id), res.json.error.detail);
      }
      const all = await w.post(PATH, [hashItem(deleted), hashItem(apiId), hashItem(foreign), hashItem(deleted)]);
      assertError(all, 404, 'data/api-not-found', 'NOT_FOUND');
      assert.ok(all.json.error.detail.includes(deleted) && all.json.error.detail.includes(foreign), all.json.error.detail);
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('order of checks: 400 → 404 api → 403 → 404 roles/permissions → 409', async () => {
      const unrelated = await w.rootKey(['api.*.read_key']);
      const taken = newPlain();
      await importOk([{ apiId, hash: hashOf(taken) }]);
      const unknownApi = 'api_1111111111111111111111';
      // 400 before 404 api
      assertError(await w.post(PATH, [hashItem(unknownApi), { apiId }], unrelated), 400, 'request/invalid-body', 'BAD_REQUEST');
      // 404 api before 403
      assertError(await w.post(PATH, [hashItem(unknownApi)], unrelated), 404, 'data/api-not-found', 'NOT_FOUND');
      // 403 before 404 roles
      assertError(
        await w.post(PATH, [hashItem(apiId, { roles: ['nope-role'] })], unrelated),
        403,
        'auth/insufficient-permissions',
        'INSUFFICIENT_PERMISSIONS',
      );
      // 404 roles before 409
      assertError(
        await w.post(PATH, [{ apiId, hash: hashOf(taken), permissions: ['nope.perm'] }]),
        404,
        'data/permission-not-found',
        'NOT_FOUND',
      );
      assertError(await w.post(PATH, [{ apiId, hash: hashOf(taken) }]), 409, 'data/conflict', 'CONFLICT');
    });

    test('permissions: create_key per api (specific or wildcard); a 403 names every missing one; nothing written', async () => {
      const api2 = await w.createApi('second-api');
      const plainItems = () => [hashItem(apiId), hashItem(api2), hashItem(apiId)];
      for (const perms of [
        ['*'],
        ['api.*.create_key'],
        [`api.${apiId}.create_key`, `api.${api2}.create_key`],
        [`api.${apiId}.create_key`, 'api.*.create_key'],
        ['api.*.create_key', 'rbac.*.read_role'],
      ]) {
        await importOk(plainItems(), await w.rootKey(perms));
      }
      const firstOnly = await w.rootKey([`api.${apiId}.create_key`]);
      const unrelated = await w.rootKey([`api.${apiId}.read_key`, 'api.*.update_key', 'api.*.encrypt_key']);
      const before = await snapshot(w, TABLES);
      const onlyFirst = await w.post(PATH, plainItems(), firstOnly);
      assertError(onlyFirst, 403, 'auth/insufficient-permissions', 'INSUFFICIENT_PERMISSIONS');
      assert.ok(onlyFirst.json.error.detail.includes(`api.${api2}.create_key`), onlyFirst.json.error.detail);
      assert.ok(!onlyFirst.json.error.detail.includes(`api.${apiId}.create_key`), onlyFirst.json.error.detail);
      const none = await w.post(PATH, plainItems(), unrelated);
      assertError(none, 403, 'auth/insufficient-permissions', 'INSUFFICIENT_PERMISSIONS');
      assert.ok(
        none.json.error.detail.includes(`api.${apiId}.create_key`) && none.json.error.detail.includes(`api.${api2}.create_key`),
        none.json.error.detail,
      );
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('plaintext items also need encrypt_key for their api (named in the 403); hashed items of other apis do not', async () => {
      const api2 = await w.createApi('plain-perm-api');
      const items = [{ apiId, plaintext: newPlain() }, hashItem(api2)];
      const [createKeyOnly, encryptKeyOnly, otherApiEncrypt] = [
        await w.rootKey(['api.*.create_key']),
        await w.rootKey(['api.*.encrypt_key']),
        await w.rootKey(['api.*.create_key', `api.${api2}.encrypt_key`]),
      ];
      const before = await snapshot(w, TABLES);
      const createOnly = await w.post(PATH, items, createKeyOnly);
      assertError(createOnly, 403, 'auth/insufficient-permissions', 'INSUFFICIENT_PERMISSIONS');
      assert.ok(createOnly.json.error.detail.includes(`api.${apiId}.encrypt_key`), createOnly.json.error.detail);
      assert.ok(!createOnly.json.error.detail.includes(`api.${api2}.encrypt_key`), createOnly.json.error.detail);
      assert.ok(!createOnly.json.error.detail.includes('create_key'), createOnly.json.error.detail);
      const encryptOnly = await w.post(PATH, items, encryptKeyOnly);
      assertError(encryptOnly, 403, 'auth/insufficient-permissions', 'INSUFFICIENT_PERMISSIONS');
      assert.ok(
        encryptOnly.json.error.detail.includes(`api.${apiId}.create_key`) &&
          encryptOnly.json.error.detail.includes(`api.${api2}.create_key`),
        encryptOnly.json.error.detail,
      );
      const wrongApi = await w.post(PATH, items, otherApiEncrypt);
      assertError(wrongApi, 403, 'auth/insufficient-permissions', 'INSUFFICIENT_PERMISSIONS');
      assert.ok(wrongApi.json.error.detail.includes(`api.${apiId}.encrypt_key`), wrongApi.json.error.detail);
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('authentication comes before validation: a bad body without a valid root key → 401', async () => {
      for (const key of [null, 'kh_root_1111111111111111111111111']) {
        assert.equal((await w.post(PATH, [{ apiId }], key)).status, 401);
      }
      assert.equal((await w.post(PATH, '[{"apiId":', null)).status, 401);
    });

    test('invalid JSON → 400 request/invalid-json; unknown members are ignored and not stored', async () => {
      assertError(await w.post(PATH, '[{"apiId":'), 400, 'request/invalid-json', 'BAD_REQUEST');
      const [keyId] = await importOk([
        {
          ...hashItem(apiId),
          id: 'key_1111111111111111111111',
          workspaceId: 'ws_x',
          whatever: 1,
          ratelimit: { limit: 1, refillInterval: 1000, duration: 5 },
        },
      ]);
      assert.notEqual(keyId, 'key_1111111111111111111111');
      const row = await keyRow(w, keyId);
      assert.equal(row.workspace_id, w.workspaceId);
      const limit = await w.store.db.selectFrom('ratelimits').select('duration').where('key_id', '=', keyId).executeTakeFirstOrThrow();
      assert.equal(limit.duration, 1000);
    });

    describe('plaintext items (vault)', () => {
      test('a plaintext key is hashed for lookup, stored encrypted, verifies VALID; its start is prefix_ + 4 chars; never stored or logged in clear', async () => {
        const plains = [newPlain('pt'), `raw${randomBytes(10).toString('hex')}`];
        const before = await snapshot(w, TABLES);
        const ids = await importOk([
          { apiId, plaintext: plains[0], prefix: 'pt', name: 'plain' },
          { apiId, plaintext: plains[1] },
        ]);
        const after = await snapshot(w, TABLES);
        assert.equal(after.encrypted_keys, before.encrypted_keys + 2);
        const rows = await Promise.all(ids.map((id) => keyRow(w, id)));
        assert.deepEqual(
          rows.map((r) => r.hash),
          plains.map(sha256b64),
        );
        assert.deepEqual(
          rows.map((r) => r.start),
          [plains[0].slice(0, 7), plains[1].slice(0, 4)],
        );
        const secrets = await w.store.db.selectFrom('encrypted_keys').selectAll().where('key_id', 'in', ids).execute();
        assert.equal(secrets.length, 2);
        for (const s of secrets) {
          assert.equal(s.workspace_id, w.workspaceId);
          assert.ok(s.data_key_id);
          for (const p of plains) assert.ok(!s.ciphertext.includes(p));
        }
        const everything = JSON.stringify([rows, secrets, await w.store.db.selectFrom('audit_logs').selectAll().execute()]);
        for (const p of plains) assert.ok(!everything.includes(p), 'no plaintext at rest outside its ciphertext');
        for (let i = 0; i < 2; i++) {
          const v = await verify({ key: plains[i] });
          assert.equal(v.code, 'VALID');
          assert.equal(v.keyId, ids[i]);
        }
        assert.equal((await w.get('/v1/keys.getKey', { keyId: ids[0] })).json.start, plains[0].slice(0, 7));
        const decrypted = await w.get('/v1/keys.getKey', { keyId: ids[0], decrypt: true });
        assert.equal(decrypted.status, 200, decrypted.body);
        assert.equal(decrypted.json.plaintext, plains[0], 'recoverable with decrypt_key');
      });

      test('a server without a vault: plaintext items → 412 (after the permission check), nothing written; hashed items still import', async () => {
        const bare = await buildApp({ store: w.store });
        try {
          const send = async (body: unknown, key: string) => {
            const r = await bare.inject({
              method: 'POST',
              url: PATH,
              payload: JSON.stringify(body),
              headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            });
            return { status: r.statusCode, json: r.json(), body: r.body, headers: r.headers } as Response;
          };
          const createOnly = await w.rootKey(['api.*.create_key']);
          const before = await snapshot(w, TABLES);
          const res = await send([hashItem(apiId, { externalId: 'user_novault' }), { apiId, plaintext: newPlain() }], w.root);
          assertError(res, 412, 'state/precondition-failed', 'PRECONDITION_FAILED');
          assert.match(res.json.error.detail, /vault/);
          assertError(
            await send([{ apiId, plaintext: newPlain() }], createOnly),
            403,
            'auth/insufficient-permissions',
            'INSUFFICIENT_PERMISSIONS',
          );
          assert.deepEqual(await snapshot(w, TABLES), before);
          const ok = await send([hashItem(apiId)], w.root);
          assert.equal(ok.status, 200, ok.body);
        } finally {
          await bare.close();
        }
      });

      test('a plaintext whose hash exists, or that repeats a hash item of the request → 409', async () => {
        const plain = newPlain();
        await importOk([{ apiId, plaintext: plain }]);
        const before = await snapshot(w, TABLES);
        assert.deepEqual(allPaths(await w.post(PATH, [hashItem(apiId), { apiId, hash: hashOf(plain) }])), ['/1']);
        const fresh = newPlain();
        const res = await w.post(PATH, [
          { apiId, hash: hashOf(fresh) },
          { apiId, plaintext: fresh },
        ]);
        assertError(res, 409, 'data/conflict', 'CONFLICT');
        assert.deepEqual(allPaths(res), ['/1']);
        assert.ok(!res.body.includes(fresh));
        assert.deepEqual(await snapshot(w, TABLES), before);
      });

      test('create_key + encrypt_key (specific or wildcard) or * → 200', async () => {
        for (const perms of [
          ['*'],
          ['api.*.create_key', 'api.*.encrypt_key'],
          [`api.${apiId}.create_key`, `api.${apiId}.encrypt_key`],
          [`api.${apiId}.create_key`, 'api.*.encrypt_key'],
        ]) {
          await importOk([{ apiId, plaintext: newPlain() }, hashItem(apiId)], await w.rootKey(perms));
        }
      });
    });

    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.create_key`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure');
        return { method: 'POST', path: PATH, body: [hashItem(securityApiId)] };
      },
      foreign: async (w, other) => ({ method: 'POST', path: PATH, body: [hashItem(await w.createApi('foreign', other.root))] }),
    });
  });
}
