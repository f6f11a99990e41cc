// What recording costs a cached verification, and in which thread: `node bench/recording-profile.ts`.
// For each mode (recording on, the default, and KEYHOLD_ANALYTICS=off), one server on a fresh SQLite file runs
// under --cpu-prof while v1 keys.verifyKey of one key (no limits, no credits) is sent for `--seconds`; it prints
// req/s and the server's CPU per request (every thread, from /proc), then, per thread's profile (the main thread,
// the analytics writer thread, any other worker), its busy time per request and the functions with the most
// self time. A thread's profile spans its whole life (start-up and warm-up included), divided by the measured
// requests: compare modes, not absolute values.
//
//   --seconds N   load per mode (default 10)        --top N   functions per thread (default 20)
//   --modes on,off                                   (default both, in that order)

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VERIFY_PATH } from './cases.ts';
import { type CpuProfile, frameName, sampleUs, threadProfiles } from './cpu-profiles.ts';
import { exited, processCpuTotalSeconds as cpuOf, runStandalone } from './processes.ts';
import { autocannon, call, OUT_DIR, startServer, type Load, type Server } from './server.ts';
import { scratchStore } from './scratch-store.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    top: { type: 'string', default: '20' },
    modes: { type: 'string', default: 'on,off' },
  },
});
const SECONDS = Number(args.seconds);
const TOP = Number(args.top);
const OPTS = { connections: 50, pipelining: 1 };

async function verifyLoad(server: Server): Promise<Load> {
  const admin = (path: string, body: unknown) =>
    call(server, { method: 'POST', path, body: JSON.stringify(body), rootKey: server.rootKey });
  const { apiId } = (await admin('/v1/apis.createApi', { name: 'recording-profile' })).json;
  const { key } = (await admin('/v1/keys.createKey', { apiId })).json;
  const load: Load = { method: 'POST', path: VERIFY_PATH, body: JSON.stringify({ apiId, key }) };
  const first = await call(server, load);
  if (first.json?.valid !== true) throw new Error(`the key does not verify: ${JSON.stringify(first.json)}`);
  return load;
}

/** Busy time (idle left out) and self time per function, µs per request. */
function selfTimes(profile: CpuProfile, requests: number): { busy: number; top: Array<[string, number]> } {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const f = frames.get(profile.samples[i])!;
    if (f.functionName === '(idle)') continue;
    const name = frameName(f);
    const us = sampleUs(profile, i) / requests;
    self.set(name, (self.get(name) ?? 0) + us);
    busy += us;
  }
  return { busy, top: [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP) };
}

runStandalone(async () => {
  for (const mode of args.modes.split(',')) {
    const dir = join(OUT_DIR, `recording-profile-${mode}-${Date.now()}`);
    const { url, cleanup } = scratchStore('sqlite');
    const server = await startServer(url, { cpuProfDir: dir, env: mode === 'off' ? { KEYHOLD_ANALYTICS: 'off' } : {} });
    const load = await verifyLoad(server);
    await autocannon(server, load, 3, OPTS); // warm-up
    const before = await cpuOf(server.child.pid);
    const r = await autocannon(server, load, SECONDS, OPTS);
    const requests = r.requests.total;
    const cpu = (((await cpuOf(server.child.pid)) - before) * 1e6) / requests;
    console.log(`\n== recording ${mode}: ${Math.round(r.requests.average)} req/s, server CPU ${cpu.toFixed(1)} µs/request (every thread)`);
    server.child.kill('SIGTERM'); // --cpu-prof writes each thread's profile as it ends
    await exited(server.child);
    await cleanup();
    for (const { thread, profile } of threadProfiles(dir)) {
      const { busy, top } = selfTimes(profile, requests);
      console.log(`   ${thread === 0 ? 'main thread' : `worker thread ${thread}`}: busy ${busy.toFixed(1)} µs/request`);
      for (const [name, us] of top) console.log(`   ${us.toFixed(2).padStart(8)}  ${name}`);
    }
  }
});
