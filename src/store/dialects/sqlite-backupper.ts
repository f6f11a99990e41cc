import { parentPort, workerData } from 'node:worker_threads';
import { backup, DatabaseSync } from 'node:sqlite';
import type { BackupJob, BackupStats } from './sqlite-backup.ts';

/*
 * Runs in a worker thread (sqlite-backup.ts starts it): copies `sourcePath` into `targetPath` with SQLite's
 * online backup, `stepBytes` a step, pausing after each step until the copy is no further ahead than
 * `bytesPerSecond` allows, and at least as long as the step took (0: the whole file in one step, no pause).
 * node:sqlite calls `progress` between steps, synchronously, and schedules the next step when it returns: the
 * pause blocks this thread, never the caller's event loop.
 *
 * One read transaction, opened before the first step and held to the last, pins the snapshot: sqlite3_backup_step
 * opens (and closes) a read transaction of its own only when its source connection has none, and a copy in
 * steps restarts from its first page when another connection wrote between two of its read transactions; with
 * one transaction throughout there is nothing to restart, however much the server writes, and the copy is the
 * database as it was when the transaction began. In WAL mode that reader holds no lock a writer needs.
 */
const { sourcePath, targetPath, bytesPerSecond, stepBytes } = workerData as BackupJob;
const pause = new Int32Array(new SharedArrayBuffer(4));
const source = new DatabaseSync(sourcePath, { readOnly: true, timeout: 5_000 });
try {
  source.exec('BEGIN');
  source.prepare('select count(*) from sqlite_schema').get(); // BEGIN is deferred: this read takes the snapshot
  const { page_size: pageSize } = source.prepare('pragma page_size').get() as { page_size: number };
  const pagesPerStep = bytesPerSecond === 0 ? -1 : Math.max(1, Math.floor(stepBytes / pageSize));
  const started = performance.now();
  let stepStarted = started;
  let steps = 1; // progress is called after every step but the last
  const pages = await backup(source, targetPath, {
    rate: pagesPerStep,
    progress: ({ totalPages, remainingPages }) => {
      steps++;
      const now = performance.now();
      // No faster than the pace, and never busy more than half the time: on a machine so loaded that a step
      // takes longer than the pace allows, the pause grows with the step instead of vanishing.
      const dueMs = (((totalPages - remainingPages) * pageSize) / bytesPerSecond) * 1000;
      const pauseMs = Math.max(dueMs - (now - started), now - stepStarted);
      if (pauseMs >= 1) Atomics.wait(pause, 0, 0, pauseMs);
      stepStarted = performance.now();
    },
  });
  source.exec('COMMIT');
  const stats: BackupStats = { pages, pageSize, steps };
  parentPort!.postMessage(stats);
} finally {
  source.close();
}
