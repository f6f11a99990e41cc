import { setFlagsFromString } from 'node:v8';
import type { Worker } from 'node:worker_threads';

/** The server's `--max-semi-space-size=N` (package.json's start script; the `=` form), which V8 applies to every isolate. */
const SEMI_SPACE_FLAG = [...(process.env.NODE_OPTIONS ?? '').split(/\s+/), ...process.execArgv].findLast((a) =>
  a.startsWith('--max-semi-space-size='),
);
let starting = 0;

/**
 * `start()`'s worker with the young generation its resourceLimits ask for. V8's --max-semi-space-size is
 * process-wide and wins over a worker's limits (the thread had the server's 16 MB of semi-spaces, measured), so
 * it is cleared while the worker's isolate is made and set again once the worker runs; V8 reads it only when an
 * isolate's heap is set up, so the server's own heap keeps its size.
 */
export function withOwnYoungGeneration(start: () => Worker): Worker {
  if (!SEMI_SPACE_FLAG) return start();
  if (starting++ === 0) setFlagsFromString('--max-semi-space-size=0');
  let worker: Worker;
  try {
    worker = start();
  } catch (err) {
    if (--starting === 0) setFlagsFromString(SEMI_SPACE_FLAG);
    throw err;
  }
  const restore = () => {
    worker.off('online', restore).off('exit', restore);
    if (--starting === 0) setFlagsFromString(SEMI_SPACE_FLAG);
  };
  worker.on('online', restore).on('exit', restore);
  return worker;
}
