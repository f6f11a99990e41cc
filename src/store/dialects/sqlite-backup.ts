import { builtinsOnlyWorker } from './builtins-worker.ts';

/** How the copy is paced: at most `bytesPerSecond` (0: no limit, one step), in steps of about `stepBytes`. */
export interface BackupPace {
  bytesPerSecond: number;
  stepBytes: number;
}

/** What the worker (sqlite-backupper.ts) is given. */
export interface BackupJob extends BackupPace {
  sourcePath: string;
  targetPath: string;
}

/** What a copy took: pages copied, their size, and the steps it took (a copy that restarted would take more). */
export interface BackupStats {
  pages: number;
  pageSize: number;
  steps: number;
}

/**
 * Copies the SQLite database at `sourcePath` into `targetPath` (a new, empty file the caller has created) with
 * SQLite's online backup, while other processes (the server) keep reading and writing it.
 *
 * Why paced steps in one read transaction (sqlite-backupper.ts does the copy, in a worker thread):
 * - One read transaction throughout: the copy is the snapshot of the moment it began, and it never restarts
 *   (a copy in steps without it restarts from the first page whenever another connection writes between two
 *   steps: under the server's steady writes it would never finish). In WAL mode a reader holds no lock the
 *   writer needs; the only cost to the server is that checkpoints cannot pass that snapshot until the copy
 *   ends, so the WAL grows for the backup's duration and is checkpointed afterwards.
 * - Paced: copied in one burst, a large file takes a core and the disk for its duration, and the server's
 *   verifications (on the same machine) wait behind it; in small steps with pauses the server keeps its share.
 *   Each pause lasts until the copy is back within its pace, and at least as long as the step before it: on a
 *   machine so loaded that the copy falls behind its pace, it still leaves the CPU idle half the time.
 * - Not `VACUUM INTO`: it rebuilds every table and index row by row, more CPU for a smaller file.
 * - In a worker: node:sqlite's backup runs each step on the thread pool and calls its progress callback between
 *   steps synchronously, so the pause can only be a blocking wait, which must not hold up the caller's event loop.
 */
export async function backupSqliteFile(sourcePath: string, targetPath: string, pace: BackupPace): Promise<BackupStats> {
  const job: BackupJob = { sourcePath, targetPath, ...pace };
  const worker = builtinsOnlyWorker(new URL('./sqlite-backupper.ts', import.meta.url), {
    workerData: job,
  });
  let stats: BackupStats | undefined;
  let failure: unknown;
  worker.once('message', (m: BackupStats) => (stats = m));
  worker.once('error', (e) => (failure = e));
  // Until the worker has ended (and closed both files), even when it failed: the caller then removes the copy.
  const code = await new Promise<number>((resolve) => worker.once('exit', resolve));
  if (failure) throw failure;
  if (!stats) throw new Error(`the backup worker ended (exit code ${code}) without finishing the copy`);
  return stats;
}
