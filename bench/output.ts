// What `npm run bench` (bench/run.ts) prints first and last, and what it keeps: every run as
// bench/out/<UTC timestamp>.json (results.json is a copy of the latest) and the table as bench/out/latest.md.

import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import type { StoreKind } from './cases.ts';
import { fmt, laneVsRoute, v2VsV1, type CaseSummary, type RootKeyCacheRate, type RunResult } from './report.ts';
import { OUT_DIR } from './server.ts';
import { markdownTable, notes, type Row } from './table.ts';

/** The settings the results depend on (bench/run.ts). */
interface Settings {
  duration: number;
  rounds: number;
  warmup: number;
  connections: number;
  pipelining: number;
  cpuProf: boolean;
  keys: number;
  flood: number;
  million: boolean;
  coldStarts: number;
}

export function machineLine(): string {
  const date = new Date().toISOString().slice(0, 10);
  return `${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${date}`;
}

/** `npm run bench` as it was run: the settings' variables that were set (URLs elided: they may hold passwords). */
export function commandLine(): string {
  const set = Object.keys(process.env)
    .filter((name) => /^BENCH_/.test(name) || /^KEYHOLD_(BENCH|TEST)_(POSTGRES|REDIS)_URL$/.test(name))
    .filter((name) => process.env[name])
    .sort()
    .map((name) => (name.endsWith('_URL') ? `${name}=…` : `${name}=${process.env[name]}`));
  return [...set, 'npm run bench'].join(' ');
}

export function printStart(stores: StoreKind[], settings: Settings, urls: { postgres: boolean; redis: boolean }): void {
  const startLoad = loadavg()[0];
  console.log(`keyhold benchmark: ${machineLine()}; stores: ${stores.join(', ') || 'none'}`);
  console.log(
    `server, limit and load generator are separate processes sharing this machine's ${cpus().length} CPUs${settings.cpuProf ? '; the server runs with --cpu-prof (slower)' : ''}`,
  );
  if (startLoad > cpus().length)
    console.log(`note: the machine is already busy (1-min load average ${fmt(startLoad, 1)} before starting); the numbers will be noisy`);
  if (!urls.postgres) console.log('PostgreSQL: skipped (set KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL to include it)');
  if (!urls.redis) console.log('sqlite+redis: skipped (set KEYHOLD_BENCH_REDIS_URL or KEYHOLD_TEST_REDIS_URL to include it)');
}

const duration = (seconds: number) => `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;

/** The markdown written to latest.md and printed: machine, command, table, notes. */
function markdown(r: Results): string {
  const s = r.settings;
  const load = [`${s.connections} connections from a separate process`];
  if (r.summaries.length)
    load.push(`autocannon cases ${s.rounds} rounds of ${s.duration} s (pipelining ${s.pipelining}), each between two baseline runs`);
  if (r.rows.some((row) => row.case.startsWith('verifyKey, ')))
    load.push(`many-key cases one pass each (${fmt(s.keys, 0)} keys, ${fmt(s.flood, 0)} unknown keys)`);
  if (r.rows.some((row) => row.case.startsWith('cold start'))) load.push(`cold starts median of ${s.coldStarts}`);
  return [
    `Machine: ${r.machine}. Command: \`${commandLine()}\` (wall time ${duration(r.wallSeconds)}).`,
    `Load: ${load.join('; ')}.`,
    '',
    markdownTable(r.rows),
    '',
    ...notes(r.summaries, r.rows, r.rootKeyCache),
  ].join('\n');
}

export interface Results {
  summaries: CaseSummary[];
  runs: RunResult[];
  rows: Row[];
  /** Per store: the root-key cache's hit rate over the run. */
  rootKeyCache: RootKeyCacheRate[];
  settings: Settings;
  wallSeconds: number;
  machine: string;
}

/** Prints the table and writes the run (bench/out/<timestamp>.json, results.json, latest.md). */
export async function writeOutputs(r: Results): Promise<void> {
  const text = markdown(r);
  console.log(`\nResults\n\n${text}\n`);
  const date = new Date();
  const json = {
    date: date.toISOString(),
    machine: r.machine,
    command: commandLine(),
    wallSeconds: r.wallSeconds,
    settings: r.settings,
    rows: r.rows,
    summaries: r.summaries,
    laneVsRoute: laneVsRoute(r.summaries),
    v2VsV1: v2VsV1(r.summaries),
    rootKeyCache: r.rootKeyCache,
    runs: r.runs,
  };
  await mkdir(OUT_DIR, { recursive: true });
  // ISO 8601 basic format (no colons: a portable file name).
  const stamp = date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  const file = join(OUT_DIR, `${stamp}.json`);
  const body = `${JSON.stringify(json, null, 2)}\n`;
  await writeFile(file, body);
  await writeFile(join(OUT_DIR, 'results.json'), body);
  await writeFile(join(OUT_DIR, 'latest.md'), `${text}\n`);
  console.log(`Written: ${file} (and results.json, latest.md in ${OUT_DIR})`);
}
