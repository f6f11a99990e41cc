import { open, stat, unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Store } from '../../store/store.ts';

/** A backup that cannot be made as asked (PostgreSQL, an existing or unreachable target): nothing was written. */
export class BackupRefused extends Error {}

export interface BackupResult {
  /** The absolute path of the copy. */
  path: string;
  bytes: number;
  ms: number;
}

/**
 * `keyhold backup --pace`: the most megabytes (MiB) a second the copy reads and writes; 0: no limit, the whole file
 * in one step (the fastest, and the hardest on a server sharing the machine). The default keeps verification p99
 * during a backup within 2× its p99 without one on a loaded 2-core machine (docs/performance.md).
 */
export const BACKUP_PACE_MB_PER_S = { default: 32, min: 0, max: 100_000 } as const;

/** The copy's step: small enough that one step is a short burst, large enough that steps cost little. */
export const BACKUP_STEP_BYTES = 256 * 1024;

/** What `keyhold backup` says on PostgreSQL: its own tool makes a consistent copy there. */
export const POSTGRES_BACKUP_HINT =
  'keyhold backup copies SQLite databases only; back up PostgreSQL with pg_dump, e.g. `pg_dump -Fc -n <schema> -f keyhold.dump <database>`, and restore it with pg_restore';

/** Why a copy alone does not restore recoverable keys: the vault's master keys are not in the database. */
export const MASTER_KEYS_NOTICE =
  'the copy holds recoverable keys encrypted under the master keys, which it does not include: keep KEYHOLD_MASTER_KEYS (or the master.key file beside the database) safe and separate; a restore needs them';

/**
 * Writes a consistent copy of the store's SQLite database to `targetPath` while the server keeps serving and
 * writing, at most `mbPerSecond` MiB a second (0: no limit; see backupSqliteFile for how). The target must not
 * exist: it is created exclusively (so two backups, or a file that appears meanwhile, are never overwritten),
 * and removed again if the copy fails. Throws BackupRefused, having written nothing, on PostgreSQL, for a pace
 * out of bounds, or when the target exists or cannot be created.
 */
export async function backupDatabase(
  store: Store,
  targetPath: string,
  mbPerSecond: number = BACKUP_PACE_MB_PER_S.default,
): Promise<BackupResult> {
  if (!store.backup) throw new BackupRefused(POSTGRES_BACKUP_HINT);
  const { min, max } = BACKUP_PACE_MB_PER_S;
  if (!Number.isInteger(mbPerSecond) || mbPerSecond < min || mbPerSecond > max)
    throw new BackupRefused(`the pace must be a whole number of MB a second, ${min}..${max} (0: no limit), got ${mbPerSecond}`);
  const path = resolve(targetPath);
  try {
    await (await open(path, 'wx', 0o600)).close();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new BackupRefused(`${path} already exists; keyhold backup never overwrites a file: give a new path`);
    if (code === 'ENOENT') throw new BackupRefused(`cannot create ${path}: its directory does not exist`);
    if (code === 'EACCES' || code === 'EROFS' || code === 'EISDIR')
      throw new BackupRefused(`cannot create ${path}: ${code === 'EISDIR' ? 'it is a directory' : 'permission denied'}`);
    throw e;
  }
  const started = performance.now();
  try {
    await store.backup(path, { bytesPerSecond: mbPerSecond * 1024 * 1024, stepBytes: BACKUP_STEP_BYTES });
  } catch (e) {
    await unlink(path).catch(() => {});
    throw e;
  }
  const ms = Math.round(performance.now() - started);
  return { path, bytes: (await stat(path)).size, ms };
}
