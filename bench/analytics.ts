// Analytics performance (issue 31, item 6): what recording costs a verification, how fast the store takes events,
// what they take on disk, and how fast typical queries answer with millions of events stored. Not part of
// `npm run bench` (the full load alone takes many minutes).
//
//   node --disable-warning=ExperimentalWarning bench/analytics.ts [--events 10000000] [--ingest 1000000]
//        [--seconds 5] [--rounds 5] [--warmup 3] [--connections 50] [--tags 3] [--repeat 30] [--keys 10000]
//        [--identities 1000] [--days 30] [--load-batch 50000] [--stores sqlite,postgres]
//        [--parts recording,ingest,query] [--raw-queries]
//
// On SQLite (a temporary file) and, when KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL is set, on
// PostgreSQL (a fresh schema kh_bench_<random>), each part on a store of its own, removed when the part ends:
//   1. recording (bench/analytics-recording.ts): v2 keys.verifyKey of a cached key with `--tags` tags, on a server
//      with analytics on and one with KEYHOLD_ANALYTICS=off (the real server, src/main.ts, two processes on one
//      store), load from a separate process (autocannon, `--connections`), `--rounds` "on" runs each between two
//      "off" runs, every run the same number of requests (about `--seconds` s; set by `--warmup` s of warm-up
//      load); req/s and the server's CPU µs per request (/proc) of each, and on/off as the median over the "on"
//      runs of (mean CPU µs/req of the two "off" runs around it) / (its own): target ≥ 0.95. Then the raw table
//      must hold exactly one row per 200 answer of the "on" runs (each run verifies a key of its own, so the
//      rows are counted per run), none for the "off" runs, and the server's keyhold_dropped_total must be 0.
//   2. ingestion (bench/analytics-ingest.ts): `--ingest` events written in this process through the server's own
//      batch writer (VerificationRecorder's flush: raw rows, roll-ups and last_used_at in one transaction) in
//      batches of the server's size (10,000), timestamps of a 50,000 events/s stream: events/s of the writes
//      (target ≥ 50,000 on SQLite).
//   3. disk: after the ingestion (and after the load of part 4), the raw table's growth (with its indexes; on
//      PostgreSQL every day partition) per event, and each roll-up table's (SQLite dbstat; pg_total_relation_size).
//   4. queries (bench/analytics-queries.ts, bench/analytics-query-set.ts): `--events` events loaded through the
//      same writer (batches of `--load-batch`) over the last `--days` days, `--keys` keys (skewed) and
//      `--identities` identities of one workspace (90%) and a second workspace (10%) (bench/analytics-events.ts
//      describes the events); then the server answers three typical queries through
//      POST /v2/analytics.getVerifications (per-day totals over 30 days; top 10 keys over 7 days; the hottest key's
//      per-hour series over 24 h; with `--raw-queries` also the same questions asked of the raw table), each
//      checked once against what was loaded, then `--repeat` times: p50 / p95 / max of the round trip, target
//      p95 ≤ 100 ms.
// `--stores` chooses the stores, `--parts` the parts. It prints each run as it goes, then a markdown table, the
// queries' SQL, the machine and the command; it writes the results to bench/out/analytics-<UTC timestamp>.json and
// the table to bench/out/analytics-latest.md. It reports numbers and asserts none: a missed target is printed. It
// exits non-zero only when the setup is wrong (a server does not start, a request fails, a query's answer is not
// what was loaded). Every process it starts is stopped and every store it made removed on the way out.
//
// At the defaults expect 45–60 minutes on 2 cores (most of it the two 10,000,000-event loads: about 20,000
// events/s on SQLite and 7,500–10,500 on PostgreSQL on a busy 2-core machine, 2026-11-29), and free disk for the store
// of one part at a time: up to 15 GB (a raw event with its roll-ups took 1.5 KB when sparse, 200,000 over 30 days).
// A run of a few minutes that proves the setup on both stores:
//   --events 200000 --ingest 100000 --seconds 3

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GRAINS } from '../src/services/analytics/rollups.ts';
import type { Dialect } from './analytics-events.ts';
import { benchIngest, type DiskUse, type IngestResult } from './analytics-ingest.ts';
import { benchQueries, msText, QUERY_TARGET_MS, type QueryResult } from './analytics-queries.ts';
import { benchRecording, type RecordingResult } from './analytics-recording.ts';
import { machineLine } from './output.ts';
import { runStandalone } from './processes.ts';
import { fmt } from './report.ts';
import { BENCH_PG_URL } from './scratch-store.ts';
import { OUT_DIR } from './server.ts';

const CPU_RATIO_TARGET = 0.95;
const INGEST_TARGET = 50_000;
const PARTS = ['recording', 'ingest', 'query'] as const;
type Part = (typeof PARTS)[number];

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '10000000' },
    ingest: { type: 'string', default: '1000000' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    tags: { type: 'string', default: '3' },
    repeat: { type: 'string', default: '30' },
    keys: { type: 'string', default: '10000' },
    identities: { type: 'string', default: '1000' },
    days: { type: 'string', default: '30' },
    'load-batch': { type: 'string', default: '50000' },
    stores: { type: 'string', default: BENCH_PG_URL ? 'sqlite,postgres' : 'sqlite' },
    parts: { type: 'string', default: PARTS.join(',') },
    'raw-queries': { type: 'boolean', default: false },
  },
});

function positive(name: keyof typeof args, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--${name} must be an integer from 1 to ${max}, got "${args[name]}"`);
  return n;
}

const list = <T extends string>(name: 'stores' | 'parts', known: readonly T[]): T[] => {
  const items = String(args[name])
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  for (const x of items) if (!known.includes(x as T)) throw new Error(`--${name}: unknown "${x}" (known: ${known.join(', ')})`);
  return items as T[];
};

interface Results {
  recording: RecordingResult[];
  ingest: IngestResult[];
  queries: QueryResult[];
}

const met = (ok: boolean) => (ok ? 'yes' : '**no**');
const rollupCell = (d: DiskUse) =>
  GRAINS.map((g) => `${g} ${fmt(d.rollupBytesPerEvent[g], 0)} B (${fmt(d.rollupRowsPerEvent[g], 2)} rows)`).join(', ');

function recordingRows(x: RecordingResult): string[][] {
  const on = x.runs.filter((run) => run.kind === 'on').length;
  const label = `v2 keys.verifyKey, cached key, ${x.tags.length} tags`;
  const allRecorded =
    x.recorded === x.expected && x.recordedAsSent === x.expected && x.mismatchedRuns === 0 && x.recordedOff === 0 && x.dropped === 0;
  return [
    [
      `${label}, KEYHOLD_ANALYTICS=off`,
      x.store,
      `${fmt(x.off.requestsPerSec, 0)} req/s, ${fmt(x.off.cpuUsPerRequest, 1)} µs/req (median of ${x.runs.length - on})`,
      '-',
      '-',
    ],
    [
      `${label}, analytics on`,
      x.store,
      `${fmt(x.on.requestsPerSec, 0)} req/s, ${fmt(x.on.cpuUsPerRequest, 1)} µs/req (median of ${on})`,
      '-',
      '-',
    ],
    [
      'on/off by server CPU per request (off µs / on µs)',
      x.store,
      `${fmt(x.cpuRatio, 3)} (runs ${x.cpuRatios.map((v) => fmt(v, 2)).join(', ')}); throughput ${fmt(x.rateRatio, 3)}`,
      `≥ ${CPU_RATIO_TARGET}`,
      met(x.cpuRatio >= CPU_RATIO_TARGET),
    ],
    [
      'every answered verification recorded, none dropped',
      x.store,
      `${fmt(x.recorded, 0)} raw rows for ${fmt(x.expected, 0)} answers (${on} runs, a key each; ${fmt(x.recordedAsSent, 0)} VALID with the tags); ${x.recordedOff} for "off"; dropped ${x.dropped}`,
      'all; 0 dropped',
      met(allRecorded),
    ],
  ];
}

function ingestRows(x: IngestResult): string[][] {
  const sqlite = x.store === 'sqlite';
  return [
    [
      `ingestion, batches of ${fmt(x.batch, 0)} (the server's), ${fmt(x.events, 0)} events`,
      x.store,
      `${fmt(x.eventsPerSec, 0)} events/s`,
      sqlite ? `≥ ${fmt(INGEST_TARGET, 0)} events/s` : '-',
      sqlite ? met(x.eventsPerSec >= INGEST_TARGET) : '-',
    ],
    ['disk per raw event (table + indexes), after the ingestion', x.store, `${fmt(x.disk.rawBytesPerEvent, 0)} B`, '-', '-'],
    ["roll-ups' disk per raw event, after the ingestion", x.store, rollupCell(x.disk), '-', '-'],
  ];
}

function queryRows(x: QueryResult): string[][] {
  const n = fmt(x.events, 0);
  return [
    [
      `load of ${n} events in the past, batches of ${fmt(x.loadBatch, 0)}`,
      x.store,
      `${fmt(x.loadEventsPerSec, 0)} events/s (${fmt(x.loadSeconds, 0)} s)`,
      '-',
      '-',
    ],
    [`disk per raw event (table + indexes), ${n} events`, x.store, `${fmt(x.disk.rawBytesPerEvent, 0)} B`, '-', '-'],
    [`roll-ups' disk per raw event, ${n} events`, x.store, rollupCell(x.disk), '-', '-'],
    ...x.queries.map((q) => [
      `query: ${q.label}`,
      x.store,
      `p50 ${msText(q.p50Ms)}, p95 ${msText(q.p95Ms)}, max ${msText(q.maxMs)} (${q.runs} runs${q.timeouts ? `, ${q.timeouts} timed out` : ''}; first ${msText(q.firstMs)}; ${q.rows} rows${q.checked ? ', as loaded' : ''})`,
      q.target ? `p95 ≤ ${QUERY_TARGET_MS} ms` : '-',
      q.target ? met(q.p95Ms <= QUERY_TARGET_MS) : '-',
    ]),
  ];
}

/** The table's rows: measurement, store, figure, target, met. */
const tableRows = (r: Results): string[][] => [
  ...r.recording.flatMap(recordingRows),
  ...r.ingest.flatMap(ingestRows),
  ...r.queries.flatMap(queryRows),
];

function markdown(rows: string[][]): string {
  const header = ['measurement', 'store', 'figure', 'target', 'met?'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cs: string[]) => `| ${cs.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

function commandLine(): string {
  const urls = ['KEYHOLD_BENCH_POSTGRES_URL', 'KEYHOLD_TEST_POSTGRES_URL'].filter((n) => process.env[n]).map((n) => `${n}=…`);
  return [...urls, 'node bench/analytics.ts', ...process.argv.slice(2)].join(' ');
}

async function main(): Promise<void> {
  const started = Date.now();
  const stores = list<Dialect>('stores', ['sqlite', 'postgres']);
  if (stores.includes('postgres') && !BENCH_PG_URL)
    throw new Error('--stores names postgres but neither KEYHOLD_BENCH_POSTGRES_URL nor KEYHOLD_TEST_POSTGRES_URL is set');
  const parts = list<Part>('parts', PARTS);
  const recording = {
    seconds: positive('seconds'),
    rounds: positive('rounds'),
    warmup: positive('warmup'),
    connections: positive('connections'),
    tags: positive('tags', 20),
  };
  const population = { keys: positive('keys'), identities: positive('identities') };
  const ingest = { events: positive('ingest'), ...population };
  const query = {
    events: positive('events'),
    ...population,
    days: positive('days', 30),
    loadBatch: positive('load-batch'),
    repeat: positive('repeat'),
    rawQueries: args['raw-queries'] === true,
  };
  console.log(`bench/analytics.ts on ${stores.join(', ')}: ${parts.join(', ')}. Machine: ${machineLine()}`);
  const results: Results = { recording: [], ingest: [], queries: [] };
  for (const store of stores) {
    if (parts.includes('recording')) results.recording.push(await benchRecording(store, recording));
    if (parts.includes('ingest')) results.ingest.push(await benchIngest(store, ingest));
    if (parts.includes('query')) results.queries.push(await benchQueries(store, query));
  }

  const wall = (Date.now() - started) / 1000;
  const queries = results.queries[0]?.queries ?? [];
  const text = [
    `Machine: ${machineLine()}. Command: \`${commandLine()}\` (wall time ${Math.floor(wall / 60)} min ${Math.round(wall % 60)} s).`,
    '',
    markdown(tableRows(results)),
    '',
    ...(queries.length
      ? [
          'The queries (the hottest key in the third; sent to POST /v2/analytics.getVerifications):',
          '',
          ...queries.map((q) => `- ${q.label}: \`${q.sql}\``),
        ]
      : []),
  ].join('\n');
  console.log(`\n${text}`);
  await mkdir(OUT_DIR, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  await writeFile(
    join(OUT_DIR, `analytics-${stamp}.json`),
    `${JSON.stringify({ command: commandLine(), machine: machineLine(), wallSeconds: wall, ...results }, null, 2)}\n`,
  );
  await writeFile(join(OUT_DIR, 'analytics-latest.md'), `${text}\n`);
}

runStandalone(main);
