// Part 4 of bench/analytics.ts: typical analytics queries at scale, end to end. A fresh store; the server
// (src/main.ts) starts to create it and import the workspace's keys and identities, and is stopped; `events` events
// are loaded through the server's own batch writer (analytics-events.ts BatchWriter, batches of `loadBatch`),
// spread evenly over the last `days` days (oldest first, the newest a minute before the load started), 90% in the
// workspace, 10% in a second one; on PostgreSQL the analytics tables are then ANALYZEd (as autovacuum would have
// done over those days; on SQLite the server runs no ANALYZE, so neither does this). The server starts again and
// each query is sent to POST /v2/analytics.getVerifications with the bootstrap root key: once unmeasured (its answer
// checked against what was loaded), then `repeat` times round-robin with the others, one at a time; the round trip
// of each is timed here.

import pg from 'pg';
import type { VerificationEvent } from '../src/services/verification/verification-recorder.ts';
import { openStore } from '../src/store/store.ts';
import {
  analyticsSizes,
  BatchWriter,
  EventMaker,
  importPopulation,
  noisePopulation,
  rollupRows,
  type Dialect,
  type Population,
} from './analytics-events.ts';
import { diskLine, diskUse, type DiskUse } from './analytics-ingest.ts';
import { queriesFor, Tally, type Query, type Rows } from './analytics-query-set.ts';
import { addCleanup, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { scratchStore } from './scratch-store.ts';
import { call, startServer, type Server } from './server.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
export const QUERY_TARGET_MS = 100;

export interface QuerySettings {
  events: number;
  keys: number;
  identities: number;
  days: number;
  loadBatch: number;
  repeat: number;
  rawQueries: boolean;
}

export interface QueryStats {
  id: string;
  label: string;
  sql: string;
  target: boolean;
  rows: number;
  firstMs: number;
  runs: number;
  /** Runs answered 422 query_execution_timeout (counted as infinitely long in the quantiles). */
  timeouts: number;
  /** Whether the first answer was compared with what was loaded (the roll-up queries, unless it timed out). */
  checked: boolean;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

export interface QueryResult {
  store: Dialect;
  events: number;
  loadSeconds: number;
  loadEventsPerSec: number;
  loadBatch: number;
  disk: DiskUse;
  queries: QueryStats[];
}

/** The value at rank ⌈q·n⌉ of the sorted values (nearest rank). */
export const quantile = (sorted: number[], q: number): number => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];

/** Loads `s.events` events over the last `s.days` days into the store; what was loaded, per day and key. */
async function load(db: ReturnType<typeof openStore>['db'], dialect: Dialect, main: Population, s: QuerySettings): Promise<Tally> {
  const end = Date.now() - 60_000;
  const start = end - s.days * DAY_MS + 2 * HOUR_MS;
  const tally = new Tally(start, end, main.keys.length);
  const writer = new BatchWriter(db, { dialect });
  const maker = new EventMaker(main, noisePopulation(), 4);
  const step = (end - start) / s.events;
  const started = performance.now();
  let nextReport = s.events / 10;
  for (let done = 0; done < s.events; ) {
    const n = Math.min(s.loadBatch, s.events - done);
    const batch: VerificationEvent[] = new Array(n);
    for (let j = 0; j < n; j++) {
      const drawn = maker.make(Math.floor(start + (done + j) * step));
      if (drawn.main) tally.add(drawn.event, drawn.keyIndex);
      batch[j] = drawn.event;
    }
    await writer.writeBatch(batch);
    done += n;
    if (done >= nextReport || done === s.events) {
      const seconds = (performance.now() - started) / 1000;
      console.log(`   ${fmt(done, 0)} events loaded in ${fmt(seconds, 0)} s (${fmt(done / seconds, 0)} events/s)`);
      nextReport += s.events / 10;
    }
  }
  return tally;
}

async function runQuery(server: Server, q: Query): Promise<{ ms: number; status: number; json: any }> {
  const t = performance.now();
  const res = await call(server, {
    method: 'POST',
    path: '/v2/analytics.getVerifications',
    body: JSON.stringify({ query: q.sql }),
    rootKey: server.rootKey,
  });
  return { ms: performance.now() - t, ...res };
}

/**
 * ANALYZE on a connection of its own: the store's connections carry statement and client-side query timeouts
 * (seconds) that ANALYZE of millions of rows outlasts.
 */
async function analyzeWithoutTimeouts(storeUrl: string, tables: string[]): Promise<void> {
  const url = new URL(storeUrl);
  const schema = url.searchParams.get('schema') ?? 'public';
  url.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: url.toString(), options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await client.query(`analyze ${tables.join(', ')}`);
  } finally {
    await client.end();
  }
}

/** A run the server stopped at its 5 s deadline (422 query_execution_timeout) counts as this long. */
const TIMED_OUT = Number.POSITIVE_INFINITY;

/** Each query once (its answer checked), then `repeat` rounds of every query in turn. */
async function measureQueries(server: Server, queries: Query[], repeat: number): Promise<QueryStats[]> {
  const times = new Map<string, number[]>(queries.map((q) => [q.id, []]));
  const stats = new Map<string, Pick<QueryStats, 'rows' | 'firstMs' | 'checked'>>();
  /** The run's time, TIMED_OUT for a 422; anything else is a failure of the setup. */
  const timed = (q: Query, r: { ms: number; status: number; json: any }): number => {
    if (r.status === 200) return r.ms;
    if (r.status === 422) return TIMED_OUT;
    throw new Error(`${q.label}: ${r.status} ${JSON.stringify(r.json).slice(0, 400)}`);
  };
  for (const q of queries) {
    const now = Date.now();
    const r = await runQuery(server, q);
    const ms = timed(q, r);
    const rows = ms === TIMED_OUT ? undefined : (r.json.data as Rows);
    const problem = rows && q.check?.(rows, now);
    if (problem) throw new Error(`${q.label}: the answer is not what was loaded: ${problem}`);
    stats.set(q.id, { rows: rows?.length ?? 0, firstMs: ms, checked: rows !== undefined && q.check !== undefined });
    console.log(`   ${q.label}: first run ${msText(ms)}, ${rows ? `${rows.length} rows${q.check ? ', as loaded' : ''}` : 'not checked'}`);
  }
  for (let i = 0; i < repeat; i++) for (const q of queries) times.get(q.id)!.push(timed(q, await runQuery(server, q)));
  return queries.map((q) => {
    const ms = times.get(q.id)!.sort((a, b) => a - b);
    return {
      id: q.id,
      label: q.label,
      sql: q.sql,
      target: q.target,
      ...stats.get(q.id)!,
      runs: repeat,
      timeouts: ms.filter((x) => x === TIMED_OUT).length,
      p50Ms: quantile(ms, 0.5),
      p95Ms: quantile(ms, 0.95),
      maxMs: ms.at(-1) ?? Number.NaN,
    };
  });
}

/** A run's time for the output: ms, or the server's timeout. */
export const msText = (ms: number): string => (ms === TIMED_OUT ? 'timed out (5 s)' : `${fmt(ms, 1)} ms`);

export async function benchQueries(dialect: Dialect, s: QuerySettings): Promise<QueryResult> {
  const scratch = scratchStore(dialect);
  addCleanup(scratch.cleanup);
  console.log(`\n== ${dialect}, queries at scale: a fresh store, ${fmt(s.keys, 0)} keys imported through the server`);
  const env = { KEYHOLD_PRUNE_INTERVAL_MINUTES: '0' };
  let server = await startServer(scratch.url, { env });
  const store = openStore(scratch.url);
  let storeOpen = true;
  try {
    const main = await importPopulation(server, store.db, s.keys, s.identities);
    await stopChild(server.child);
    console.log(`   loading ${fmt(s.events, 0)} events over ${s.days} days through the batch writer, ${fmt(s.loadBatch, 0)} per batch`);
    const before = await analyticsSizes(store.db, dialect);
    const started = performance.now();
    const tally = await load(store.db, dialect, main, s);
    const loadSeconds = (performance.now() - started) / 1000;
    if (dialect === 'postgres') {
      const analyzeStarted = performance.now();
      await analyzeWithoutTimeouts(scratch.url, [
        'analytics_key_verifications',
        ...['minute', 'hour', 'day', 'month'].flatMap((g) =>
          ['', '_by_key', '_by_api'].map((f) => `analytics_key_verifications_per_${g}${f}`),
        ),
      ]);
      console.log(`   ANALYZE of the analytics tables: ${fmt((performance.now() - analyzeStarted) / 1000, 1)} s`);
    }
    const disk = diskUse(before, await analyticsSizes(store.db, dialect), await rollupRows(store.db), s.events);
    console.log(`   on disk: ${diskLine(disk)}`);
    await store.close();
    storeOpen = false;
    server = await startServer(scratch.url, { rootKey: server.rootKey, env });
    const queries = queriesFor(main.keys[0].id, tally, s.rawQueries);
    console.log(`   queries (POST /v2/analytics.getVerifications), each once, then ${s.repeat} rounds:`);
    const stats = await measureQueries(server, queries, s.repeat);
    for (const q of stats)
      console.log(
        `   ${q.label}: p50 ${msText(q.p50Ms)}, p95 ${msText(q.p95Ms)}, max ${msText(q.maxMs)}` +
          (q.timeouts ? `, ${q.timeouts} of ${q.runs} runs timed out` : ''),
      );
    return {
      store: dialect,
      events: s.events,
      loadSeconds,
      loadEventsPerSec: s.events / loadSeconds,
      loadBatch: s.loadBatch,
      disk,
      queries: stats,
    };
  } finally {
    await stopChild(server.child);
    if (storeOpen) await store.close();
    await scratch.cleanup();
  }
}
