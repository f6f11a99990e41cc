import { Worker } from 'node:worker_threads';
import { QueryFailedError, QueryTimeoutError, type ReadOnlyQuery } from '../read-only-query.ts';

type WorkerAnswer = { rows: Array<Record<string, unknown>> } | { error: string; timeout: boolean };

/**
 * SQLite: each query runs in a worker thread of its own (sqlite-analytics-worker.ts) with a read-only connection
 * to the database file, and is stopped at its deadline (the worker's row check fails it; the worker is
 * terminated in any case), so the thread answering requests never runs it.
 */
export function sqliteReadOnlyQuery(path: string): ReadOnlyQuery {
  return (sql, params, timeoutMs) =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./sqlite-analytics-worker.ts', import.meta.url), {
        workerData: { path, sql, params, deadline: Date.now() + timeoutMs },
        execArgv: ['--disable-warning=ExperimentalWarning'],
      });
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        void worker.terminate();
        fn();
      };
      const timer = setTimeout(() => settle(() => reject(new QueryTimeoutError(timeoutMs))), timeoutMs);
      worker.on('message', (answer: WorkerAnswer) =>
        settle(() => {
          if ('rows' in answer) resolve(answer.rows);
          else reject(answer.timeout ? new QueryTimeoutError(timeoutMs) : new QueryFailedError(answer.error));
        }),
      );
      worker.on('error', (err) => settle(() => reject(err)));
      worker.on('exit', () => settle(() => reject(new Error('the analytics query worker ended without an answer'))));
    });
}
