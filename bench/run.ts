// `npm run bench`: how close the server comes to this machine's limit, case by case.
//
// Two references are measured in every run, beside every case: the Fastify baseline (GET /v1/liveness of the
// real server: what Fastify alone costs) and the limit (bench/limit-server.ts: a raw node:http server, same
// Node binary, own process, that parses the JSON body, SHA-256-hashes its `key`, looks it up in a Map and
// answers a constant: the least any server can do to answer a verification here). Every case is reported as
// req/s, its ratio to the limit, its ratio to the baseline, and the server's CPU time per request (utime +
// stime of the server process over the run, from /proc, divided by the requests; with its ratio to the
// limit's): CPU per request is far less noisy than req/s on a shared machine. The load always comes from a
// SEPARATE process (the autocannon CLI, or bench/list-load.ts), on 127.0.0.1.
//
// Per store (a temporary SQLite file always; PostgreSQL in a fresh schema when KEYHOLD_BENCH_POSTGRES_URL or
// KEYHOLD_TEST_POSTGRES_URL is set; "sqlite+redis", a SQLite file with the server's REDIS_URL set, when
// KEYHOLD_BENCH_REDIS_URL or KEYHOLD_TEST_REDIS_URL is set) it starts the real server (src/main.ts,
// bench/server.ts) and the limit, creates an API and the keys the cases need with the bootstrap root key,
// checks that every case answers correctly, then measures with autocannon's one repeated request
// (bench/cases.ts, bench/measure.ts):
//   - limit: the verify request (path, Content-Type, body shape) sent to the limit server;
//   - keys.verifyKey, cached key: no credits (target ≥ 0.85 of the limit), the same kind of key through v2
//     (/v2/keys.verifyKey with the bootstrap root key, the lane; its ratio to v1's is printed, target ≥ 0.90,
//     and with a `fast` limit beside v1's with the same limit, target ≥ 0.75), through
//     Fastify's route instead of the lane (SQLite only; the lane/route gain is printed), with credits (SQLite ≥ 0.65 of the baseline, PostgreSQL ≥ 0.50
//     of the limit), with a `consistent` and with a `fast` rate limit;
//   - ratelimits.limit (root key, a limit that never refuses, namespace random per run): async and sync on one
//     identifier, sync with a new identifier per request (the only cases on sqlite+redis);
//   - keys.createKey, one key per request (SQLite ≥ 0.25 of the limit, PostgreSQL ≥ 0.12).
// Cases are measured round by round, every case once per round, each run followed by a baseline run (B C₁ B C₂ B …);
// a run's ratio to the baseline is its req/s over the mean of the baseline runs around it, the case's is the median
// of its rounds', and its ratio to the limit is that over the limit's own (so both references share the drift
// correction). v2 over v1 is the median over the rounds of the two cases' runs in one round (adjacent in time).
//
// Then, on SQLite only (the whole default run must take under 10 minutes), the many-key cases (bench/many-keys.ts, bench/cold-start.ts): 100,000 keys
// imported as hashes, verified once each (all cache misses: target CPU/req ≤ 2.0× the hits') and again (all
// hits), RSS of the server with them cached (≤ 250 MB), a flood of unknown keys (≥ 0.7× the hits' req/s), each
// pass with its own baseline and limit passes from the same load generator; then cold start, spawn → first
// 200 from keys.verifyKey on the database with the keys (≤ 1.0 s), on an empty database, and a trivial
// Fastify server's as the floor (medians of BENCH_COLD_STARTS starts).
//
// After a store's cases it prints the root-key cache's hit rate over the run (the server's /metrics).
// It prints each run as it goes, then a markdown table (case | store | req/s | ratio to limit | ratio to
// Fastify baseline | server CPU µs/req | target | met?) with the machine, the command and the wall time; it
// keeps every run: bench/out/<UTC timestamp>.json (and results.json, the latest), bench/out/latest.md (the
// table, for docs/performance.md). It reports numbers and never asserts them: a missed target is printed, not an
// error, with one exception: the cached verification on SQLite under its floor (LANE_FLOOR in bench/cases.ts: 0.87×
// the Fastify baseline) ends the run with a banner and exit code 3, since a cost added to every verification must
// not pass unnoticed. Otherwise it exits non-zero only when the setup is wrong (a case fails its check or is
// answered by the wrong code, a server does not start or dies, a load run fails). Every process it starts is
// killed on the way out.
//
// Settings (environment):
//   BENCH_DURATION     seconds of each measured autocannon run (default 2)
//   BENCH_ROUNDS       measured rounds, each running every case once, each run followed by a baseline run (default 3)
//   BENCH_WARMUP       seconds of load before the first baseline run and before each case's first round (default 1)
//   BENCH_CONNECTIONS  concurrent connections, every case (default 50)
//   BENCH_PIPELINING   pipelined requests per connection, autocannon cases (default 1)
//   BENCH_STORES       comma-separated subset of "sqlite,postgres,sqlite+redis" (default: sqlite, plus postgres
//                      and sqlite+redis when their URL is set); a store none of the chosen cases runs on is skipped
//   BENCH_CASES        comma-separated subset of the case ids (default: all; the two references always run):
//                      verify-cached, verify-v2, verify-route, verify-credits, verify-ratelimit-consistent,
//                      verify-ratelimit-fast, verify-v2-ratelimit-fast, ratelimit-async, ratelimit-sync, ratelimit-sync-unique,
//                      create-key, many-keys (misses, hits, RSS, unknown keys), cold-start, and prune (only when
//                      named: the retention pass under load, bench/prune-load.ts; several minutes)
//   BENCH_PRUNE_ROWS   analytics rows the prune case removes (default 5000000)
//   BENCH_KEYS         distinct keys of the many-key cases (default 100000)
//   BENCH_FLOOD        requests (each a different unknown key) of the unknown-key flood (default 20000)
//   BENCH_MILLION      set to 1 to also run key churn (bench/churn.ts): 1,000,000 imported keys verified once
//                      each, three passes, default key cache (100,000); RSS per pass and growth over the last
//                      (long: the import alone takes a minute or more; BENCH_CHURN_DIR keeps its store for reuse)
//   BENCH_CHURN_DIR    a directory for the churn store: made on the first run, reused by later ones
//   BENCH_COLD_STARTS  starts of each cold-start kind (default 3)
//   BENCH_CPU_PROF     set to 1 to run the server with --cpu-prof (profiles in bench/out/prof-<store>/; slows it down)
//   KEYHOLD_BENCH_POSTGRES_URL / KEYHOLD_TEST_POSTGRES_URL  postgres://… (a schema kh_bench_<random> is created and dropped)
//   KEYHOLD_BENCH_REDIS_URL / KEYHOLD_TEST_REDIS_URL        redis://… for sqlite+redis (nothing in it is flushed or deleted)

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CASES, LANE_FLOOR, runsOn, type Case, type StoreKind } from './cases.ts';
import { randomKeys, writeKeys } from './keyset.ts';
import { benchManyKeys } from './many-keys.ts';
import { benchPruneUnderLoad } from './prune-load.ts';
import { measureCases } from './measure.ts';
import { writeOutputs, machineLine, printStart } from './output.ts';
import { checkAnsweredBy, checkCase, prepare } from './prepare.ts';
import { addCleanup, killAll, nonNegativeInt, positiveInt, runCleanups, stopChild } from './processes.ts';
import { relateToLimit, type CaseSummary, type RootKeyCacheRate, type RunResult } from './report.ts';
import { BENCH_PG_URL, scratchStore } from './scratch-store.ts';
import { OUT_DIR, startLimitServer, startServer } from './server.ts';
import { rowsOf, type Row } from './table.ts';

const settings = {
  duration: positiveInt('BENCH_DURATION', 2),
  rounds: positiveInt('BENCH_ROUNDS', 3),
  connections: positiveInt('BENCH_CONNECTIONS', 50),
  pipelining: positiveInt('BENCH_PIPELINING', 1),
  warmup: nonNegativeInt('BENCH_WARMUP', 1),
  cpuProf: process.env.BENCH_CPU_PROF === '1',
  keys: positiveInt('BENCH_KEYS', 100_000),
  flood: positiveInt('BENCH_FLOOD', 20_000),
  million: process.env.BENCH_MILLION === '1',
  coldStarts: positiveInt('BENCH_COLD_STARTS', 3),
  pruneRows: positiveInt('BENCH_PRUNE_ROWS', 5_000_000),
};
const POSTGRES_URL = BENCH_PG_URL;
const REDIS_URL = process.env.KEYHOLD_BENCH_REDIS_URL || process.env.KEYHOLD_TEST_REDIS_URL;
const STORES: StoreKind[] = ['sqlite', 'postgres', 'sqlite+redis'];
const MANY_KEYS = 'many-keys';
const COLD_START = 'cold-start';
/** Long (several minutes): run only when BENCH_CASES names it. */
const PRUNE = 'prune';

/** Requests each case must answer correctly before it is measured. */
const CHECK_REQUESTS = 200;
const CHECK_CONCURRENCY = 20;

/** Starts the server and the limit on the store, checks every case, measures them. */
async function benchStore(
  store: StoreKind,
  databaseUrl: string,
  cases: Case[],
  dir: string,
): Promise<{ runs: RunResult[]; summaries: CaseSummary[]; rootKeyCache: RootKeyCacheRate }> {
  console.log(`\n== ${store}: starting the server and the limit`);
  const server = await startServer(databaseUrl, {
    cpuProfDir: settings.cpuProf ? join(OUT_DIR, `prof-${store}`) : undefined,
    redisUrl: store === 'sqlite+redis' ? REDIS_URL : undefined,
  });
  const [limitKey] = randomKeys(1, 'bench');
  const limit = await startLimitServer(await writeKeys(dir, `limit-${store}.txt`, [limitKey])).catch(async (err: Error) => {
    await stopChild(server.child);
    throw err;
  });
  try {
    const prepared = await prepare(server, store, cases, limit, limitKey);
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
    const measured = await measureCases(server, store, prepared, settings);
    if (server.warnings)
      console.log(`   (the server logged ${server.warnings} warnings/errors; last lines:\n${server.output.slice(-5).join('\n')})`);
    const rootKeyCache = await rootKeyCacheRate(server, store);
    console.log(`   root-key cache: ${(100 * rootKeyCache.hitRate).toFixed(2)}% hits of ${rootKeyCache.lookups} authentications`);
    return { ...measured, rootKeyCache };
  } finally {
    await stopChild(limit.child);
    await stopChild(server.child);
  }
}

/** The root-key cache's hits over all authentications of the server's run so far, from its /metrics. */
async function rootKeyCacheRate(server: Awaited<ReturnType<typeof startServer>>, store: StoreKind): Promise<RootKeyCacheRate> {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  const read = (name: string) => Number(/^(\S+) (\S+)$/m.exec(text.split('\n').find((l) => l.startsWith(`${name} `)) ?? '')?.[2] ?? 0);
  const hits = read('keyhold_root_key_cache_hits_total');
  const lookups = hits + read('keyhold_root_key_cache_misses_total');
  return { store, lookups, hitRate: lookups ? hits / lookups : 0 };
}

const list = (raw: string): string[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

interface Choice {
  stores: StoreKind[];
  cases: Case[];
  manyKeys: boolean;
  coldStart: boolean;
  prune: boolean;
}

/** The stores (BENCH_STORES) and cases (BENCH_CASES) of this run; a store none of the cases runs on is left out. */
function choose(): Choice {
  const defaults = STORES.filter((s) => s === 'sqlite' || (s === 'postgres' ? POSTGRES_URL : REDIS_URL));
  const wanted = list(process.env.BENCH_STORES || defaults.join(','));
  for (const s of wanted)
    if (!STORES.includes(s as StoreKind)) throw new Error(`BENCH_STORES: unknown store "${s}" (known: ${STORES.join(', ')})`);
  if (wanted.includes('postgres') && !POSTGRES_URL)
    throw new Error('BENCH_STORES names postgres but neither KEYHOLD_BENCH_POSTGRES_URL nor KEYHOLD_TEST_POSTGRES_URL is set');
  if (wanted.includes('sqlite+redis') && !REDIS_URL)
    throw new Error('BENCH_STORES names sqlite+redis but neither KEYHOLD_BENCH_REDIS_URL nor KEYHOLD_TEST_REDIS_URL is set');
  const known = [...CASES.map((c) => c.id), MANY_KEYS, COLD_START, PRUNE];
  const caseIds = list(process.env.BENCH_CASES || known.filter((id) => id !== PRUNE).join(','));
  for (const id of caseIds) if (!known.includes(id)) throw new Error(`BENCH_CASES: unknown case "${id}" (known: ${known.join(', ')})`);
  const cases = CASES.filter((c) => caseIds.includes(c.id));
  const onSqlite = wanted.includes('sqlite');
  return {
    stores: (wanted as StoreKind[]).filter((store) => cases.some((c) => runsOn(c, store))),
    cases,
    manyKeys: onSqlite && caseIds.includes(MANY_KEYS),
    coldStart: onSqlite && caseIds.includes(COLD_START),
    prune: onSqlite && caseIds.includes(PRUNE),
  };
}

/** Every chosen store's autocannon cases, then the many-key cases; the summaries, runs and table rows. */
async function benchAll(
  choice: Choice,
): Promise<{ summaries: CaseSummary[]; runs: RunResult[]; rows: Row[]; rootKeyCache: RootKeyCacheRate[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'keyhold-bench-'));
  addCleanup(() => rm(dir, { recursive: true, force: true }));
  const runs: RunResult[] = [];
  const summaries: CaseSummary[] = [];
  const rootKeyCache: RootKeyCacheRate[] = [];
  for (const store of choice.stores) {
    const { url, cleanup } = scratchStore(store === 'postgres' ? 'postgres' : 'sqlite');
    addCleanup(cleanup);
    const measured = await benchStore(store, url, choice.cases, dir);
    runs.push(...measured.runs);
    summaries.push(...measured.summaries);
    rootKeyCache.push(measured.rootKeyCache);
  }
  relateToLimit(summaries);
  const rows = rowsOf(summaries);
  if (choice.manyKeys || choice.coldStart) {
    const many = { ...settings, passes: choice.manyKeys, coldStarts: choice.coldStart ? settings.coldStarts : 0 };
    rows.push(...(await benchManyKeys(many)));
  }
  if (choice.prune) rows.push(...(await benchPruneUnderLoad({ rows: settings.pruneRows, connections: settings.connections })));
  return { summaries, runs, rows, rootKeyCache };
}

async function main(): Promise<number> {
  const started = Date.now();
  const choice = choose();
  // Bounded: every run has its own timeout; this is the backstop for the whole benchmark.
  const runCount = 2 * settings.rounds * (choice.cases.length + 1) + 1;
  const manyKeysMs = (choice.manyKeys || choice.coldStart ? 1_200 : 0) + (settings.million ? 3_600 : 0) + (choice.prune ? 7_200 : 0);
  const budgetMs = (choice.stores.length * (runCount * (settings.warmup + settings.duration + 35) + 120) + manyKeysMs) * 1000;
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${Math.round(budgetMs / 1000)} s; stopping`);
    killAll();
    void runCleanups().finally(() => process.exit(1));
  }, budgetMs);
  watchdog.unref();
  printStart(choice.stores, settings, { postgres: !!POSTGRES_URL, redis: !!REDIS_URL });
  let results: Awaited<ReturnType<typeof benchAll>>;
  try {
    results = await benchAll(choice);
  } finally {
    killAll();
    await runCleanups();
  }
  await writeOutputs({ ...results, settings, wallSeconds: (Date.now() - started) / 1000, machine: machineLine() });
  return belowLaneFloor(results.summaries) ? 3 : 0;
}

/** Whether the cached verification fell under its floor (LANE_FLOOR); if so, says it loudly. */
function belowLaneFloor(summaries: CaseSummary[]): boolean {
  const lane = summaries.find((s) => s.case === LANE_FLOOR.case && s.store === LANE_FLOOR.store);
  if (lane === undefined || lane.ratio >= LANE_FLOOR.minRatioToBaseline) return false;
  const rule = '!'.repeat(100);
  console.error(
    `\n${rule}\n!! ${lane.label} (${lane.store}): ${lane.ratio.toFixed(2)}× the Fastify baseline, under its floor of ` +
      `${LANE_FLOOR.minRatioToBaseline}×.\n!! Something costs every verification: profile it (bench/profile-pair.ts) before it lands.\n${rule}`,
  );
  return true;
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
