import { parentPort, workerData } from 'node:worker_threads';
import { DatabaseSync } from 'node:sqlite';

/*
 * Runs in a worker thread (sqlite-checkpoints.ts starts it): copies the write-ahead log into the database file
 * every `intervalMs` with its own connection, so that this work, which writes and syncs megabytes when much has
 * been written, never runs on the server's event loop. PASSIVE: it takes no lock that writers or readers wait
 * for, copies what it can and leaves the rest for the next round; a failure (another process checkpointing at
 * that moment) is the next round's work too.
 *
 * PASSIVE alone never bounds the log: SQLite starts writing the log from its beginning again only once every frame
 * was copied while no transaction was writing, and under steady writes (analytics batches back to back) that moment
 * never comes: the log grew to 3.8 GB beside a 350 MB database. So once the log holds more than RESTART_FRAMES and
 * all of it was copied, a RESTART checkpoint waits (up to RESTART_WAIT_MS, new writes held meanwhile) for the
 * transaction being written to end, copies what it added and makes the next writer start the log over; the
 * writer's journal_size_limit (sqlite.ts) then gives the file's space back.
 */
const RESTART_FRAMES = 16_384;
const RESTART_WAIT_MS = 2_000;
const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new DatabaseSync(path, { timeout: 0 });
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const checkpoint = () => {
  try {
    const { log, checkpointed } = passive.get() as { busy: number; log: number; checkpointed: number };
    // Only when every frame could be copied: a reader on an older snapshot (a backup's long copy) pins the log, and
    // a RESTART would hold every writer for RESTART_WAIT_MS each round until that reader is done.
    if (log > RESTART_FRAMES && checkpointed === log) {
      db.exec(`PRAGMA busy_timeout = ${RESTART_WAIT_MS}`);
      try {
        db.exec('PRAGMA wal_checkpoint(RESTART)');
      } finally {
        db.exec('PRAGMA busy_timeout = 0');
      }
    }
  } catch {
    /* busy: next round */
  }
};
const timer = setInterval(checkpoint, intervalMs);
parentPort!.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort!.close();
});
