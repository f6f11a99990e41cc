import type { Worker } from 'node:worker_threads';
import { QueryFailedError, QueryTimeoutError, type ReadOnlyQuery } from '../read-only-query.ts';
import { builtinsOnlyWorker } from './builtins-worker.ts';

type WorkerAnswer = { rows: Array<Record<string, unknown>> } | { error: string; timeout: boolean };

/** Idle query workers kept for the next queries (each holds a read-only connection and its page cache). */
const MAX_IDLE = 2;
/** An idle worker ends after this long without a query. */
const IDLE_MS = 60_000;

/**
 * SQLite: each query runs in a worker thread (sqlite-analytics-worker.ts) with its own read-only connection to the
 * database file, so the thread answering requests never runs it. A worker answers one query at a time; after a
 * query it waits, idle, for the next (at most MAX_IDLE wait, each for IDLE_MS): starting a worker and opening its
 * connection cost some 30 ms, more than a typical query over the roll-ups. A query past its deadline fails in the
 * worker (its row check) and its worker is terminated in any case, never reused.
 */
export function sqliteReadOnlyQuery(path: string): { run: ReadOnlyQuery; close(): Promise<void> } {
  const workers = new QueryWorkers(path);
  return { run: (sql, params, timeoutMs) => workers.run(sql, params, timeoutMs), close: () => workers.close() };
}

class QueryWorkers {
  readonly #path: string;
  readonly #idle: Array<{ worker: Worker; timer: NodeJS.Timeout }> = [];
  #closed = false;

  constructor(path: string) {
    this.#path = path;
  }

  run(sql: string, params: readonly unknown[], timeoutMs: number): Promise<Array<Record<string, unknown>>> {
    return new Promise((resolve, reject) => {
      const worker = this.#take();
      let settled = false;
      const settle = (fn: () => void, reusable: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        if (reusable) this.#giveBack(worker);
        else void worker.terminate();
        fn();
      };
      const onMessage = (answer: WorkerAnswer) => {
        if ('rows' in answer) settle(() => resolve(answer.rows), true);
        else settle(() => reject(answer.timeout ? new QueryTimeoutError(timeoutMs) : new QueryFailedError(answer.error)), !answer.timeout);
      };
      const onError = (err: Error) => settle(() => reject(err), false);
      const onExit = () => settle(() => reject(new Error('the analytics query worker ended without an answer')), false);
      const timer = setTimeout(() => settle(() => reject(new QueryTimeoutError(timeoutMs)), false), timeoutMs);
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
      worker.postMessage({ sql, params, deadline: Date.now() + timeoutMs });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const { timer } of this.#idle) clearTimeout(timer);
    await Promise.all(this.#idle.splice(0).map(({ worker }) => worker.terminate()));
  }

  #take(): Worker {
    const held = this.#idle.pop();
    if (held) {
      clearTimeout(held.timer);
      held.worker.ref();
      return held.worker;
    }
    return builtinsOnlyWorker(new URL('./sqlite-analytics-worker.ts', import.meta.url), {
      workerData: { path: this.#path },
    });
  }

  #giveBack(worker: Worker): void {
    if (this.#closed || this.#idle.length >= MAX_IDLE) {
      void worker.terminate();
      return;
    }
    worker.unref(); // an idle worker does not keep the process alive
    const entry = {
      worker,
      timer: setTimeout(() => {
        this.#idle.splice(this.#idle.indexOf(entry), 1);
        void worker.terminate();
      }, IDLE_MS).unref(),
    };
    this.#idle.push(entry);
  }
}
