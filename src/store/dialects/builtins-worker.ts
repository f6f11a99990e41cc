import { readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Each worker module's JavaScript, as a data: URL (a few small files, read and stripped once). */
const scripts = new Map<string, URL>();

/**
 * What a module imports or re-exports by a literal specifier (`import … from 'x'`, `import 'x'`, `export … from 'x'`,
 * `import('x')`). A line of a comment or a string that reads like one counts too: the module is then refused, loudly.
 */
const IMPORTED = /\b(?:import|export)\s*(?:[\w*{}\s,]*?\bfrom\s*)?['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]/g;

/**
 * A worker thread running `module`, a TypeScript file that imports node: builtins only (the SQLite checkpointer,
 * backup and analytics query workers), handed to the worker as JavaScript: its types are stripped here, by the
 * thread that has Node's TypeScript stripper loaded already. A worker that loads a .ts file itself loads a stripper
 * of its own, which the thread keeps for its life: about 10-15 MB of RSS per thread (docs/performance.md,
 * "(2026-11-30, sixth)"). Refuses a module that imports anything else: a data: URL has no directory to resolve it in.
 * Stack traces name the file (its source URL), at the original lines and columns (stripping keeps them).
 */
export function builtinsOnlyWorker(module: URL, options: Omit<WorkerOptions, 'execArgv'>): Worker {
  let script = scripts.get(module.href);
  if (script === undefined) {
    const path = fileURLToPath(module);
    const js = stripTypeScriptTypes(readFileSync(path, 'utf8'), { sourceUrl: path });
    for (const [, from, dynamic] of js.matchAll(IMPORTED)) {
      const specifier = from ?? dynamic;
      if (!specifier.startsWith('node:'))
        throw new Error(`${path} imports ${specifier}: a worker started as JavaScript imports node: builtins only`);
    }
    script = new URL(`data:text/javascript,${encodeURIComponent(js)}`);
    scripts.set(module.href, script);
  }
  // Not the process' own flags: some (--input-type of `node -e`) stop a worker from loading its module.
  return new Worker(script, { ...options, execArgv: ['--disable-warning=ExperimentalWarning'] });
}
