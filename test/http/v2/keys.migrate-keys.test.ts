import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { DIALECTS, OPERATOR, world, type Response, type World } from '../../helpers/harness.ts';
import { keyRow, snapshot } from '../../helpers/rows.ts';
import { sha256b64 } from '../../helpers/hashes.ts';
import { drain } from '../../helpers/migrations.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';
import { paths } from '../../helpers/errors.ts';
import { createMigration } from '../../../src/services/migrations/migration-records.ts';

const PATH = '/v2/keys.migrateKeys';
const SEAM = 'github.com/seamapi/prefixed-api-key';
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const newKey = (prefix = 'mk') => `${prefix}_${randomBytes(16).toString('hex')}`;
/** A seam key and its stored hash (hex SHA-256 of the long token). */
const seamKey = () => {
  const long = randomBytes(12).toString('hex');
  return { key: `acme_${randomBytes(4).toString('hex')}_${long}`, hash: hex(long) };
};
/** A v1 error answer of this kind. */
const assertError = (res: Response, status: number, kind: string) => {
  assert.equal(res.status, status, res.body);
  assert.equal(res.json.error.type, `https://keyhold.dev/errors/${kind}`);
};
type Migrated = { migrated: Array<{ hash: string; keyId: string }>; failed: string[] };

const WRITTEN = ['keys', 'key_migration_items', 'audit_logs', 'identities', 'ratelimits', 'keys_roles', 'keys_permissions'] as const;

for (const dialect of DIALECTS) {
  describe(`v2 keys.migrateKeys (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('migrated');
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'reader' })).status, 200);
      assert.equal((await w.post('/v1/permissions.createPermission', { name: 'docs.read' })).status, 200);
    });
    after(() => w.close());

    const migration = async (algorithm = 'sha256', workspaceId = w.workspaceId) =>
      (await createMigration(w.store.db, workspaceId, `m-${algorithm}`, OPERATOR, algorithm)).migrationId;

    test('imports keys with their attributes in one transaction; they verify through v1 and v2 and are items of the migration', async () => {
      const migrationId = await migration();
      const [a, b] = [newKey(), newKey()];
      const keys = [
        {
          hash: sha256b64(a),
          name: 'full',
          externalId: 'user@example.com',
          meta: { plan: 'pro' },
          roles: ['reader'],
          permissions: ['docs.read'],
          expires: Date.now() + 3_600_000,
          credits: { remaining: 5, refill: { interval: 'monthly', amount: 10, refillDay: 3 } },
          ratelimits: [{ name: 'requests', limit: 10, duration: 60_000, autoApply: true }],
        },
        { hash: sha256b64(b), enabled: false, credits: { remaining: null } },
      ];
      const data = v2Data<Migrated>(await w.post(PATH, { migrationId, apiId, keys }));
      assert.deepEqual(
        data.migrated.map((m) => m.hash),
        keys.map((k) => k.hash),
      );
      assert.deepEqual(data.failed, []);
      const [ka, kb] = data.migrated.map((m) => m.keyId);

      const got = (await w.get('/v1/keys.getKey', { keyId: ka })).json;
      assert.equal(got.name, 'full');
      assert.equal(got.remaining, 5);
      assert.deepEqual(got.refill, { interval: 'monthly', amount: 10, refillDay: 3, lastRefillAt: got.refill.lastRefillAt });
      assert.deepEqual(got.meta, { plan: 'pro' });
      assert.deepEqual(got.roles, ['reader']);
      assert.equal((await keyRow(w, ka)).migration_id, migrationId);
      assert.equal((await keyRow(w, ka)).pending_migration_id, null, 'sha256: the final hash');
      const limits = await w.store.db.selectFrom('ratelimits').selectAll().where('key_id', '=', ka).execute();
      assert.deepEqual(
        limits.map((l) => [l.name, Number(l.limit), Number(l.duration), l.auto_apply]),
        [['requests', 10, 60_000, 1]],
      );
      const v1 = (await w.post('/v1/keys.verifyKey', { key: a })).json;
      assert.deepEqual([v1.valid, v1.keyId, v1.remaining], [true, ka, 4]);
      assert.equal((await w.post('/v1/keys.verifyKey', { key: b })).json.code, 'DISABLED');
      const v2 = v2Data<{ valid: boolean; keyId: string }>(await w.post('/v2/keys.verifyKey', { key: a }));
      assert.deepEqual([v2.valid, v2.keyId], [true, ka]);
      assert.equal((await keyRow(w, kb)).remaining, null, 'credits.remaining null: unlimited');

      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', ka).execute();
      assert.deepEqual(
        audit.map((r) => [r.event, JSON.parse(r.diff!).source, JSON.parse(r.diff!).migrationId]),
        [['key.create', 'migration', migrationId]],
      );
      const status = (await w.get('/v1/migrations.getMigration', { migrationId })).json;
      assert.deepEqual([status.status, status.counts], ['completed', { enqueued: 2, pending: 0, migrated: 2, failed: 0 }]);
    });

    test('a key stored already (under any form of its hash, in any workspace) is skipped into `failed` and recorded as a failed item', async () => {
      const existing = newKey();
      await w.post('/v1/migrations.createKeys', [{ apiId, hash: { value: sha256b64(existing), variant: 'sha256_base64' } }]);
      const hexMigration = await migration('sha256_hex');
      const fresh = newKey();
      const res = await w.post(PATH, {
        migrationId: hexMigration,
        apiId,
        keys: [{ hash: hex(existing) }, { hash: hex(fresh).toUpperCase() }],
      });
      const data = v2Data<Migrated>(res);
      assert.deepEqual(data.failed, [hex(existing)]);
      assert.deepEqual(
        data.migrated.map((m) => m.hash),
        [hex(fresh).toUpperCase()],
        'echoed as given',
      );
      const row = await keyRow(w, data.migrated[0].keyId);
      assert.deepEqual([row.hash, row.pending_migration_id, row.start], [hex(fresh), hexMigration, '']);
      const status = (await w.get('/v1/migrations.getMigration', { migrationId: hexMigration })).json;
      assert.deepEqual(status.counts, { enqueued: 2, pending: 0, migrated: 1, failed: 1 });
      assert.deepEqual(status.failures, [{ index: 0, hash: hex(existing), reason: 'duplicate hash: a key with this hash already exists' }]);
      // The same key again, now pending in hex: failed too (also in Keyhold's form through v1).
      assert.deepEqual(v2Data<Migrated>(await w.post(PATH, { migrationId: hexMigration, apiId, keys: [{ hash: hex(fresh) }] })).failed, [
        hex(fresh),
      ]);
      const v1 = await w.post('/v1/migrations.createKeys', [{ apiId, hash: { value: sha256b64(fresh), variant: 'sha256_base64' } }]);
      assertError(v1, 409, 'data/conflict');
    });

    test('lazily migrated: a seam key and a hex key verify with the migrationId, are rewritten, then verify without it', async () => {
      for (const [algorithm, make] of [
        [SEAM, seamKey],
        ['sha256_hex', () => ({ key: newKey('hx'), hash: '' })],
      ] as const) {
        const migrationId = await migration(algorithm);
        const made = make();
        const hash = made.hash || hex(made.key);
        const [{ keyId }] = v2Data<Migrated>(await w.post(PATH, { migrationId, apiId, keys: [{ hash }] })).migrated;
        assert.equal(v2Data<{ code: string }>(await w.post('/v2/keys.verifyKey', { key: made.key })).code, 'NOT_FOUND');
        const first = v2Data<{ valid: boolean; keyId: string }>(await w.post('/v2/keys.verifyKey', { key: made.key, migrationId }));
        assert.deepEqual([first.valid, first.keyId], [true, keyId], algorithm);
        assert.equal((await keyRow(w, keyId)).hash, sha256b64(made.key));
        const later = v2Data<{ valid: boolean }>(await w.post('/v2/keys.verifyKey', { key: made.key }));
        assert.equal(later.valid, true);
        assert.equal((await w.post('/v1/keys.verifyKey', { key: made.key })).json.valid, true);
      }
    });

    test('a concurrent burst of 20 first verifications of a seam key: all valid, the key rewritten exactly once, credits exact', async () => {
      const migrationId = await migration(SEAM);
      const made = seamKey();
      const [{ keyId }] = v2Data<Migrated>(
        await w.post(PATH, { migrationId, apiId, keys: [{ hash: made.hash, credits: { remaining: 100 } }] }),
      ).migrated;
      const answers = await Promise.all(Array.from({ length: 20 }, () => w.post('/v2/keys.verifyKey', { key: made.key, migrationId })));
      assert.deepEqual(
        answers.map((a) => v2Data<{ valid: boolean }>(a).valid),
        Array(20).fill(true),
      );
      const rewrites = await w.store.db
        .selectFrom('audit_logs')
        .select('id')
        .where('target_id', '=', keyId)
        .where('event', '=', 'key.update')
        .where('actor_type', '=', 'migration')
        .execute();
      assert.equal(rewrites.length, 1, 'rewritten once');
      const row = await keyRow(w, keyId);
      assert.equal(row.hash, sha256b64(made.key));
      assert.equal(Number(row.remaining), 80);
    });

    test('400 with locations, writing nothing: hashes not in the algorithm’s form or repeated, schema and credit rules', async () => {
      const sha = await migration();
      const before = await snapshot(w, WRITTEN);
      const h = sha256b64(newKey());
      const cases: Array<[unknown, string[]]> = [
        [{ migrationId: sha, apiId, keys: [{ hash: hex(newKey()) }, { hash: h }, { hash: h }] }, ['/keys/0/hash', '/keys/2/hash']],
        [{ migrationId: sha, apiId, keys: [] }, ['/keys']],
        [{ migrationId: sha, apiId, keys: [{ hash: 'ab' }] }, ['/keys/0/hash']],
        [{ migrationId: sha, apiId, keys: [{ name: 'no hash' }] }, ['/keys/0/hash']],
        [
          { migrationId: sha, apiId, keys: [{ hash: h, credits: { remaining: 1, refill: { interval: 'monthly', amount: 2 } } }] },
          ['/keys/0/credits/refill/refillDay'],
        ],
        [
          { migrationId: sha, apiId, keys: [{ hash: h, credits: { remaining: null, refill: { interval: 'daily', amount: 2 } } }] },
          ['/keys/0/credits/refill'],
        ],
        [
          {
            migrationId: sha,
            apiId,
            keys: [
              {
                hash: h,
                ratelimits: [
                  { name: 'abc', limit: 1, duration: 1000, autoApply: true },
                  { name: 'abc', limit: 1, duration: 1000, autoApply: false },
                ],
              },
            ],
          },
          ['/keys/0/ratelimits/1/name'],
        ],
        [{ apiId, keys: [{ hash: h }] }, ['/migrationId']],
      ];
      for (const [body, locations] of cases) {
        const res = await w.post(PATH, body);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), locations, JSON.stringify(body));
      }
      const seam = await migration(SEAM);
      const after1 = await snapshot(w, WRITTEN);
      assert.deepEqual(v2Locations(await w.post(PATH, { migrationId: seam, apiId, keys: [{ hash: h }] })), ['/keys/0/hash']);
      assert.deepEqual(await snapshot(w, WRITTEN), after1);
      assert.deepEqual({ ...after1, audit_logs: before.audit_logs }, before, 'only the migration.create audit records were written');
    });

    test('404s, writing nothing: unknown or foreign migration, unknown or deleted API, a missing role (the whole batch)', async () => {
      const migrationId = await migration();
      const other = await w.otherWorkspace();
      const theirs = await migration('sha256', other.workspaceId);
      const deleted = await w.createApi('deleted');
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: deleted })).status, 200);
      const before = await snapshot(w, WRITTEN);
      const keys = [{ hash: sha256b64(newKey()) }];
      assertV2Error(await w.post(PATH, { migrationId: 'mig_unknown', apiId, keys }), 404, 'unkey/data/migration_not_found');
      assertV2Error(await w.post(PATH, { migrationId: theirs, apiId, keys }), 404, 'unkey/data/migration_not_found');
      assertV2Error(await w.post(PATH, { migrationId, apiId: 'api_unknown', keys }), 404, 'unkey/data/api_not_found');
      assertV2Error(await w.post(PATH, { migrationId, apiId: deleted, keys }), 404, 'unkey/data/api_not_found');
      const roles = await w.post(PATH, { migrationId, apiId, keys: [...keys, { hash: sha256b64(newKey()), roles: ['nope'] }] });
      assertV2Error(roles, 404, 'unkey/data/role_not_found');
      assert.match(roles.json.error.detail, /nope/);
      assert.deepEqual(await snapshot(w, WRITTEN), before);
    });

    describe('security', () =>
      v2SecurityTests(() => w, {
        path: PATH,
        body: async (w) => ({ migrationId: await migration(), apiId: await w.createApi(), keys: [{ hash: sha256b64(newKey()) }] }),
        permission: 'create_key',
        foreign: {
          body: async (w, other) => ({
            migrationId: await migration(),
            apiId: await w.createApi('theirs', other.root),
            keys: [{ hash: sha256b64(newKey()) }],
          }),
          type: 'unkey/data/api_not_found',
        },
      }));
  });

  describe(`v1 migrations.createKeys and enqueueKeys with hash variants (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('v1-target');
    });
    after(() => w.close());

    test('createKeys (no migration): hex and base64url digests are stored in Keyhold’s form at once; seam’s are refused', async () => {
      const [a, b] = [newKey(), newKey()];
      const digest = (k: string) => createHash('sha256').update(k).digest();
      const res = await w.post('/v1/migrations.createKeys', [
        { apiId, hash: { value: digest(a).toString('hex'), variant: 'sha256_hex' } },
        { apiId, hash: { value: digest(b).toString('base64url'), variant: 'sha256_base64url' } },
      ]);
      assert.equal(res.status, 200, res.body);
      for (const [i, k] of [a, b].entries()) {
        const row = await keyRow(w, (res.json.keyIds as unknown as string[])[i]);
        assert.deepEqual([row.hash, row.pending_migration_id], [sha256b64(k), null]);
        assert.equal((await w.post('/v1/keys.verifyKey', { key: k })).json.valid, true);
      }
      const { hash } = seamKey();
      const seam = await w.post('/v1/migrations.createKeys', [
        { apiId, hash: { value: hash, variant: SEAM } },
        { apiId, hash: { value: 'zz', variant: 'sha256_hex' } },
      ]);
      assertError(seam, 400, 'request/invalid-body');
      assert.deepEqual(paths(seam), ['/0/hash/variant', '/1/hash/value']);
    });

    test('enqueueKeys into a seam migration: its variant (or Keyhold’s own) only; the imported key is rewritten on verification', async () => {
      const migrationId = (await createMigration(w.store.db, w.workspaceId, 'seam', OPERATOR, SEAM)).migrationId;
      const s = seamKey();
      const own = newKey();
      const bad = await w.post('/v1/migrations.enqueueKeys', {
        migrationId,
        apiId,
        keys: [{ hash: { value: hex(own), variant: 'sha256_hex' } }],
      });
      assertError(bad, 400, 'request/invalid-body');
      assert.deepEqual(paths(bad), ['/keys/0/hash/variant']);
      const ok = await w.post('/v1/migrations.enqueueKeys', {
        migrationId,
        apiId,
        keys: [{ hash: { value: s.hash, variant: SEAM }, name: 'seam' }, { hash: { value: sha256b64(own), variant: 'sha256_base64' } }],
      });
      assert.equal(ok.status, 202, ok.body);
      await drain(w.store);
      const status = (await w.get('/v1/migrations.getMigration', { migrationId })).json;
      assert.deepEqual(status.counts, { enqueued: 2, pending: 0, migrated: 2, failed: 0 });
      assert.equal((await w.post('/v1/keys.verifyKey', { key: own })).json.valid, true);
      assert.equal((await w.post('/v1/keys.verifyKey', { key: s.key })).json.code, 'NOT_FOUND');
      const v = v2Data<{ valid: boolean }>(await w.post('/v2/keys.verifyKey', { key: s.key, migrationId }));
      assert.equal(v.valid, true);
      assert.equal((await w.post('/v1/keys.verifyKey', { key: s.key })).json.valid, true);
    });
  });
}
