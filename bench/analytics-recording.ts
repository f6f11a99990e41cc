// Part 1 of bench/analytics.ts: what recording costs a verification. Two servers (src/main.ts) on one fresh store,
// one with analytics on (the default), one with KEYHOLD_ANALYTICS=off, both up for the whole part, loaded one at a
// time from the load worker (autocannon, its own process) with v2 keys.verifyKey of a cached key with tags, in
// alternating runs (off, on, off, …, on, off: every "on" run between two "off" runs). Each run: a new key (created,
// verified once so that it is cached), exactly `amount` requests (the same for every run), then a wait of 2 s
// (the server flushes its events every second: the last batch's write is inside the run's CPU time), and the
// server's CPU time (/proc utime + stime) over it. Then, with every event flushed, the raw table
// (analytics_key_verifications) must hold, for each "on" run's key, exactly its 200 answers plus the one
// verification that cached it, all VALID with the run's tags; for each "off" run's key, nothing; and the "on"
// server's keyhold_dropped_total must be 0.

import { loadavg } from 'node:os';
import { sql } from 'kysely';
import { storedTags } from '../src/services/analytics/rollups.ts';
import { openStore, type Db } from '../src/store/store.ts';
import type { Dialect } from './analytics-events.ts';
import { addCleanup, processCpuTotalSeconds, sleep, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { scratchStore } from './scratch-store.ts';
import { autocannon, call, startServer, type Load, type Server } from './server.ts';

export interface RecordingSettings {
  seconds: number;
  rounds: number;
  warmup: number;
  connections: number;
  tags: number;
}

export interface RecordingRun {
  kind: 'on' | 'off';
  keyId: string;
  answered: number;
  requestsPerSec: number;
  cpuUsPerRequest: number;
  load1: number;
}

export interface RecordingResult {
  store: Dialect;
  tags: string[];
  amount: number;
  runs: RecordingRun[];
  off: { requestsPerSec: number; cpuUsPerRequest: number };
  on: { requestsPerSec: number; cpuUsPerRequest: number };
  /** Per "on" run: the mean CPU µs/req of the two "off" runs around it over its own. */
  cpuRatios: number[];
  cpuRatio: number;
  /** Per "on" run: its req/s over the mean of the two "off" runs around it. */
  rateRatios: number[];
  rateRatio: number;
  /** 200 answers of the "on" runs (plus the one verification per run that cached the key). */
  expected: number;
  /** Raw rows of those keys; and of them VALID with the run's tags. */
  recorded: number;
  recordedAsSent: number;
  /** Runs whose key's rows did not equal its answers. */
  mismatchedRuns: number;
  /** Raw rows of the "off" runs' keys (must be 0). */
  recordedOff: number;
  dropped: number;
}

/** The server flushes every 1 s: 2 s after the last answer its last batch is written. */
const FLUSH_WAIT_MS = 2_000;
const TAGS = ['path=/v1/orders', 'region=eu-west-1', 'plan=pro'];

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** keyhold_dropped_total summed over its labels, from the server's /metrics. */
export async function droppedTotal(server: Server): Promise<number> {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('keyhold_dropped_total'))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

export async function benchRecording(dialect: Dialect, s: RecordingSettings): Promise<RecordingResult> {
  const scratch = scratchStore(dialect);
  addCleanup(scratch.cleanup);
  console.log(`\n== ${dialect}, recording on vs off: starting two servers on one store (analytics on; KEYHOLD_ANALYTICS=off)`);
  const env = { KEYHOLD_PRUNE_INTERVAL_MINUTES: '0' };
  const on = await startServer(scratch.url, { env });
  const off = await startServer(scratch.url, { rootKey: on.rootKey, env: { ...env, KEYHOLD_ANALYTICS: 'off' } });
  const store = openStore(scratch.url);
  try {
    return await measure(dialect, s, on, off, store.db);
  } finally {
    await stopChild(off.child);
    await stopChild(on.child);
    await store.close();
    await scratch.cleanup();
  }
}

/** What the runs send: a new key per run, v2 keys.verifyKey of it with the tags. */
interface Client {
  tags: string[];
  newKey(): Promise<{ key: string; keyId: string }>;
  load(key: string): Load;
  /** One verification, which must be 200 VALID (it also caches the key on that server). */
  verifyOnce(server: Server, key: string): Promise<void>;
}

async function clientOf(on: Server, tagCount: number): Promise<Client> {
  const tags = Array.from({ length: tagCount }, (_, i) => TAGS[i] ?? `tag${i}=value${i}`);
  const post = (path: string, body: unknown) => call(on, { method: 'POST', path, body: JSON.stringify(body), rootKey: on.rootKey });
  const api = await post('/v1/apis.createApi', { name: 'bench-recording' });
  if (api.status !== 200) throw new Error(`apis.createApi: ${api.status} ${JSON.stringify(api.json)}`);
  const load = (key: string): Load => ({
    method: 'POST',
    path: '/v2/keys.verifyKey',
    body: JSON.stringify({ key, tags }),
    rootKey: on.rootKey,
  });
  return {
    tags,
    async newKey() {
      const r = await post('/v1/keys.createKey', { apiId: api.json.apiId, prefix: 'bench' });
      if (r.status !== 200) throw new Error(`keys.createKey: ${r.status} ${JSON.stringify(r.json)}`);
      return r.json;
    },
    load,
    async verifyOnce(server, key) {
      const r = await call(server, load(key));
      if (r.status !== 200 || r.json?.data?.valid !== true || r.json?.data?.code !== 'VALID')
        throw new Error(`v2 keys.verifyKey: ${r.status} ${JSON.stringify(r.json)}`);
    },
  };
}

/** Warm-up (JIT, caches) of each server with a key of its own; the requests of every run, from its rate. */
async function warmUp(client: Client, servers: Server[], s: RecordingSettings): Promise<number> {
  const rates: number[] = [];
  for (const server of servers) {
    const { key } = await client.newKey();
    await client.verifyOnce(server, key);
    const w = await autocannon(server, client.load(key), s.warmup, { connections: s.connections, pipelining: 1 });
    if (w.non2xx || w.errors || w.timeouts) throw new Error(`warm-up: ${w.non2xx} non-2xx, ${w.errors} errors, ${w.timeouts} timeouts`);
    rates.push(w.requests.average);
  }
  await sleep(FLUSH_WAIT_MS);
  return Math.max(s.connections, Math.round(median(rates) * s.seconds));
}

/** One measured run: a new key, cached by one verification, then exactly `amount` requests; CPU over it and the flush after it. */
async function measuredRun(
  client: Client,
  server: Server,
  kind: 'on' | 'off',
  amount: number,
  s: RecordingSettings,
): Promise<RecordingRun> {
  const { key, keyId } = await client.newKey();
  await client.verifyOnce(server, key);
  const before = await processCpuTotalSeconds(server.child.pid);
  const r = await autocannon(server, client.load(key), s.seconds, { connections: s.connections, pipelining: 1, amount });
  await sleep(FLUSH_WAIT_MS);
  const after = await processCpuTotalSeconds(server.child.pid);
  if (server.child.exitCode !== null || server.child.signalCode !== null)
    throw new Error(`the "${kind}" server died:\n${server.output.slice(-10).join('\n')}`);
  if (r.non2xx || r.errors || r.timeouts || r.ok2xx !== amount)
    throw new Error(`"${kind}" run: ${r.ok2xx} of ${amount} answered 2xx, ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return {
    kind,
    keyId,
    answered: r.ok2xx,
    requestsPerSec: r.ok2xx / r.durationSeconds,
    cpuUsPerRequest: ((after - before) * 1e6) / r.ok2xx,
    load1: loadavg()[0],
  };
}

/** Per "on" run (odd index), its CPU and rate against the mean of the two "off" runs around it. */
function ratios(runs: RecordingRun[]): Pick<RecordingResult, 'cpuRatios' | 'cpuRatio' | 'rateRatios' | 'rateRatio' | 'off' | 'on'> {
  const cpuRatios: number[] = [];
  const rateRatios: number[] = [];
  for (let i = 1; i < runs.length; i += 2) {
    const [a, r, b] = [runs[i - 1], runs[i], runs[i + 1]];
    cpuRatios.push((a.cpuUsPerRequest + b.cpuUsPerRequest) / 2 / r.cpuUsPerRequest);
    rateRatios.push(r.requestsPerSec / ((a.requestsPerSec + b.requestsPerSec) / 2));
  }
  const of = (kind: 'on' | 'off') => {
    const rs = runs.filter((r) => r.kind === kind);
    return { requestsPerSec: median(rs.map((r) => r.requestsPerSec)), cpuUsPerRequest: median(rs.map((r) => r.cpuUsPerRequest)) };
  };
  return { cpuRatios, cpuRatio: median(cpuRatios), rateRatios, rateRatio: median(rateRatios), off: of('off'), on: of('on') };
}

/** With every event flushed (the wait after each run): the raw rows of each run's key against its answers. */
async function recordedRows(
  db: Db,
  dialect: Dialect,
  tags: string[],
  runs: RecordingRun[],
): Promise<Pick<RecordingResult, 'expected' | 'recorded' | 'recordedAsSent' | 'mismatchedRuns' | 'recordedOff'>> {
  const counts = new Map<string, { n: number; asSent: number }>();
  const { rows } = await sql<{ key_id: string; n: number; as_sent: number }>`select key_id, count(*) as n,
      sum(case when outcome = 'VALID' and tags = ${storedTags(tags, dialect)} then 1 else 0 end) as as_sent
    from analytics_key_verifications where key_id in (${sql.join(runs.map((r) => r.keyId))}) group by key_id`.execute(db);
  for (const r of rows) counts.set(r.key_id, { n: Number(r.n), asSent: Number(r.as_sent) });
  const onRuns = runs.filter((r) => r.kind === 'on');
  const sum = (rs: RecordingRun[], f: (r: RecordingRun) => number) => rs.reduce((n, r) => n + f(r), 0);
  return {
    // Each run's answers and the one verification that cached its key.
    expected: sum(onRuns, (r) => r.answered + 1),
    recorded: sum(onRuns, (r) => counts.get(r.keyId)?.n ?? 0),
    recordedAsSent: sum(onRuns, (r) => counts.get(r.keyId)?.asSent ?? 0),
    mismatchedRuns: onRuns.filter((r) => counts.get(r.keyId)?.n !== r.answered + 1).length,
    recordedOff: sum(
      runs.filter((r) => r.kind === 'off'),
      (r) => counts.get(r.keyId)?.n ?? 0,
    ),
  };
}

async function measure(dialect: Dialect, s: RecordingSettings, on: Server, off: Server, db: Db): Promise<RecordingResult> {
  const client = await clientOf(on, s.tags);
  const amount = await warmUp(client, [off, on], s);
  console.log(
    `   ${fmt(amount, 0)} requests per run (about ${s.seconds} s), ${s.connections} connections, tags ${JSON.stringify(client.tags)}; ` +
      `${s.rounds} "on" runs, each between two "off" runs`,
  );
  const runs: RecordingRun[] = [];
  for (let i = 0; i <= 2 * s.rounds; i++) {
    const kind = i % 2 === 0 ? 'off' : 'on';
    const run = await measuredRun(client, kind === 'on' ? on : off, kind, amount, s);
    runs.push(run);
    console.log(
      `   ${`analytics ${kind} #${Math.floor(i / 2) + 1}`.padEnd(18)} ${fmt(run.requestsPerSec, 0).padStart(8)} req/s  ` +
        `server CPU ${fmt(run.cpuUsPerRequest, 1)} µs/req  (load avg ${fmt(run.load1, 1)})`,
    );
  }
  const result: RecordingResult = {
    store: dialect,
    tags: client.tags,
    amount,
    runs,
    ...ratios(runs),
    ...(await recordedRows(db, dialect, client.tags, runs)),
    dropped: await droppedTotal(on),
  };
  const list = (xs: number[]) => xs.map((x) => fmt(x, 3)).join(', ');
  console.log(
    `   on/off: server CPU per request ${fmt(result.cpuRatio, 3)} (off µs / on µs; rounds ${list(result.cpuRatios)}), ` +
      `throughput ${fmt(result.rateRatio, 3)} (rounds ${list(result.rateRatios)})`,
  );
  console.log(
    `   recorded: ${fmt(result.recorded, 0)} raw rows for ${fmt(result.expected, 0)} answered verifications of the "on" runs ` +
      `(${fmt(result.recordedAsSent, 0)} VALID with the tags sent; ${result.mismatchedRuns} runs off), ${result.recordedOff} for the "off" runs; ` +
      `keyhold_dropped_total ${result.dropped}`,
  );
  return result;
}
