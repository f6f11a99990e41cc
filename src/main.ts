import { enableCompileCache } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { exitOnStopSignalsWhileStarting } from './start/signals.ts';
import { makeDirectory } from './store/make-directory.ts';

// A stop requested during the start ends it at once, as PID 1 too (start/signals.ts).
exitOnStopSignalsWhileStarting();

/*
 * How far V8 lets the old generation grow past its live data before a full collection. By default that is
 * up to 4× on a machine with plenty of memory, and V8 keeps the pages a collection frees (pooled, still
 * resident) for reuse, so RSS follows the heap's high-water mark. Under key churn every evicted cache record
 * dies in the old generation: with 100,000 keys cached RSS climbed from 150 MB to about 500 MB (docs/production.md,
 * "Memory"). 10% keeps it near 320 MB for more frequent (mostly concurrent) full collections. V8 reads the
 * flag at every collection, so setting it here holds however the server is started (NODE_OPTIONS does not
 * accept it); a --heap-growing-percent given to node itself wins (0: V8's own factor).
 */
const HEAP_GROWING_PERCENT = 10;
if (!process.execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

/*
 * The server's entry point. Most of a start is loading some 300 modules: stripping the types of ours and
 * compiling them all. Node's compile cache keeps both from one start to the next, so the cache is turned on
 * before anything else is loaded, and the server (server.ts) is loaded after. It lives in
 * os.tmpdir()/node-compile-cache (NODE_COMPILE_CACHE names another directory, NODE_DISABLE_COMPILE_CACHE=1
 * turns it off); its entries are per Node version and checked against each file's content, so a changed
 * file is never run from a stale entry. It is written when the process exits. A directory that cannot be
 * made or written leaves the cache off and changes nothing else. Node makes the directory with its recursive
 * mkdir, which spins forever where a directory refuses children with ENOENT (a TMPDIR under /proc: see
 * make-directory.ts), so it is made here first, and the cache is turned on only when that worked. (With
 * NODE_COMPILE_CACHE set, Node turns the cache on itself before this file runs, and this call changes nothing.)
 */
const cacheDirectory = join(tmpdir(), 'node-compile-cache');
if (usable(cacheDirectory)) enableCompileCache(cacheDirectory);
await import('./server.ts');

function usable(dir: string): boolean {
  try {
    makeDirectory(dir);
    return true;
  } catch {
    return false;
  }
}
