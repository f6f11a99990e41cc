import { readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Each worker module's JavaScript, as a data: URL (a few small files, read and stripped once). */
const scripts = new Map<string, URL>();

/**
 * A worker thread running `module`, a TypeScript file that imports node: builtins only (the SQLite checkpointer,
 * backup and analytics query workers), handed to the worker as JavaScript: its types are stripped here, by the
 * thread that has Node's TypeScript stripper loaded already. A worker that loads a .ts file itself loads a stripper
 * of its own, which the thread keeps for its life: about 10-15 MB of RSS per thread (docs/performance.md,
 * "(2026-11-30, sixth)"). Refuses a module that imports anything else: a data: URL has no directory to resolve it in.
 */
export function builtinsOnlyWorker(module: URL, options: WorkerOptions): Worker {
  let script = scripts.get(module.href);
  if (script === undefined) {
    const js = stripTypeScriptTypes(readFileSync(module, 'utf8'));
    const imported = [...js.matchAll(/^\s*import\b[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1]);
    const other = imported.find((specifier) => !specifier.startsWith('node:'));
    if (other !== undefined)
      throw new Error(`${module.pathname} imports ${other}: a worker started as JavaScript imports node: builtins only`);
    script = new URL(`data:text/javascript,${encodeURIComponent(js)}`);
    scripts.set(module.href, script);
  }
  return new Worker(script, options);
}
