import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { DIALECTS, OPERATOR, world, type World } from '../helpers/harness.ts';
import { keyRow } from '../helpers/rows.ts';
import { sha256b64 } from '../helpers/hashes.ts';
import { v2Data } from '../helpers/v2.ts';
import { rehashMigratedKey, rehashedStart } from '../../src/services/migrations/lazy-rehash.ts';
import { createMigration } from '../../src/services/migrations/migration-records.ts';

const SEAM = 'github.com/seamapi/prefixed-api-key';
const sha256 = (s: string) => createHash('sha256').update(s);
/** A seam key `<prefix>_<short>_<long>` and the hash seam stores: lowercase hex SHA-256 of the long token. */
function seamKey(prefix = 'mycorp'): { key: string; hash: string } {
  const short = randomBytes(4).toString('hex');
  const long = randomBytes(12).toString('base64url').replace(/_/g, 'x');
  return { key: `${prefix}_${short}_${long}`, hash: sha256(long).digest('hex') };
}

test('rehashedStart: seam takes prefix_ + 4 characters of short_long; others keep or extend an imported start, else 4 characters', () => {
  assert.equal(rehashedStart(SEAM, 'my_corp_BRTRKFsL_51FwqftsmMDHHbJAMEXXHCgG', ''), 'my_corp_BRTR');
  assert.equal(rehashedStart('sha256_hex', 'sk_live_abcdefghijkl', 'sk_live_'), 'sk_live_abcd');
  assert.equal(rehashedStart('sha256_hex', 'sk_live_abcdefghijkl', 'sk_live'), 'sk_live');
  assert.equal(rehashedStart('sha256_hex', 'abcdefghijkl', ''), 'abcd');
  assert.equal(rehashedStart('sha256_hex', 'abcdefghijkl', 'zz_'), 'abcd');
  assert.equal(rehashedStart('sha256_base64url', 'abcdefghijk', ''), '', 'at least 8 characters stay hidden');
  assert.equal(rehashedStart('sha256_base64url', 'abcdefghijkl', ''), 'abcd');
});

for (const dialect of DIALECTS) {
  describe(`lazy rehash of migrated keys (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('migrated');
    });
    after(() => w.close());

    const migration = async (algorithm: string, workspaceId = w.workspaceId) =>
      (await createMigration(w.store.db, workspaceId, algorithm, OPERATOR, algorithm)).migrationId;
    const migrate = async (migrationId: string, hash: string, extra: Record<string, unknown> = {}) => {
      const data = v2Data<{ migrated: Array<{ keyId: string }> }>(
        await w.post('/v2/keys.migrateKeys', { migrationId, apiId, keys: [{ hash, ...extra }] }),
      );
      return data.migrated[0].keyId;
    };
    const verifyV1 = async (key: string) =>
      (await w.post('/v1/keys.verifyKey', { key })).json as unknown as { valid: boolean; code: string; keyId?: string };
    const rehashAudits = (keyId: string) =>
      w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', keyId).where('actor_type', '=', 'migration').execute();

    test('a seam key: stored by its foreign hash until the first rehash, then by Keyhold’s; audited once by the migration', async () => {
      const migrationId = await migration(SEAM);
      const { key, hash } = seamKey('my_corp');
      const keyId = await migrate(migrationId, hash.toUpperCase(), { name: 'seam' });
      let row = await keyRow(w, keyId);
      assert.deepEqual([row.hash, row.pending_migration_id, row.migration_id, row.start], [hash, migrationId, migrationId, '']);
      // Before: unknown to verification (this also makes this node remember Keyhold's hash as unknown).
      assert.equal((await verifyV1(key)).code, 'NOT_FOUND');

      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, migrationId, key), true);
      row = await keyRow(w, keyId);
      assert.deepEqual([row.hash, row.pending_migration_id, row.start], [sha256b64(key), null, key.slice(0, 'my_corp_'.length + 4)]);
      assert.ok(row.updated_at >= row.created_at);
      const audits = await rehashAudits(keyId);
      assert.equal(audits.length, 1);
      assert.deepEqual([audits[0].event, audits[0].actor_id, audits[0].workspace_id], ['key.update', migrationId, w.workspaceId]);
      assert.deepEqual(JSON.parse(audits[0].diff!).hash, { from: SEAM, to: 'sha256' });
      // The negative cache entry is gone at once: v1 (which has no migrationId) verifies it now.
      assert.deepEqual([(await verifyV1(key)).valid, (await verifyV1(key)).keyId], [true, keyId]);
      // Rewritten already: true again, without a second rewrite.
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, migrationId, key), true);
      assert.equal((await rehashAudits(keyId)).length, 1);
    });

    test('a concurrent burst of 20 first rehashes rewrites exactly once; then Keyhold’s hash finds the key and the foreign one does not', async () => {
      const migrationId = await migration(SEAM);
      const { key, hash } = seamKey();
      const keyId = await migrate(migrationId, hash);
      const feedBefore = await w.store.db.selectFrom('change_feed').select('id').execute();
      const results = await Promise.all(Array.from({ length: 20 }, () => rehashMigratedKey(w.store.db, w.workspaceId, migrationId, key)));
      assert.deepEqual(results, Array(20).fill(true));
      assert.equal((await rehashAudits(keyId)).length, 1, 'exactly one rewrite');
      const byOwn = await w.store.db.selectFrom('keys').select(['id', 'pending_migration_id']).where('hash', '=', sha256b64(key)).execute();
      assert.deepEqual(byOwn, [{ id: keyId, pending_migration_id: null }]);
      assert.equal((await w.store.db.selectFrom('keys').select('id').where('hash', '=', hash).execute()).length, 0);
      // Every rewrite (and every call that found it done) tells all nodes: the key, and the workspace's unknown hashes.
      const feed = await w.store.db.selectFrom('change_feed').select(['kind', 'ref']).where('ref', 'in', [keyId, w.workspaceId]).execute();
      assert.ok(feed.length > feedBefore.length);
      assert.ok(feed.some((c) => c.kind === 'key' && c.ref === keyId));
      assert.ok(feed.some((c) => c.kind === 'keys-added' && c.ref === w.workspaceId));
      const v = await verifyV1(key);
      assert.deepEqual([v.valid, v.keyId], [true, keyId]);
      const v2 = v2Data<{ valid: boolean; keyId: string }>(await w.post('/v2/keys.verifyKey', { key }));
      assert.deepEqual([v2.valid, v2.keyId], [true, keyId]);
    });

    for (const [algorithm, encode] of [
      ['sha256_hex', (k: string) => sha256(k).digest('hex')],
      ['sha256_base64url', (k: string) => sha256(k).digest('base64url')],
    ] as const) {
      test(`${algorithm}: the whole key's digest in that form, rewritten once; the imported start is kept`, async () => {
        const migrationId = await migration(algorithm);
        const key = `acme_${randomBytes(16).toString('hex')}`;
        const keyId = await migrate(migrationId, encode(key));
        await w.store.db.updateTable('keys').set({ start: 'acme_' }).where('id', '=', keyId).execute();
        assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, migrationId, `${key}x`), false, 'another key');
        assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, migrationId, key), true);
        const row = await keyRow(w, keyId);
        assert.deepEqual([row.hash, row.start, row.pending_migration_id], [sha256b64(key), key.slice(0, 9), null]);
        assert.equal((await verifyV1(key)).valid, true);
      });
    }

    test('no rewrite: a sha256 migration, an unknown or foreign migration, another migration’s key, a malformed seam key, a deleted key', async () => {
      const sha = await migration('sha256');
      const plain = `k_${randomBytes(16).toString('hex')}`;
      await migrate(sha, sha256b64(plain));
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, sha, plain), false, 'sha256: imported with its final hash');
      assert.equal((await verifyV1(plain)).valid, true);

      const seam = await migration(SEAM);
      const { key, hash } = seamKey();
      const keyId = await migrate(seam, hash);
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, 'mig_unknown', key), false);
      const other = await w.otherWorkspace();
      assert.equal(await rehashMigratedKey(w.store.db, other.workspaceId, seam, key), false, 'the migration of another workspace');
      const otherSeam = await migration(SEAM);
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, otherSeam, key), false, 'pending on another migration');
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, seam, 'nounderscores'), false);
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, seam, 'one_part'), false);
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, seam, `${key.split('_')[0]}_x_wrong`), false);
      assert.equal((await keyRow(w, keyId)).hash, hash, 'untouched');

      await w.store.db.updateTable('keys').set({ deleted_at: Date.now() }).where('id', '=', keyId).execute();
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, seam, key), false, 'deleted');
      assert.equal((await keyRow(w, keyId)).hash, hash);
      assert.equal((await rehashAudits(keyId)).length, 0);
    });

    test('a key that took Keyhold’s hash meanwhile keeps it; the pending key stays pending', async () => {
      const migrationId = await migration('sha256_hex');
      const key = `dup_${randomBytes(16).toString('hex')}`;
      const keyId = await migrate(migrationId, sha256(key).digest('hex'));
      // Stored directly (an import through the API refuses a key whose hash exists in any form).
      const native = await w.createKey({ apiId });
      await w.store.db
        .updateTable('keys')
        .set({ hash: sha256b64(key) })
        .where('id', '=', native.keyId)
        .execute();
      assert.equal(await rehashMigratedKey(w.store.db, w.workspaceId, migrationId, key), false);
      assert.equal((await keyRow(w, keyId)).pending_migration_id, migrationId);
    });
  });
}
