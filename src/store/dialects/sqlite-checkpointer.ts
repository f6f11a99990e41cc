import { parentPort, workerData } from 'node:worker_threads';
import { DatabaseSync } from 'node:sqlite';

/*
 * Runs in a worker thread (sqlite-checkpoints.ts starts it): copies the write-ahead log into the database file
 * every `intervalMs` with its own connection, so that this work, which writes and syncs megabytes when much has
 * been written, never runs on the server's event loop. PASSIVE: it takes no lock that writers or readers wait
 * for, copies what it can and leaves the rest for the next round; a failure (another process checkpointing at
 * that moment) is the next round's work too.
 */
const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new DatabaseSync(path, { timeout: 0 });
const checkpoint = () => {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
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
