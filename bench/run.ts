// `npm run bench`: the keys.verifyKey and ratelimits.limit load benchmark.
//
// For each store (a temporary SQLite file always; PostgreSQL in a fresh schema when KEYHOLD_BENCH_POSTGRES_URL
// or KEYHOLD_TEST_POSTGRES_URL is set; "sqlite+redis", a temporary SQLite file with the server's REDIS_URL
// set, when KEYHOLD_BENCH_REDIS_URL or KEYHOLD_TEST_REDIS_URL is set) it starts the real server (src/main.ts,
// bench/server.ts) in its own process on 127.0.0.1, creates an API and one key per verify case through the
// HTTP interface with the bootstrap root key, checks that every case answers correctly (verify cases 200 /
// valid: true, ratelimits.limit cases 200 / success: true), and then puts load on the server from a SEPARATE
// process (the autocannon CLI, `--json`): the trivial baseline `GET /v1/liveness`, then each case, all with
// the same connections, pipelining and duration. The cases are in bench/cases.ts:
//   - keys.verifyKey: every case is answered by the verification lane except "verifyKey through Fastify's
//     route", the lane's cached-key case sent with a Content-Type the lane leaves to Fastify, so that the
//     lane's gain stays measurable (printed as the lane/route ratio). Before measuring, the bench checks
//     which of the two answers each case.
//   - ratelimits.limit (root key, a limit that never refuses): `async: true` and `async: false` on one
//     identifier (one counter hammered), and `async: false` with a new identifier per request. Namespace and
//     identifiers are random per run, so no two runs share a counter, in the store or in Redis; nothing in
//     Redis is deleted (the counters expire with their 60 s window). Only these cases run on sqlite+redis
//     (the verify cases' timings do not depend on Redis).
//
// This machine's throughput drifts by tens of percent within seconds (a shared virtual machine, and the
// load generator shares its 2 CPUs with the server), so a case is measured in several short rounds
// interleaved with baseline runs (B C B C B C B): each round's ratio is its req/s over the mean of the
// baseline runs just before and just after it, and the case's ratio is the MEDIAN of its rounds' ratios
// (all of them are printed and written). It prints requests/s, p50/p99 and the ratio next to the target
// (bench/report.ts), and writes every run to bench/out/results.json. It reports numbers and never asserts
// them: a missed target is printed, not an error. It exits non-zero only when the setup is wrong (a case
// fails its check or is answered by the wrong code, the server does not start or dies) or a run fails.
// Every process it starts is killed on the way out, success or not (bench/processes.ts).
//
// Settings (environment):
//   BENCH_DURATION     seconds of each measured run (default 4)
//   BENCH_ROUNDS       measured rounds per case, each followed by a baseline run (default 5)
//   BENCH_CONNECTIONS  concurrent connections (default 50)
//   BENCH_PIPELINING   pipelined requests per connection (default 1)
//   BENCH_WARMUP       seconds of load before the first baseline run and before each case's first round, not measured (default 3)
//   BENCH_STORES       comma-separated subset of "sqlite,postgres,sqlite+redis" (default: sqlite, plus postgres
//                      and sqlite+redis when their URL is set); a store none of the chosen cases runs on is skipped
//   BENCH_CASES        comma-separated subset of the case ids (default: all): verify-cached, verify-route,
//                      verify-credits, verify-ratelimit-consistent, verify-ratelimit-fast, ratelimit-async,
//                      ratelimit-sync, ratelimit-sync-unique
//   BENCH_CPU_PROF     set to 1 to run the server with --cpu-prof (profiles in bench/out/prof-<store>/; slows it down)
//   KEYHOLD_BENCH_POSTGRES_URL / KEYHOLD_TEST_POSTGRES_URL  postgres://… (a schema kh_bench_<random> is created and dropped)
//   KEYHOLD_BENCH_REDIS_URL / KEYHOLD_TEST_REDIS_URL        redis://… for sqlite+redis (nothing in it is flushed or deleted)

import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { BENCH_PG_URL, scratchStore } from './scratch-store.ts';
import { BASELINE, CASES, runsOn, type Case, type StoreKind } from './cases.ts';
import { checkAnsweredBy, checkCase, prepare, type Prepared } from './prepare.ts';
import { fmt, laneVsRoute, printResults, summarize, type CaseSummary, type RunResult } from './report.ts';
import { addCleanup, killAll, nonNegativeInt, positiveInt, processCpuSeconds, runCleanups, sleep, stopChild } from './processes.ts';
import { autocannon, OUT_DIR, startServer, type Server } from './server.ts';

const settings = {
  duration: positiveInt('BENCH_DURATION', 4),
  rounds: positiveInt('BENCH_ROUNDS', 5),
  connections: positiveInt('BENCH_CONNECTIONS', 50),
  pipelining: positiveInt('BENCH_PIPELINING', 1),
  warmup: nonNegativeInt('BENCH_WARMUP', 3),
  cpuProf: process.env.BENCH_CPU_PROF === '1',
};
const POSTGRES_URL = BENCH_PG_URL;
const REDIS_URL = process.env.KEYHOLD_BENCH_REDIS_URL || process.env.KEYHOLD_TEST_REDIS_URL;
const STORES: StoreKind[] = ['sqlite', 'postgres', 'sqlite+redis'];

/** Requests each case must answer correctly before it is measured. */
const CHECK_REQUESTS = 200;
const CHECK_CONCURRENCY = 20;

/** The cases of this run (BENCH_CASES). */
let cases: Case[] = CASES;

// ---------------------------------------------------------------- one store

/** Load before a measured run, not measured; fails on any error response. */
async function warmUp(server: Server, p: Prepared, label: string): Promise<void> {
  const warm = await autocannon(server, p.load, settings.warmup, settings);
  if (warm.non2xx || warm.errors || warm.timeouts) {
    throw new Error(
      `warm-up of "${label}" had ${warm.non2xx} non-2xx responses, ${warm.errors} errors, ${warm.timeouts} timeouts:\n${server.output.slice(-10).join('\n')}`,
    );
  }
}

/** One measured run of a case: autocannon's numbers and the server's CPU time over it. */
async function measure(server: Server, store: StoreKind, p: Prepared, label: string, warm: boolean): Promise<RunResult> {
  if (warm && settings.warmup > 0) await warmUp(server, p, label);
  const cpuBefore = await processCpuSeconds(server.child.pid);
  const r = await autocannon(server, p.load, settings.duration, settings);
  const cpuAfter = await processCpuSeconds(server.child.pid);
  if (server.child.exitCode !== null || server.child.signalCode !== null) {
    throw new Error(
      `the server died during "${label}" (${server.child.exitCode ?? server.child.signalCode}):\n${server.output.slice(-10).join('\n')}`,
    );
  }
  const perRequest = (seconds: number) => Math.round((seconds * 1e6 * 10) / r.requests.total) / 10;
  const cpu =
    cpuBefore && cpuAfter && r.requests.total > 0
      ? { user: perRequest(cpuAfter.user - cpuBefore.user), system: perRequest(cpuAfter.system - cpuBefore.system) }
      : undefined;
  const load1 = loadavg()[0];
  const checkedAfterRun =
    p.kase === BASELINE
      ? undefined
      : await checkCase(server, p, 1, 1).then(
          () => true,
          () => false,
        );
  const result: RunResult = {
    store,
    case: p.kase.id,
    label: p.kase.label,
    requestsPerSec: r.requests.average,
    latencyP50Ms: r.latency.p50,
    latencyP99Ms: r.latency.p99,
    latencyMeanMs: r.latency.mean,
    totalRequests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    serverCpuUsPerRequest: cpu && cpu.user + cpu.system,
    serverCpuUsPerRequestUserSystem: cpu,
    load1,
    checkedAfterRun,
  };
  console.log(runLine(label, result));
  await sleep(500);
  return result;
}

function runLine(label: string, r: RunResult): string {
  const cpu = r.serverCpuUsPerRequestUserSystem;
  return (
    `   ${label.padEnd(44)} ${fmt(r.requestsPerSec, 0).padStart(8)} req/s  p50 ${r.latencyP50Ms} ms  p99 ${r.latencyP99Ms} ms` +
    (r.non2xx ? `  non-2xx ${r.non2xx}` : '') +
    (cpu === undefined
      ? ''
      : `  server CPU ${fmt(cpu.user + cpu.system, 0)} µs/req (user ${fmt(cpu.user, 0)}, sys ${fmt(cpu.system, 0)})`) +
    `  (load avg ${fmt(r.load1, 1)})`
  );
}

/** Each case in rounds interleaved with baseline runs (B C B C … B): a round is compared with the mean of the two around it. */
async function measureCases(
  server: Server,
  store: StoreKind,
  prepared: Prepared[],
): Promise<{ runs: RunResult[]; summaries: CaseSummary[] }> {
  const runs: RunResult[] = [];
  const summaries: CaseSummary[] = [];
  const [baseline, ...measured] = prepared;
  let before = await measure(server, store, baseline, BASELINE.label, true);
  runs.push(before);
  for (const p of measured) {
    const rounds: RunResult[] = [];
    for (let round = 1; round <= settings.rounds; round++) {
      const r = await measure(server, store, p, `${p.kase.label} #${round}`, round === 1);
      const after = await measure(server, store, baseline, BASELINE.label, false);
      r.round = round;
      r.baselineRequestsPerSec = (before.requestsPerSec + after.requestsPerSec) / 2;
      r.ratio = r.requestsPerSec / r.baselineRequestsPerSec;
      rounds.push(r);
      runs.push(r, after);
      before = after;
    }
    summaries.push(summarize(store, p.kase, rounds));
  }
  return { runs, summaries };
}

async function benchStore(store: StoreKind, databaseUrl: string): Promise<{ runs: RunResult[]; summaries: CaseSummary[] }> {
  console.log(`\n== ${store}: starting the server`);
  const server = await startServer(databaseUrl, {
    cpuProfDir: settings.cpuProf ? join(OUT_DIR, `prof-${store}`) : undefined,
    redisUrl: store === 'sqlite+redis' ? REDIS_URL : undefined,
  });
  try {
    const prepared = await prepare(server, store, cases);
    console.log(
      `== ${store}: checking every case (${CHECK_REQUESTS} requests each, ${CHECK_CONCURRENCY} concurrent, and which code answers it)`,
    );
    for (const p of prepared) {
      await checkCase(server, p, CHECK_REQUESTS, CHECK_CONCURRENCY);
      await checkAnsweredBy(server, p);
    }
    console.log(
      `== ${store}: load (${settings.connections} connections, pipelining ${settings.pipelining}, ${settings.rounds} rounds of ${settings.duration} s per case, ${settings.warmup} s warm-up)`,
    );
    const measured = await measureCases(server, store, prepared);
    if (server.warnings)
      console.log(`   (the server logged ${server.warnings} warnings/errors; last lines:\n${server.output.slice(-5).join('\n')})`);
    return measured;
  } finally {
    await stopChild(server.child);
  }
}

// ---------------------------------------------------------------- main

const list = (raw: string): string[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** The stores (BENCH_STORES) and cases (BENCH_CASES) of this run; a store none of the cases runs on is left out. */
function choose(): StoreKind[] {
  const defaults = STORES.filter((s) => s === 'sqlite' || (s === 'postgres' ? POSTGRES_URL : REDIS_URL));
  const wanted = list(process.env.BENCH_STORES || defaults.join(','));
  for (const s of wanted)
    if (!STORES.includes(s as StoreKind)) throw new Error(`BENCH_STORES: unknown store "${s}" (known: ${STORES.join(', ')})`);
  if (wanted.includes('postgres') && !POSTGRES_URL)
    throw new Error('BENCH_STORES names postgres but neither KEYHOLD_BENCH_POSTGRES_URL nor KEYHOLD_TEST_POSTGRES_URL is set');
  if (wanted.includes('sqlite+redis') && !REDIS_URL)
    throw new Error('BENCH_STORES names sqlite+redis but neither KEYHOLD_BENCH_REDIS_URL nor KEYHOLD_TEST_REDIS_URL is set');
  const caseIds = list(process.env.BENCH_CASES || CASES.map((c) => c.id).join(','));
  for (const id of caseIds)
    if (!CASES.some((c) => c.id === id)) throw new Error(`BENCH_CASES: unknown case "${id}" (known: ${CASES.map((c) => c.id).join(', ')})`);
  cases = CASES.filter((c) => caseIds.includes(c.id));
  return (wanted as StoreKind[]).filter((store) => cases.some((c) => runsOn(c, store)));
}

function printMachine(stores: StoreKind[]): string {
  const startLoad = loadavg()[0];
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  console.log(`keyhold benchmark (keys.verifyKey, ratelimits.limit): ${machine}; stores: ${stores.join(', ')}`);
  console.log(
    `server and load generator are separate processes sharing this machine's ${cpus().length} CPUs${settings.cpuProf ? '; the server runs with --cpu-prof (slower)' : ''}`,
  );
  if (startLoad > cpus().length)
    console.log(`note: the machine is already busy (1-min load average ${fmt(startLoad, 1)} before starting); the numbers will be noisy`);
  if (!POSTGRES_URL) console.log('PostgreSQL: skipped (set KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL to include it)');
  if (!REDIS_URL) console.log('sqlite+redis: skipped (set KEYHOLD_BENCH_REDIS_URL or KEYHOLD_TEST_REDIS_URL to include it)');
  return machine;
}

async function main(): Promise<number> {
  const stores = choose();
  // Bounded: every run has its own timeout; this is the backstop for the whole benchmark.
  const runCount = 2 * settings.rounds * cases.length + 1;
  const budgetMs = stores.length * (runCount * (settings.warmup + settings.duration + 35) + 120) * 1000;
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${Math.round(budgetMs / 1000)} s; stopping`);
    killAll();
    void runCleanups().finally(() => process.exit(1));
  }, budgetMs);
  watchdog.unref();
  const machine = printMachine(stores);

  const runs: RunResult[] = [];
  const summaries: CaseSummary[] = [];
  try {
    for (const store of stores) {
      const { url, cleanup } = scratchStore(store === 'postgres' ? 'postgres' : 'sqlite');
      addCleanup(cleanup);
      const measured = await benchStore(store, url);
      runs.push(...measured.runs);
      summaries.push(...measured.summaries);
    }
  } finally {
    killAll();
    await runCleanups();
  }

  printResults(settings, summaries, runs);
  await mkdir(OUT_DIR, { recursive: true });
  const file = join(OUT_DIR, 'results.json');
  const results = { date: new Date().toISOString(), machine, settings, summaries, laneVsRoute: laneVsRoute(summaries), runs };
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`Written: ${file}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  async (err: Error) => {
    console.error(`\nbench failed: ${err.stack ?? err.message}`);
    killAll();
    await runCleanups();
    process.exit(1);
  },
);
