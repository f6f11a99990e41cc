import { newId } from '../../domain/ids.ts';
import { hashKey } from '../../crypto/keys.ts';
import type { Db, Tx } from '../../store/store.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { transact, type ChangeSet } from '../changes.ts';
import { foreignHash, isMigrationAlgorithm, seamParts, SEAM, type MigrationAlgorithm } from './hash-algorithms.ts';

/**
 * Lazy migration of a key imported with a foreign hash (keys.migrateKeys, migrations of an algorithm other
 * than `sha256`): when a verification of `key` finds nothing and names `migrationId`, the key of that
 * migration whose stored hash is `key` hashed the migration's way is rewritten to Keyhold's own hash, once
 * (a conditional update on the old hash), and both hashes are evicted from every node's cache. Returns
 * whether such a key now has Keyhold's hash of `key` (rewritten by this call or a concurrent one).
 */
export async function rehashMigratedKey(db: Db, workspaceId: string, migrationId: string, key: string): Promise<boolean> {
  const migration = await db
    .selectFrom('key_migrations')
    .select('algorithm')
    .where('id', '=', migrationId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  // `sha256` migrations imported their keys with their final hash: a miss is a miss.
  if (!migration || !isMigrationAlgorithm(migration.algorithm) || migration.algorithm === 'sha256') return false;
  const algorithm = migration.algorithm;
  // A seam migration's key without three `_`-separated parts cannot be one of its keys: no match (not a 400).
  const foreign = foreignHash(algorithm, key);
  if (foreign === undefined) return false;
  const own = hashKey(key);
  try {
    return await transact(db, async (tx, changes) => {
      const now = Date.now();
      const pending = await tx
        .selectFrom('keys')
        .select(['id', 'start'])
        .where('hash', '=', foreign)
        .where('pending_migration_id', '=', migrationId)
        .where('workspace_id', '=', workspaceId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      if (pending) {
        const start = rehashedStart(algorithm, key, pending.start);
        // Conditional on the old hash: of concurrent first verifications, exactly one rewrites the key.
        const r = await tx
          .updateTable('keys')
          .set({ hash: own, start, pending_migration_id: null, updated_at: now })
          .where('id', '=', pending.id)
          .where('hash', '=', foreign)
          .where('pending_migration_id', '=', migrationId)
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) === 1) {
          await auditRehash(tx, { workspaceId, migrationId, algorithm, keyId: pending.id, start: { from: pending.start, to: start } }, now);
          evict(changes, pending.id, workspaceId);
          return true;
        }
      }
      return rehashedAlready(tx, changes, { workspaceId, migrationId, own });
    });
  } catch (err) {
    // Another key took Keyhold's hash of `key` meanwhile (it is then found as that key): this one stays pending.
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/**
 * Whether the migration's key has Keyhold's hash already (a concurrent call rewrote it). This node may have
 * remembered that hash as unknown a moment ago: the same evictions, so that the caller's next lookup finds it.
 */
async function rehashedAlready(
  tx: Tx,
  changes: ChangeSet,
  { workspaceId, migrationId, own }: { workspaceId: string; migrationId: string; own: string },
): Promise<boolean> {
  const done = await tx
    .selectFrom('keys')
    .select('id')
    .where('hash', '=', own)
    .where('migration_id', '=', migrationId)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!done) return false;
  evict(changes, done.id, workspaceId);
  return true;
}

/** The key (cached under its old hash) and every node's memory of its new hash as unknown. */
const evict = (changes: ChangeSet, keyId: string, workspaceId: string) => changes.key(keyId).keysAdded(workspaceId);

/**
 * The visible start of a rewritten key. Seam's: `<prefix>_` + the first 4 characters of `<short>_<long>`
 * (as Unkey does). Others: an imported start that the key begins with (a bare `<prefix>_` gains the next 4
 * characters), else the key's first 4. At least 8 characters stay hidden (else a short key shows none of it).
 */
export function rehashedStart(algorithm: MigrationAlgorithm, key: string, imported: string): string {
  let start: string;
  const parts = algorithm === SEAM ? seamParts(key) : undefined;
  if (parts) start = `${parts.prefix}_${`${parts.short}_${parts.long}`.slice(0, 4)}`;
  else if (imported !== '' && key.startsWith(imported)) start = imported.endsWith('_') ? key.slice(0, imported.length + 4) : imported;
  else start = key.slice(0, 4);
  return start.length + 8 <= key.length ? start : '';
}

/** The `key.update` audit record of a rewrite; its actor is the migration (a verification naming it asked). */
async function auditRehash(
  tx: Tx,
  r: { workspaceId: string; migrationId: string; algorithm: MigrationAlgorithm; keyId: string; start: { from: string; to: string } },
  now: number,
): Promise<void> {
  await tx
    .insertInto('audit_logs')
    .values({
      id: newId('log'),
      workspace_id: r.workspaceId,
      event: 'key.update',
      actor_type: 'migration',
      actor_id: r.migrationId,
      target_type: 'key',
      target_id: r.keyId,
      request_id: null,
      description: `hash rewritten from ${r.algorithm} to Keyhold's sha256 on its first verification naming the migration`,
      diff: JSON.stringify({
        hash: { from: r.algorithm, to: 'sha256' },
        start: r.start,
        pendingMigrationId: { from: r.migrationId, to: null },
      }),
      created_at: now,
    })
    .execute();
}
