import type { Worker } from 'node:worker_threads';
import { once } from 'node:events';
import { builtinsOnlyWorker } from './builtins-worker.ts';

/**
 * How often the checkpointer copies the write-ahead log into the database file. Each checkpoint ends with an
 * fsync of the file, which on a busy file system also holds up the writes of other threads for a moment: once
 * a second bounds those to one a second, and the log to what one second of writes adds to it.
 */
const CHECKPOINT_INTERVAL_MS = 1_000;

/**
 * Checkpoints of a SQLite file off the event loop. By default SQLite checkpoints on the connection whose
 * commit takes the write-ahead log past 1,000 pages, synchronously: with node:sqlite that commit blocked
 * every request of the process for 10–30 ms each time (measured while the retention pass deleted rows), so
 * the writer's automatic checkpoints are turned off (`wal_autocheckpoint = 0`, see sqlite.ts) and a worker
 * thread (sqlite-checkpointer.ts) checkpoints instead. Should the worker fail or end, `lost` is called once
 * (sqlite.ts turns the writer's automatic checkpoints back on), so the log never grows without bound. `stop`
 * checkpoints once more and closes its connection.
 */
export class Checkpoints {
  readonly #worker: Worker;
  #stopping = false;
  #exited = false;

  constructor(path: string, lost: () => void) {
    this.#worker = builtinsOnlyWorker(new URL('./sqlite-checkpointer.ts', import.meta.url), {
      workerData: { path, intervalMs: CHECKPOINT_INTERVAL_MS },
    });
    let reported = false;
    const onLost = () => {
      if (this.#stopping || reported) return;
      reported = true;
      lost();
    };
    this.#worker.on('error', onLost);
    this.#worker.on('exit', () => {
      this.#exited = true;
      onLost();
    });
    this.#worker.unref();
  }

  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    if (this.#exited) return;
    const exited = once(this.#worker, 'exit');
    this.#worker.postMessage('stop');
    const timer = setTimeout(() => void this.#worker.terminate(), 2_000);
    await exited.catch(() => {});
    clearTimeout(timer);
  }
}
