// Where the CPU of one request goes, for two kinds of request side by side: `node bench/profile-pair.ts`.
// One server (SQLite, or PostgreSQL with PROFILE_PAIR_STORE=postgres) runs under --cpu-prof while the load
// alternates between loads A and B (A B, B A, … so neither always goes first); each profile sample is given
// to the load running when it was taken, and each function's self time is divided by that load's requests.
// It prints the sampled µs per request of each load, the load generator's and the server's CPU per request
// of every window, and the functions whose time per request differs most (B − A). Used to find what v2's
// keys.verifyKey pays beyond v1's (docs/performance.md).
//
// Loads (PROFILE_PAIR_A, PROFILE_PAIR_B; defaults v1-limit and v2-limit): v1 / v2 = keys.verifyKey of a key
// without limits (v2 with the root key), v1-limit / v2-limit = of a key with a `fast` limit, v1-auth-limit = v1's
// of that key sent with an Authorization header as v2's is. PROFILE_PAIR_ROUNDS (default 6) pairs of
// PROFILE_PAIR_SECONDS (default 3) each; PROFILE_PAIR_TOP rows (default 25).

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { type CpuProfile, frameName, sampleUs, threadProfiles } from './cpu-profiles.ts';
import { PLENTY, VERIFY_PATH } from './cases.ts';
import { exited, positiveInt, processCpuTotalSeconds as cpuOf, runStandalone } from './processes.ts';
import { autocannon, call, OUT_DIR, startServer, type Load, type Server } from './server.ts';
import { scratchStore } from './scratch-store.ts';

const ROUNDS = positiveInt('PROFILE_PAIR_ROUNDS', 6);
const SECONDS = positiveInt('PROFILE_PAIR_SECONDS', 3);
const TOP = positiveInt('PROFILE_PAIR_TOP', 25);
const OPTS = { connections: 50, pipelining: 1 };

interface Window {
  load: 'A' | 'B';
  fromUs: number;
  toUs: number;
  requests: number;
}

/** The loads this tool knows, on a server with one key of each kind. */
async function loadsOf(server: Server): Promise<Record<string, Load>> {
  const admin = (path: string, body: unknown) =>
    call(server, { method: 'POST', path, body: JSON.stringify(body), rootKey: server.rootKey });
  const { apiId } = (await admin('/v1/apis.createApi', { name: 'profile-pair' })).json;
  const plain = (await admin('/v1/keys.createKey', { apiId })).json.key;
  const limited = (await admin('/v1/keys.createKey', { apiId, ratelimit: { type: 'fast', limit: PLENTY, duration: 60_000 } })).json.key;
  const v1 = (key: string, rootKey?: string): Load => ({
    method: 'POST',
    path: VERIFY_PATH,
    body: JSON.stringify({ apiId, key }),
    rootKey,
  });
  const v2 = (key: string): Load => ({
    method: 'POST',
    path: '/v2/keys.verifyKey',
    body: JSON.stringify({ key }),
    rootKey: server.rootKey,
  });
  return { v1: v1(plain), v2: v2(plain), 'v1-limit': v1(limited), 'v2-limit': v2(limited), 'v1-auth-limit': v1(limited, server.rootKey) };
}

/** The load generator's process (bench/load-worker.ts, started by the first autocannon run). */
const loadWorkerPid = (): number =>
  Number(
    execFileSync('pgrep', ['-P', String(process.pid), '-f', 'load-worker.ts'])
      .toString()
      .trim()
      .split('\n')[0],
  );

/** A, B, then B, A, … : ROUNDS pairs, each window's monotonic start and end (µs, the clock of V8's profiles). */
async function alternate(server: Server, a: Load, b: Load): Promise<Window[]> {
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  const windows: Window[] = [];
  const generator = loadWorkerPid();
  for (let round = 0; round < ROUNDS; round++) {
    for (const load of round % 2 ? (['B', 'A'] as const) : (['A', 'B'] as const)) {
      const [cpuBefore, fromUs] = [await cpuOf(server.child.pid), nowUs()];
      const generatorBefore = await cpuOf(generator);
      const r = await autocannon(server, load === 'A' ? a : b, SECONDS, OPTS);
      windows.push({ load, fromUs, toUs: nowUs(), requests: r.requests.total });
      const perRequest = (before: number, after: number) => (((after - before) * 1e6) / r.requests.total).toFixed(1);
      console.log(
        `${load}: ${Math.round(r.requests.average)} req/s; CPU µs/request: server ${perRequest(cpuBefore, await cpuOf(server.child.pid))}, ` +
          `load generator ${perRequest(generatorBefore, await cpuOf(generator))}`,
      );
    }
  }
  return windows;
}

/** Self time per request of each function (file:line), per load, from the samples inside the windows. */
function attribute(profile: CpuProfile, windows: Window[]): Record<'A' | 'B', { perFunction: Map<string, number>; total: number }> {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const result = { A: { perFunction: new Map<string, number>(), total: 0 }, B: { perFunction: new Map<string, number>(), total: 0 } };
  const requests = { A: 0, B: 0 };
  for (const w of windows) requests[w.load] += w.requests;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const w = windows.find((x) => t >= x.fromUs && t < x.toUs);
    if (!w) continue;
    const name = frameName(frames.get(profile.samples[i])!);
    const us = sampleUs(profile, i) / requests[w.load];
    const side = result[w.load];
    side.perFunction.set(name, (side.perFunction.get(name) ?? 0) + us);
    side.total += us;
  }
  return result;
}

runStandalone(async () => {
  const [nameA, nameB] = [process.env.PROFILE_PAIR_A ?? 'v1-limit', process.env.PROFILE_PAIR_B ?? 'v2-limit'];
  const profileDir = join(OUT_DIR, `profile-pair-${Date.now()}`);
  const { url, cleanup } = scratchStore(process.env.PROFILE_PAIR_STORE === 'postgres' ? 'postgres' : 'sqlite');
  const server = await startServer(url, { cpuProfDir: profileDir });
  const loads = await loadsOf(server);
  const [a, b] = [loads[nameA], loads[nameB]];
  if (!a || !b) throw new Error(`PROFILE_PAIR_A/B: one of ${Object.keys(loads).join(', ')}`);
  for (const load of [a, b]) await autocannon(server, load, 2, OPTS); // warm-up, not sampled into any window
  const windows = await alternate(server, a, b);
  server.child.kill('SIGTERM'); // --cpu-prof writes the profile as the process exits
  await exited(server.child);
  await cleanup();
  // The main thread's: the one that answers requests (a worker thread, such as the analytics writer, has its own).
  const main = threadProfiles(profileDir).find((p) => p.thread === 0);
  if (!main) throw new Error(`no profile of the main thread in ${profileDir}`);
  const per = attribute(main.profile, windows);
  console.log(`\nsampled µs/request (idle included): A ${nameA} ${per.A.total.toFixed(1)}, B ${nameB} ${per.B.total.toFixed(1)}`);
  const names = new Set([...per.A.perFunction.keys(), ...per.B.perFunction.keys()]);
  const rows = [...names].map((n) => ({ n, a: per.A.perFunction.get(n) ?? 0, b: per.B.perFunction.get(n) ?? 0 }));
  rows.sort((x, y) => Math.abs(y.b - y.a) - Math.abs(x.b - x.a));
  console.log('  B − A       A       B   µs/request, self time');
  for (const r of rows.slice(0, TOP))
    console.log(`${(r.b - r.a).toFixed(2).padStart(7)} ${r.a.toFixed(2).padStart(7)} ${r.b.toFixed(2).padStart(7)}   ${r.n}`);
});
