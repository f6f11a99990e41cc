import { parentPort, workerData } from 'node:worker_threads';
import { Kysely } from 'kysely';
import { sqliteDialect } from '../../store/dialects/sqlite.ts';
import type { Database } from '../../store/schema.ts';
import { writeVerifications } from './verification-writes.ts';
import { unpackVerifications, type PackedVerifications } from './packed-verifications.ts';

/*
 * The analytics writer thread (analytics-writer-thread.ts): writes batches of verification events into the SQLite
 * file through a connection of its own, with the recorder's own write (writeVerifications), so that the rows, the
 * roll-ups and SQLite's work on them cost the thread that answers verifications nothing. One batch at a time: the
 * starting thread sends the next only once this one is answered.
 */
const { path, busyTimeoutMs, region } = workerData as { path: string; busyTimeoutMs: number; region: string };
const db = new Kysely<Database>({ dialect: sqliteDialect(path, busyTimeoutMs, true) });

parentPort!.on('message', async ({ batch }: { batch: PackedVerifications }) => {
  try {
    await writeVerifications(db, unpackVerifications(batch), region, 'sqlite');
    parentPort!.postMessage({ ok: true });
  } catch (err) {
    // What isStoreUnavailable reads (node:sqlite's errcode), so that a locked or full store is told as such.
    const { message, errcode } = err as { message?: string; errcode?: number };
    parentPort!.postMessage({ ok: false, message: String(message ?? err), errcode });
  }
});
