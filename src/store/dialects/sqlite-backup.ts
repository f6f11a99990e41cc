import { backup, DatabaseSync } from 'node:sqlite';

/**
 * Copies the SQLite database at `sourcePath` into `targetPath` (a new, empty file the caller has created) with
 * SQLite's online backup API, while other processes (the server) keep reading and writing it.
 *
 * Why the online backup in a single step (`rate: -1`) rather than in steps or `VACUUM INTO`:
 * - In steps (`rate: N` pages at a time) the read lock on the source is released between steps, and a write by
 *   any other connection (the server spends credits on every verification) restarts the copy from the first
 *   page: under steady writes it would never finish.
 * - In one step the copy runs inside one read transaction. In WAL mode a reader holds no lock the writer needs:
 *   the server keeps committing (to the WAL) throughout, and the copy is the snapshot of the moment the step
 *   began. The only cost to the server is that checkpoints cannot pass that snapshot until the copy ends, so
 *   the WAL file grows for the backup's duration and is checkpointed afterwards.
 * - `VACUUM INTO` takes the same read snapshot but rebuilds every table and index row by row into the new file:
 *   more CPU (shared with the server on a small machine) for a smaller file; copying pages is cheaper.
 * Node runs the step on its thread pool, so this process' event loop is not blocked either.
 */
export async function backupSqliteFile(sourcePath: string, targetPath: string): Promise<void> {
  const source = new DatabaseSync(sourcePath, { readOnly: true });
  try {
    await backup(source, targetPath, { rate: -1 });
  } finally {
    source.close();
  }
}
