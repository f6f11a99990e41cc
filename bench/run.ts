// `npm run bench`: the keys.verifyKey load benchmark.
//
// For each store (a temporary SQLite file always; PostgreSQL in a fresh schema when KEYHOLD_BENCH_POSTGRES_URL
// or KEYHOLD_TEST_POSTGRES_URL is set) it starts the real server (src/main.ts) in its own process on
// 127.0.0.1, creates an API and one key per case through the HTTP interface, checks that every case
// answers 200 / valid: true, and then puts load on the server from a SEPARATE process (the autocannon CLI,
// `--json`): the trivial baseline `GET /v1/liveness` and `POST /v1/keys.verifyKey` for each case, all with
// the same connections, pipelining and duration. The cases are in bench/cases.ts: every verify case is
// answered by the verification lane except "verifyKey through Fastify's route", the lane's cached-key case
// sent with a Content-Type the lane leaves to Fastify, so that the lane's gain stays measurable (printed as
// the lane/route ratio). Before measuring, the bench checks which of the two answers each case.
//
// This machine's throughput drifts by tens of percent within seconds (a shared virtual machine, and the
// load generator shares its 2 CPUs with the server), so a case is measured in several short rounds
// interleaved with baseline runs (B C B C B C B): each round's ratio is its req/s over the mean of the
// baseline runs just before and just after it, and the case's ratio is the MEDIAN of its rounds' ratios
// (all of them are printed and written). It prints requests/s, p50/p99 and the ratio next to the target
// (bench/report.ts), and writes every run to bench/out/results.json. It reports numbers and never asserts
// them: a missed target is printed, not an error. It exits non-zero only when the setup is wrong (a case
// does not verify as VALID or is answered by the wrong code, the server does not start or dies) or a run
// fails. Every process it starts is killed on the way out, success or not.
//
// Settings (environment):
//   BENCH_DURATION     seconds of each measured run (default 4)
//   BENCH_ROUNDS       measured rounds per case, each followed by a baseline run (default 5)
//   BENCH_CONNECTIONS  concurrent connections (default 50)
//   BENCH_PIPELINING   pipelined requests per connection (default 1)
//   BENCH_WARMUP       seconds of load before the first baseline run and before each case's first round, not measured (default 3)
//   BENCH_STORES       comma-separated subset of "sqlite,postgres" (default: sqlite, plus postgres when a URL is set)
//   BENCH_CASES        comma-separated subset of the verify case ids (default: all), e.g. verify-cached,verify-route
//   BENCH_CPU_PROF     set to 1 to run the server with --cpu-prof (profiles in bench/out/prof-<store>/; slows it down)
//   KEYHOLD_BENCH_POSTGRES_URL / KEYHOLD_TEST_POSTGRES_URL  postgres://… (a schema kh_bench_<random> is created and dropped)

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { createServer } from 'node:net';
import { request } from 'node:http';
import { randomInt } from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { BENCH_PG_URL, scratchStore } from './scratch-store.ts';
import { answeredByHeaders, BASELINE, LANE_CONTENT_TYPE, VERIFY_CASES, type AnsweredBy, type Case, type StoreKind } from './cases.ts';
import { fmt, laneVsRoute, printResults, summarize, type CaseSummary, type RunResult } from './report.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_DIR = join(ROOT, 'bench', 'out');
// The CLI's script, run with this same Node (node_modules/.bin/autocannon would run whichever `node` is first on PATH).
const AUTOCANNON = createRequire(import.meta.url).resolve('autocannon');
const HOST = '127.0.0.1';

const settings = {
  duration: positiveInt('BENCH_DURATION', 4),
  rounds: positiveInt('BENCH_ROUNDS', 5),
  connections: positiveInt('BENCH_CONNECTIONS', 50),
  pipelining: positiveInt('BENCH_PIPELINING', 1),
  warmup: nonNegativeInt('BENCH_WARMUP', 3),
  cpuProf: process.env.BENCH_CPU_PROF === '1',
};
const POSTGRES_URL = BENCH_PG_URL;

/** Requests each verify case must answer correctly (200, valid: true) before it is measured. */
const CHECK_REQUESTS = 200;
const CHECK_CONCURRENCY = 20;

/** The verify cases of this run (BENCH_CASES). */
let cases: Case[] = VERIFY_CASES;

// ---------------------------------------------------------------- process bookkeeping

const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<void>> = [];

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function killAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

async function runCleanups(): Promise<void> {
  while (cleanups.length) {
    const fn = cleanups.pop()!;
    await fn().catch((err: Error) => console.error(`cleanup failed: ${err.message}`));
  }
}

process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping`);
    killAll();
    const force = setTimeout(() => process.exit(130), 5_000);
    force.unref();
    void runCleanups().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------- helpers

function positiveInt(name: string, fallback: number): number {
  const n = nonNegativeInt(name, fallback);
  if (n === 0) throw new Error(`${name} must be > 0`);
  return n;
}

function nonNegativeInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

/** User and system CPU seconds of a process so far (Linux /proc), or undefined where that is not available. */
async function processCpuSeconds(pid: number | undefined): Promise<{ user: number; system: number } | undefined> {
  if (pid === undefined || process.platform !== 'linux') return undefined;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 (1-based), in clock ticks.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}
/** USER_HZ: 100 on every mainstream Linux. */
const CLOCK_TICKS = 100;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const base58 = (n: number) => Array.from({ length: n }, () => BASE58[randomInt(BASE58.length)]).join('');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves when the child exits (immediately if it already has). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
}

// ---------------------------------------------------------------- the server

interface Server {
  base: string;
  rootKey: string;
  child: ChildProcess;
  /** Recent output lines, for diagnostics. */
  output: string[];
  /** Log lines at warn or above (the server runs with LOG_LEVEL=warn). */
  warnings: number;
}

async function startServer(store: StoreKind, databaseUrl: string): Promise<Server> {
  const port = await freePort();
  const rootKey = `kh_root_${base58(32)}`;
  const args = ['--disable-warning=ExperimentalWarning'];
  if (settings.cpuProf) {
    const dir = join(OUT_DIR, `prof-${store}`);
    await mkdir(dir, { recursive: true });
    args.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
  }
  args.push(join(ROOT, 'src', 'main.ts'));
  const child = track(
    spawn(process.execPath, args, {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        HOST,
        LOG_LEVEL: 'warn',
        DATABASE_URL: databaseUrl,
        KEYHOLD_BOOTSTRAP_ROOT_KEY: rootKey,
        REDIS_URL: '', // the benchmark measures the store-backed paths only
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const server: Server = { base: `http://${HOST}:${port}`, rootKey, child, output: [], warnings: 0 };
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      server.output.push(line);
      if (server.output.length > 50) server.output.shift();
      try {
        if ((JSON.parse(line) as { level?: number }).level! >= 40) server.warnings++;
      } catch {
        /* not a log line */
      }
    }
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the server exited (${child.exitCode ?? child.signalCode}) before it was up:\n${server.output.join('\n')}`);
    }
    try {
      const res = await fetch(`${server.base}/v1/liveness`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) {
        server.warnings = 0; // first-start notices (bootstrap, generated files) are not about the load
        return server;
      }
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`the server did not answer /v1/liveness within 30 s:\n${server.output.join('\n')}`);
    await sleep(100);
  }
}

interface Load {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  contentType?: string;
}

async function call(server: Server, load: Load, rootKey?: string): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = {};
  if (load.body !== undefined) headers['content-type'] = load.contentType ?? LANE_CONTENT_TYPE;
  if (rootKey) headers.authorization = `Bearer ${rootKey}`;
  const res = await fetch(server.base + load.path, {
    method: load.method,
    headers,
    body: load.body,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

// ---------------------------------------------------------------- load (separate process)

interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; mean: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

/** Runs the autocannon CLI in its own process (same Node binary) and returns its JSON summary. */
async function autocannon(server: Server, load: Load, seconds: number): Promise<AutocannonJson> {
  const args = [
    AUTOCANNON,
    '--json',
    '--no-progress',
    '--connections',
    String(settings.connections),
    '--pipelining',
    String(settings.pipelining),
    '--duration',
    String(seconds),
    '--timeout',
    '10',
    '--method',
    load.method,
  ];
  if (load.body !== undefined) args.push('--headers', `content-type=${load.contentType ?? LANE_CONTENT_TYPE}`, '--body', load.body);
  args.push(server.base + load.path);
  const child = track(spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
  });
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
  await exited(child);
  clearTimeout(timer);
  if (child.exitCode !== 0) throw new Error(`autocannon exited with ${child.exitCode ?? child.signalCode}: ${stderr.trim()}`);
  const line = stdout.trim().split('\n').filter(Boolean).at(-1);
  if (!line) throw new Error(`autocannon printed no result: ${stderr.trim()}`);
  return JSON.parse(line) as AutocannonJson;
}

// ---------------------------------------------------------------- one store

interface Prepared {
  kase: Case;
  load: Load;
}

/** Creates an API and one key per verify case, and the load of every case (the baseline first). */
async function prepare(server: Server): Promise<Prepared[]> {
  const api = await call(server, { method: 'POST', path: '/v1/apis.createApi', body: JSON.stringify({ name: 'bench' }) }, server.rootKey);
  if (api.status !== 200) throw new Error(`apis.createApi: ${api.status} ${JSON.stringify(api.json)}`);
  const apiId = api.json.apiId as string;
  const prepared: Prepared[] = [{ kase: BASELINE, load: { method: 'GET', path: BASELINE.path } }];
  for (const kase of cases) {
    const keyBody = JSON.stringify({ apiId, prefix: 'bench', name: kase.id, ...kase.keyBody });
    const created = await call(server, { method: 'POST', path: '/v1/keys.createKey', body: keyBody }, server.rootKey);
    if (created.status !== 200) throw new Error(`keys.createKey (${kase.id}): ${created.status} ${JSON.stringify(created.json)}`);
    const body = JSON.stringify({ apiId, key: created.json.key });
    prepared.push({ kase, load: { method: 'POST', path: kase.path, body, contentType: kase.contentType } });
  }
  return prepared;
}

/** Sends `n` requests, `concurrency` at a time, and fails on the first response the case does not accept. */
async function checkCase(server: Server, { kase, load }: Prepared, n: number, concurrency: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const res = await call(server, load);
      const problem = kase.check(res.status, res.json);
      if (problem) throw new Error(`setup check failed for "${kase.label}": ${problem}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

/** Sends the case's request once and tells which code answered it, from the response's header order (node:http keeps it). */
function answeredBy(server: Server, load: Load): Promise<AnsweredBy | undefined> {
  return new Promise((resolve, reject) => {
    const headers =
      load.body === undefined
        ? {}
        : { 'content-type': load.contentType ?? LANE_CONTENT_TYPE, 'content-length': Buffer.byteLength(load.body) };
    const req = request(server.base + load.path, { method: load.method, headers, timeout: 10_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(answeredByHeaders(res.rawHeaders)));
    });
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.once('error', reject);
    req.end(load.body);
  });
}

/** Fails unless the case is answered by the code it means to measure (the lane or Fastify's route). */
async function checkAnsweredBy(server: Server, { kase, load }: Prepared): Promise<void> {
  if (kase.answeredBy === undefined) return;
  const by = await answeredBy(server, load);
  if (by !== kase.answeredBy) {
    const expected = kase.answeredBy === 'lane' ? 'the lane' : "Fastify's route";
    const contentType = load.contentType ?? LANE_CONTENT_TYPE;
    throw new Error(
      `setup check failed for "${kase.label}": answered by ${by ?? 'unknown code'}, not by ${expected} (Content-Type "${contentType}"; see answeredByHeaders in bench/cases.ts)`,
    );
  }
}

/** Load before a measured run, not measured; fails on any error response. */
async function warmUp(server: Server, p: Prepared, label: string): Promise<void> {
  const warm = await autocannon(server, p.load, settings.warmup);
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
  const r = await autocannon(server, p.load, settings.duration);
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
  const validAfterRun =
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
    validAfterRun,
  };
  console.log(runLine(label, result));
  await sleep(500);
  return result;
}

function runLine(label: string, r: RunResult): string {
  const cpu = r.serverCpuUsPerRequestUserSystem;
  return (
    `   ${label.padEnd(40)} ${fmt(r.requestsPerSec, 0).padStart(8)} req/s  p50 ${r.latencyP50Ms} ms  p99 ${r.latencyP99Ms} ms` +
    (r.non2xx ? `  non-2xx ${r.non2xx}` : '') +
    (cpu === undefined
      ? ''
      : `  server CPU ${fmt(cpu.user + cpu.system, 0)} µs/req (user ${fmt(cpu.user, 0)}, sys ${fmt(cpu.system, 0)})`) +
    `  (load avg ${fmt(r.load1, 1)})`
  );
}

async function benchStore(store: StoreKind, databaseUrl: string): Promise<{ runs: RunResult[]; summaries: CaseSummary[] }> {
  console.log(`\n== ${store}: starting the server`);
  const server = await startServer(store, databaseUrl);
  try {
    const prepared = await prepare(server);
    console.log(
      `== ${store}: checking every case (${CHECK_REQUESTS} requests each, ${CHECK_CONCURRENCY} concurrent, and which code answers it)`,
    );
    for (const p of prepared) {
      await checkCase(server, p, CHECK_REQUESTS, CHECK_CONCURRENCY);
      await checkAnsweredBy(server, p);
    }

    // Baseline runs are interleaved with the rounds of each case (B C B C … B); a round is compared with the
    // mean of the two baseline runs around it, so drift in what else the machine does hurts less.
    const runs: RunResult[] = [];
    const summaries: CaseSummary[] = [];
    const [baseline, ...verifies] = prepared;
    console.log(
      `== ${store}: load (${settings.connections} connections, pipelining ${settings.pipelining}, ${settings.rounds} rounds of ${settings.duration} s per case, ${settings.warmup} s warm-up)`,
    );
    let before = await measure(server, store, baseline, BASELINE.label, true);
    runs.push(before);
    for (const p of verifies) {
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
    if (server.warnings)
      console.log(`   (the server logged ${server.warnings} warnings/errors; last lines:\n${server.output.slice(-5).join('\n')})`);
    return { runs, summaries };
  } finally {
    await stopChild(server.child);
  }
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  const wanted = (process.env.BENCH_STORES || (POSTGRES_URL ? 'sqlite,postgres' : 'sqlite'))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of wanted) if (s !== 'sqlite' && s !== 'postgres') throw new Error(`BENCH_STORES: unknown store "${s}"`);
  if (wanted.includes('postgres') && !POSTGRES_URL)
    throw new Error('BENCH_STORES names postgres but neither KEYHOLD_BENCH_POSTGRES_URL nor KEYHOLD_TEST_POSTGRES_URL is set');
  const stores = wanted as StoreKind[];
  const caseIds = (process.env.BENCH_CASES || VERIFY_CASES.map((c) => c.id).join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const id of caseIds)
    if (!VERIFY_CASES.some((c) => c.id === id))
      throw new Error(`BENCH_CASES: unknown case "${id}" (known: ${VERIFY_CASES.map((c) => c.id).join(', ')})`);
  cases = VERIFY_CASES.filter((c) => caseIds.includes(c.id));

  // Bounded: every run has its own timeout; this is the backstop for the whole benchmark.
  const runCount = 2 * settings.rounds * cases.length + 1;
  const budgetMs = stores.length * (runCount * (settings.warmup + settings.duration + 35) + 120) * 1000;
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${Math.round(budgetMs / 1000)} s; stopping`);
    killAll();
    void runCleanups().finally(() => process.exit(1));
  }, budgetMs);
  watchdog.unref();

  const startLoad = loadavg()[0];
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  console.log(`keyhold verification benchmark: ${machine}`);
  console.log(
    `server and load generator are separate processes sharing this machine's ${cpus().length} CPUs${settings.cpuProf ? '; the server runs with --cpu-prof (slower)' : ''}`,
  );
  if (startLoad > cpus().length)
    console.log(`note: the machine is already busy (1-min load average ${fmt(startLoad, 1)} before starting); the numbers will be noisy`);
  if (!POSTGRES_URL) console.log('PostgreSQL: skipped (set KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL to include it)');

  const runs: RunResult[] = [];
  const summaries: CaseSummary[] = [];
  try {
    for (const store of stores) {
      const { url, cleanup } = scratchStore(store);
      cleanups.push(cleanup);
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
  await writeFile(
    file,
    `${JSON.stringify({ date: new Date().toISOString(), machine, settings, summaries, laneVsRoute: laneVsRoute(summaries), runs }, null, 2)}\n`,
  );
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
