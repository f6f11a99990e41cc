// What recording verifications for analytics does to their latency (not run by `npm run bench`):
//
//   node --disable-warning=ExperimentalWarning bench/recording-latency.ts [--seconds 5] [--rounds 3]
//        [--connections 10] [--compare NAME=DIR ...]
//
// A server (src/main.ts on a SQLite file, analytics on) answers v1 keys.verifyKey of one cached key under
// autocannon (its own process, bench/load-worker.ts) with `--connections` connections, for `--rounds` rounds of
// `--seconds`; each round prints req/s and the latency's p50, p99, p99.9 and max (ms, autocannon's whole-ms
// histogram). The tail is where a flush shows: one that runs on the server's event loop holds every request
// behind it for as long as it takes. `--compare NAME=DIR` (repeatable) runs a server from the source tree DIR
// (a checkout of another commit, with node_modules) the same way after this one, each round alternating.

import { parseArgs } from 'node:util';
import { VERIFY_PATH } from './cases.ts';
import { killAll, stopChild } from './processes.ts';
import { scratchStore } from './scratch-store.ts';
import { autocannon, call, startServer, type Load, type Server } from './server.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
    compare: { type: 'string', multiple: true, default: [] },
  },
});
const seconds = Number(args.seconds);
const rounds = Number(args.rounds);
const connections = Number(args.connections);

/** A server from `root` (this tree when absent) on its own store, and the verification of its one key. */
async function started(root: string | undefined): Promise<{ server: Server; load: Load; cleanup(): Promise<void> }> {
  const store = scratchStore('sqlite');
  const server = await startServer(store.url, root ? { root } : {});
  const admin = (path: string, body: unknown) =>
    call(server, { method: 'POST', path, body: JSON.stringify(body), rootKey: server.rootKey });
  const { apiId } = (await admin('/v1/apis.createApi', { name: 'recording-latency' })).json;
  const { key } = (await admin('/v1/keys.createKey', { apiId })).json;
  const load: Load = { method: 'POST', path: VERIFY_PATH, body: JSON.stringify({ apiId, key }) };
  await autocannon(server, load, 1, { connections, pipelining: 1 }); // warm-up
  return { server, load, cleanup: store.cleanup };
}

const cases = [{ name: 'this tree', root: undefined as string | undefined }].concat(
  args.compare.map((spec) => {
    const [name, dir] = spec.split('=');
    if (!name || !dir) throw new Error(`--compare takes NAME=DIR, got ${spec}`);
    return { name, root: dir };
  }),
);
const running = [];
for (const c of cases) running.push({ ...c, ...(await started(c.root)) });
try {
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 ? running : [...running].reverse();
    for (const c of order) {
      const r = await autocannon(c.server, c.load, seconds, { connections, pipelining: 1 });
      const l = r.latency;
      console.log(
        `${c.name.padEnd(12)} round ${round}: ${Math.round(r.requests.average).toLocaleString('en')} req/s  p50 ${l.p50} ms  p99 ${l.p99} ms  p99.9 ${l.p99_9} ms  max ${l.max} ms`,
      );
    }
  }
} finally {
  for (const c of running) {
    await stopChild(c.server.child);
    await c.cleanup();
  }
  killAll();
}
