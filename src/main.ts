import { enableCompileCache } from 'node:module';

/*
 * The server's entry point. Most of a start is loading some 300 modules: stripping the types of ours and
 * compiling them all. Node's compile cache keeps both from one start to the next, so the cache is turned on
 * before anything else is loaded, and the server (server.ts) is loaded after. It lives in
 * os.tmpdir()/node-compile-cache (NODE_COMPILE_CACHE names another directory, NODE_DISABLE_COMPILE_CACHE=1
 * turns it off); its entries are per Node version and checked against each file's content, so a changed
 * file is never run from a stale entry. It is written when the process exits. A directory that cannot be
 * written leaves the cache off and changes nothing else: enableCompileCache never throws.
 */
enableCompileCache();
await import('./server.ts');
