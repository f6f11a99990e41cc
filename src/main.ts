import { enableCompileCache } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDirectory } from './store/make-directory.ts';

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
