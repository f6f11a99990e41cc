import { Worker } from 'node:worker_threads';
import { QueryFailedError, QueryTimeoutError, type ReadOnlyQuery } from '../read-only-query.ts';

type WorkerAnswer = { rows: Array<Record<string, unknown>> } | { error: string; timeout: boolean };

/** Idle query workers kept for the next queries (each holds a read-only connection and its page cache). */
const MAX_IDLE = 2;
/** An idle worker ends after this long without a query. */
const IDLE_MS = 60_000;

interface Idle {
  worker: Worker;
  timer: NodeJS.Timeout;
}

/**
 * SQLite: each query runs in a worker thread (sqlite-analytics-worker.ts) with its own read-only connection to the
 * database file, so the thread answering requests never runs it. A worker answers one query at a time; after a
 * query it waits, idle, for the next (at most MAX_IDLE wait, each for IDLE_MS): starting a worker and opening its
 * connection cost some 30 ms, more than a typical query over the roll-ups. A query past its deadline fails in the
 * worker (its row check) and its worker is terminated in any case, never reused.
 */
export function sqliteReadOnlyQuery(path: string): { run: ReadOnlyQuery; close(): Promise<void> } {
  const idle: Idle[] = [];
  let closed = false;

  const take = (): Worker => {
    const held = idle.pop();
    if (held) {
      clearTimeout(held.timer);
      held.worker.ref();
      return held.worker;
    }
    return new Worker(new URL('./sqlite-analytics-worker.ts', import.meta.url), {
      workerData: { path },
      execArgv: ['--disable-warning=ExperimentalWarning'],
    });
  };

  const giveBack = (worker: Worker) => {
    if (closed || idle.length >= MAX_IDLE) {
      void worker.terminate();
      return;
    }
    worker.unref(); // an idle worker does not keep the process alive
    const entry: Idle = {
      worker,
      timer: setTimeout(() => {
        idle.splice(idle.indexOf(entry), 1);
        void worker.terminate();
      }, IDLE_MS).unref(),
    };
    idle.push(entry);
  };

  const run: ReadOnlyQuery = (sql, params, timeoutMs) =>
    new Promise((resolve, reject) => {
      const worker = take();
      let settled = false;
      const settle = (fn: () => void, reusable: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        if (reusable) giveBack(worker);
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

  return {
    run,
    async close() {
      closed = true;
      for (const { timer } of idle) clearTimeout(timer);
      await Promise.all(idle.splice(0).map(({ worker }) => worker.terminate()));
    },
  };
}
