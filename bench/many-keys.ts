// The many-key cases of `npm run bench` (bench/run.ts), on SQLite: cache misses, hits, unknown keys and memory
// with 100,000 distinct keys (BENCH_KEYS), and optionally (BENCH_MILLION=1) memory under key churn (bench/churn.ts).
//
// It starts the real server on a fresh SQLite file with KEYHOLD_KEY_CACHE_SIZE = keys + 1,000 (room for all
// of them: an LRU cycled over more keys than it holds would miss on every request), imports the keys as hashes
// (bench/keyset.ts), and then sends each pass from bench/list-load.ts in its own process (50 connections, a
// fixed number of requests, every response checked): the Fastify baseline (GET /v1/liveness) and the limit
// (bench/limit-server.ts, knowing the same keys) as this load generator's references, then every key once
// (all misses), every key again (all hits), the server's RSS, then BENCH_FLOOD random keys that do not exist.
// Before that restart, the process that imported the keys verifies each twice and its RSS is reported too.
// The cold starts (bench/cold-start.ts) then run on the same file once the server is stopped.

import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VERIFY_PATH } from './cases.ts';
import { churn, churnStore } from './churn.ts';
import { coldStarts } from './cold-start.ts';
import { importKeys, randomKeys, writeKeys } from './keyset.ts';
import type { ListLoadResult, Spec } from './list-load.ts';
import { addCleanup, processCpuSeconds, residentMiB, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { scratchStore } from './scratch-store.ts';
import { call, listLoad, startLimitServer, startServer, type Server } from './server.ts';
import type { Row } from './table.ts';

export interface ManyKeysSettings {
  keys: number;
  flood: number;
  million: boolean;
  connections: number;
  /** Run the passes (misses, hits, unknown keys, RSS). */
  passes: boolean;
  /** Run the cold starts (on the store with the keys, an empty one, and the Fastify floor). */
  coldStarts: number;
}

export interface Pass extends ListLoadResult {
  label: string;
  serverCpuUsPerRequest?: number;
  /** What the server's key cache counted over the pass (/metrics), where it counts. */
  cache?: { hits: number; misses: number };
}

/** The key cache's hit and miss counters (/metrics), or undefined where the server has none. */
async function cacheCounters(server: Server): Promise<{ hits: number; misses: number } | undefined> {
  const res = await call(server, { method: 'GET', path: '/metrics' }).catch(() => undefined);
  const text = typeof res?.json === 'string' ? res.json : '';
  const read = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  const counts = { hits: read('keyhold_key_cache_hits_total'), misses: read('keyhold_key_cache_misses_total') };
  return Number.isNaN(counts.hits) || Number.isNaN(counts.misses) ? undefined : counts;
}

/**
 * Where the server's memory is, from /metrics (prom-client's process metrics): the V8 heap used and allocated,
 * and the memory outside it that V8 knows of (Buffers, SQLite's prepared statements do not count there). Printed
 * beside an RSS figure, it says whether the heap or something outside it holds the difference.
 */
async function memoryBreakdown(server: Server): Promise<string> {
  const res = await call(server, { method: 'GET', path: '/metrics' }).catch(() => undefined);
  const text = typeof res?.json === 'string' ? res.json : '';
  const mb = (name: string) => {
    const v = Number(new RegExp(`^${name} ([0-9.e+]+)`, 'm').exec(text)?.[1] ?? Number.NaN);
    return Number.isNaN(v) ? '?' : `${(v / 1024 / 1024).toFixed(0)} MB`;
  };
  return `V8 heap used ${mb('keyhold_nodejs_heap_size_used_bytes')} of ${mb('keyhold_nodejs_heap_size_total_bytes')}, external ${mb('keyhold_nodejs_external_memory_bytes')}`;
}

/** Requests of each reference pass (baseline, limit): enough for a few seconds of load. */
const REFERENCE_REQUESTS = 20_000;
const VALID = '"code":"VALID"';
const NOT_FOUND = '"code":"NOT_FOUND"';
const PREFIX = 'bk';
/** The key-churn case (BENCH_MILLION=1): keys imported, and passes over all of them with the default cache. */
const CHURN_KEYS = 1_000_000;
const CHURN_PASSES = 3;

/** One pass of bench/list-load.ts against `target`, with the CPU time `target` spent over it; fails on any wrong answer. */
export async function pass(label: string, target: Server, spec: Omit<Spec, 'url'> & { path: string }): Promise<Pass> {
  const countsBefore = await cacheCounters(target);
  const before = await processCpuSeconds(target.child.pid);
  const r = await listLoad({ ...spec, url: target.base + spec.path }, Math.ceil(spec.amount / 200) + 60);
  const after = await processCpuSeconds(target.child.pid);
  const countsAfter = await cacheCounters(target);
  if (target.child.exitCode !== null || target.child.signalCode !== null)
    throw new Error(`the server died during "${label}":\n${target.output.slice(-10).join('\n')}`);
  const wrong = r.non2xx + r.errors + r.timeouts + r.mismatches;
  if (wrong)
    throw new Error(
      `"${label}": ${wrong} wrong answers of ${r.requests} (non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts}, not ${spec.expect} ${r.mismatches})`,
    );
  const cpu = before && after ? ((after.user + after.system - before.user - before.system) * 1e6) / r.requests : undefined;
  const cache =
    countsBefore && countsAfter
      ? { hits: countsAfter.hits - countsBefore.hits, misses: countsAfter.misses - countsBefore.misses }
      : undefined;
  console.log(
    `   ${label.padEnd(44)} ${fmt(r.requestsPerSec, 0).padStart(8)} req/s  ${r.requests} requests in ${fmt(r.seconds, 1)} s  p50 ${r.latencyP50Ms} ms  p99 ${r.latencyP99Ms} ms` +
      (cpu === undefined ? '' : `  server CPU ${fmt(cpu, 0)} µs/req`) +
      (cache && cache.hits + cache.misses ? `  key cache: ${cache.hits} hits, ${cache.misses} misses` : ''),
  );
  return { ...r, label, serverCpuUsPerRequest: cpu, cache };
}

/** A pass as a table row, with its ratios to the two reference passes. */
function row(p: Pass, limit: Pass, baseline: Pass, target?: { text: string; met: boolean }): Row {
  const cpu = p.serverCpuUsPerRequest;
  return {
    case: p.label,
    store: 'sqlite',
    requestsPerSec: p.requestsPerSec,
    ratioToLimit: p.requestsPerSec / limit.requestsPerSec,
    ratioToBaseline: p.requestsPerSec / baseline.requestsPerSec,
    cpuUsPerRequest: cpu,
    cpuRatioToLimit: cpu !== undefined && limit.serverCpuUsPerRequest ? cpu / limit.serverCpuUsPerRequest : undefined,
    target: target?.text,
    met: target?.met,
    detail: p,
  };
}

const mib = (n: number | undefined) => (n === undefined ? '?' : `${fmt(n, 0)} MB`);

/** The passes over the keys; the server and the limit are started and stopped by the caller. */
async function passes(
  server: Server,
  limit: Server,
  apiId: string,
  files: { keys: string; unknown: string },
  s: ManyKeysSettings,
): Promise<Row[]> {
  const n = fmt(s.keys, 0);
  const verify = { method: 'POST' as const, path: VERIFY_PATH, connections: s.connections, apiId };
  const refs = Math.min(REFERENCE_REQUESTS, s.keys);
  const baseline = await pass('baseline GET /v1/liveness (list load)', server, {
    ...verify,
    method: 'GET',
    path: '/v1/liveness',
    amount: refs,
  });
  const lim = await pass('limit (list load)', limit, { ...verify, amount: refs, keysFile: files.keys, expect: VALID });
  const miss = await pass(`verifyKey, ${n} keys, 1st pass (misses)`, server, {
    ...verify,
    amount: s.keys,
    keysFile: files.keys,
    expect: VALID,
  });
  const hit = await pass(`verifyKey, ${n} keys, 2nd pass (hits)`, server, {
    ...verify,
    amount: s.keys,
    keysFile: files.keys,
    expect: VALID,
  });
  const rss = await residentMiB(server.child.pid);
  console.log(`   RSS with ${n} keys cached: ${mib(rss)} (${await memoryBreakdown(server)})`);
  const flood = await pass(`verifyKey, ${fmt(s.flood, 0)} unknown keys`, server, {
    ...verify,
    amount: s.flood,
    keysFile: files.unknown,
    expect: NOT_FOUND,
  });
  const cpuRatio = miss.serverCpuUsPerRequest! / hit.serverCpuUsPerRequest!;
  const floodRatio = flood.requestsPerSec / hit.requestsPerSec;
  return [
    row(baseline, lim, baseline),
    row(lim, lim, baseline),
    row(miss, lim, baseline, { text: `CPU ≤ 2.00× hits' (${fmt(cpuRatio, 2)}×)`, met: cpuRatio <= 2 }),
    row(hit, lim, baseline),
    row(flood, lim, baseline, { text: `≥ 0.70× hits' req/s (${fmt(floodRatio, 2)}×)`, met: floodRatio >= 0.7 }),
    {
      case: `RSS with ${n} keys cached: ${mib(rss)}`,
      store: 'sqlite',
      target: '≤ 250 MB',
      met: rss === undefined ? undefined : rss <= 250,
    },
  ];
}

/**
 * RSS with every key cached in the process that imported them (no restart: what the import itself left in
 * the heap counts), after verifying each key once (misses) and once more (hits).
 */
async function cachedWhereImported(server: Server, apiId: string, keysFile: string, s: ManyKeysSettings): Promise<Row> {
  const n = fmt(s.keys, 0);
  const verify = { method: 'POST' as const, path: VERIFY_PATH, connections: s.connections, apiId, keysFile, expect: VALID };
  await pass(`verifyKey, ${n} keys, in the importing process (misses)`, server, { ...verify, amount: s.keys });
  await pass(`verifyKey, ${n} keys, in the importing process (hits)`, server, { ...verify, amount: s.keys });
  const rss = await residentMiB(server.child.pid);
  console.log(`   RSS with ${n} keys cached, in the process that imported them: ${mib(rss)}`);
  return {
    case: `RSS with ${n} keys cached, in the process that imported them: ${mib(rss)}`,
    store: 'sqlite',
    target: '≤ 250 MB',
    met: rss === undefined ? undefined : rss <= 250,
  };
}

/** Every many-key case chosen, on a fresh SQLite store; the rows of the results table. */
export async function benchManyKeys(s: ManyKeysSettings): Promise<Row[]> {
  const dir = await mkdtemp(join(tmpdir(), 'keyhold-bench-keys-'));
  addCleanup(() => rm(dir, { recursive: true, force: true }));
  const store = scratchStore('sqlite');
  addCleanup(store.cleanup);
  console.log(`\n== sqlite, ${fmt(s.keys, 0)} keys: starting the server (KEYHOLD_KEY_CACHE_SIZE=${s.keys + 1_000})`);
  const env = { KEYHOLD_KEY_CACHE_SIZE: String(s.keys + 1_000) };
  let server = await startServer(store.url, { env });
  const rows: Row[] = [];
  let limit: Server | undefined;
  let apiId: string;
  let keys: string[];
  try {
    const api = await call(server, {
      method: 'POST',
      path: '/v1/apis.createApi',
      body: JSON.stringify({ name: 'bench-many' }),
      rootKey: server.rootKey,
    });
    if (api.status !== 200) throw new Error(`apis.createApi: ${api.status} ${JSON.stringify(api.json)}`);
    apiId = api.json.apiId as string;
    keys = randomKeys(s.keys, PREFIX);
    console.log(`   importing ${fmt(s.keys, 0)} keys (migrations.createKeys, hashes) …`);
    console.log(`   ${fmt(await importKeys(server, apiId, keys, PREFIX), 0)} keys/s`);
    const files = {
      keys: await writeKeys(dir, 'keys.txt', keys),
      unknown: await writeKeys(dir, 'unknown.txt', randomKeys(s.flood, PREFIX)),
    };
    if (s.passes) {
      rows.push(await cachedWhereImported(server, apiId, files.keys, s));
      // The passes run on a fresh process, as after a restart or a deploy: nothing cached, and the memory the
      // import itself used (its request bodies, its statements) is not counted as memory of the cache.
      await stopChild(server.child);
      server = await startServer(store.url, { env, rootKey: server.rootKey });
      console.log(
        `   restarted: RSS before any verification ${mib(await residentMiB(server.child.pid))} (${await memoryBreakdown(server)})`,
      );
      limit = await startLimitServer(files.keys);
      rows.push(...(await passes(server, limit, apiId, files, s)));
    }
  } finally {
    if (limit) await stopChild(limit.child);
    await stopChild(server.child);
  }
  if (s.coldStarts > 0)
    rows.push(...(await coldStarts({ databaseUrl: store.url, rootKey: server.rootKey, apiId, keys, starts: s.coldStarts })));
  if (s.passes && s.million) {
    // Key churn: 1,000,000 keys through the default cache, three times (bench/churn.ts); its store is kept in
    // BENCH_CHURN_DIR when that is set, so later runs skip the import.
    let churnDir = process.env.BENCH_CHURN_DIR;
    if (!churnDir) {
      churnDir = join(dir, 'churn');
      await mkdir(churnDir);
    }
    console.log(`\n== sqlite, key churn: ${fmt(CHURN_KEYS, 0)} keys, ${CHURN_PASSES} passes, default key cache`);
    rows.push((await churn(await churnStore(churnDir, CHURN_KEYS), { passes: CHURN_PASSES })).row);
  }
  return rows;
}
