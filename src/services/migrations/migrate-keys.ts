import { invalid, type FieldProblem } from '../../domain/errors.ts';
import type { Db, Tx } from '../../store/store.ts';
import { insertRows } from '../../store/bulk-statements.ts';
import { actorOf, requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { requireApi } from '../lookups.ts';
import { nextItemIndex } from './enqueue-keys.ts';
import { HASH_FORMATS, normalizedHash, variantOfAlgorithm, type MigrationAlgorithm } from './hash-algorithms.ts';
import { importedHash, type ImportKeyItem } from './import-item.ts';
import { importKeys, storedHashes } from './import-keys.ts';
import { emitImportEvents } from './migration-events.ts';
import { itemId, requireMigration } from './migration-records.ts';

/*
 * keys.migrateKeys (Unkey v2): keys whose secrets the caller does not have, imported by their hash into a
 * migration, at once and all in one transaction, through the import of migrations.createKeys. The hash is
 * the migration's algorithm's: a key imported with another algorithm's than Keyhold's waits for its first
 * verification naming the migration (lazy-rehash.ts).
 */

/** keys.migrateKeys takes 1..1000 keys per request. */
export const MAX_MIGRATE_KEYS = 1000;

/** A key to migrate: its hash (in the migration's algorithm's form) and what an import item gives besides. */
export type MigrateKeyItem = Omit<ImportKeyItem, 'apiId' | 'hash' | 'plaintext' | 'encrypted' | 'start' | 'prefix'> & { hash: string };

export interface MigrateKeysInput {
  migrationId: string;
  apiId: string;
  keys: MigrateKeyItem[];
}

/** The keys made, in request order, with the hash as the request gave it; the hashes skipped because their key exists already. */
export interface MigrateKeysResult {
  migrated: Array<{ hash: string; keyId: string }>;
  failed: string[];
}

/** Each key's hash must be in its algorithm's form and differ from every other key's of the request (400 at `/keys/<i>/hash`). */
function hashProblems(keys: MigrateKeyItem[], algorithm: MigrationAlgorithm): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const first = new Map<string, number>();
  keys.forEach((k, i) => {
    const stored = normalizedHash(algorithm, k.hash);
    if (stored === undefined) {
      problems.push({ path: `/keys/${i}/hash`, message: `must be ${HASH_FORMATS[algorithm]} (the migration's algorithm is ${algorithm})` });
      return;
    }
    const earlier = first.get(stored);
    if (earlier === undefined) first.set(stored, i);
    else problems.push({ path: `/keys/${i}/hash`, message: `repeats the hash of key ${earlier}` });
  });
  return problems;
}

/**
 * keys.migrateKeys. Checks, in order: `api.<apiId>.create_key` (403) → a live API of the caller's workspace
 * (404) → the migration, of that workspace (404) → every hash in the migration's algorithm's form, none twice
 * (400). Then one transaction: keys whose key is stored already (under any form of its hash, in any
 * workspace) are skipped and reported in `failed`; the others are imported as migrations.createKeys imports
 * (roles and permissions must exist: 404 naming every missing one, nothing written); each key becomes an
 * item of the migration, `migrated` (with its key) or `failed`, as enqueued items do.
 */
export async function migrateKeys(db: Db, caller: Caller, input: MigrateKeysInput): Promise<MigrateKeysResult> {
  const { workspaceId } = caller;
  const { migrationId, apiId } = input;
  requirePermissions(caller, `api.${apiId}.create_key`);
  await requireApi(db, workspaceId, apiId);
  const { algorithm } = await requireMigration(db, migrationId, workspaceId);
  const problems = hashProblems(input.keys, algorithm);
  if (problems.length) throw invalid(problems);
  const variant = variantOfAlgorithm(algorithm);
  const items: ImportKeyItem[] = input.keys.map(({ hash, ...rest }) => ({ ...rest, apiId, hash: { value: hash, variant } }));

  return transact(db, async (tx, changes) => {
    const now = Date.now();
    const first = await nextItemIndex(tx, migrationId, workspaceId, now);
    const hashes = items.map((item) => importedHash(item, true));
    const existing = await storedHashes(
      tx,
      hashes.flatMap((h) => h.sameKey),
    );
    const exists = hashes.map((h) => h.sameKey.some((s) => existing.has(s)));
    const keyIds = await importKeys(
      tx,
      workspaceId,
      items.filter((_, i) => !exists[i]),
      { actor: actorOf(caller), requestId: caller.requestId, migrationId, now },
    );
    if (keyIds.length) changes.keysAdded(workspaceId);
    const result: MigrateKeysResult = { migrated: [], failed: [] };
    const keyIdOf: Array<string | null> = [];
    let next = 0;
    input.keys.forEach((k, i) => {
      const keyId = exists[i] ? null : keyIds[next++];
      keyIdOf.push(keyId);
      if (keyId) result.migrated.push({ hash: k.hash, keyId });
      else result.failed.push(k.hash);
    });
    await recordItems(tx, migrationId, first, { hashes: hashes.map((h) => h.hash), keyIds: keyIdOf }, now);
    await emitImportEvents(tx, workspaceId, { apiId, count: keyIds.length, migrationId }, { now, changes });
    return result;
  });
}

/** The request's keys as items of the migration, numbered on from `first`: `migrated` with their key, or `failed`. */
async function recordItems(
  tx: Tx,
  migrationId: string,
  first: number,
  { hashes, keyIds }: { hashes: string[]; keyIds: Array<string | null> },
  now: number,
): Promise<void> {
  await insertRows(
    tx,
    'key_migration_items',
    hashes.map((hash, i) => ({
      id: itemId(migrationId, first + i),
      migration_id: migrationId,
      item_index: first + i,
      hash,
      status: keyIds[i] ? 'migrated' : 'failed',
      key_id: keyIds[i],
      reason: keyIds[i] ? null : 'duplicate hash: a key with this hash already exists',
      created_at: now,
      updated_at: now,
    })),
  );
}
