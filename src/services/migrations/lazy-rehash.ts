import type { Db } from '../../store/store.ts';

/**
 * Lazy migration of a key imported with a foreign hash (keys.migrateKeys, migrations of an algorithm other
 * than `sha256`): when a verification of `key` finds nothing and names `migrationId`, the key of that
 * migration whose stored hash is `key` hashed the migration's way is rewritten to Keyhold's own hash, once
 * (a conditional update on the old hash), and both hashes are evicted from every node's cache. Returns
 * whether such a key now has Keyhold's hash of `key` (rewritten by this call or a concurrent one).
 */
export async function rehashMigratedKey(_db: Db, _workspaceId: string, _migrationId: string, _key: string): Promise<boolean> {
  // Written with the migration algorithms (keys.migrateKeys); until then no migration has foreign hashes.
  return false;
}
