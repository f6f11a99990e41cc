// `npm run bench:scale`: how Keyhold's costs grow with the data, on PostgreSQL (not run in CI; it reports numbers
// and asserts none: a missed target is printed).
//
//   SCALE_N=200000 npm run bench:scale -- [--keys N] [--small 100000] [--identities 100000] [--roles 1000]
//        [--sample 100000] [--warmup 5000] [--random 1000000] [--connections 2] [--random-connections 8]
//        [--cold-starts 3] [--import-concurrency 2] [--mixed-seconds 60] [--mixed-connections 24] [--revocations 10]
//        [--credit-keys 100] [--credits 50] [--credit-share 0.05] [--repeat 30] [--parts single,reads,cluster]
//   npm run bench:scale -- --growth bench/out/scale-A.json bench/out/scale-B.json …   (the growth table of runs)
//
// On a fresh schema kh_bench_<random> of KEYHOLD_BENCH_POSTGRES_URL / KEYHOLD_TEST_POSTGRES_URL (dropped at the end)
// and, for the three nodes, the Redis of KEYHOLD_BENCH_REDIS_URL / KEYHOLD_TEST_REDIS_URL:
//   1. the fill (bench/scale-fill.ts): a small API (`--small` keys) and a big one (`--keys`, default SCALE_N, else
//      10,000,000) imported by hash through POST /v1/migrations.createKeys on the real server (src/main.ts), every key
//      with an externalId of `--identities` (the import creates the identities and one audit record per key), and
//      `--roles` roles through permissions.createRole: nothing is written straight into the store. The big API's import
//      rate is printed per million keys (per tenth below 2,000,000) as it goes, with PostgreSQL's write-ahead log per
//      key and its checkpoints (bench/scale-store-state.ts); target: the last ≥ 0.8× the first. Then ANALYZE of the
//      schema's tables (this machine's PostgreSQL runs without autovacuum), their size on disk, and the store brought
//      to rest (a CHECKPOINT, then the kernel's write-back of the import waited for) before anything is measured;
//   2. one restarted server (bench/scale-single-node.ts): cold start to the first VALID verification of a big-API key
//      (≤ 2 s), RSS after start (≤ 250 MB); cache misses, `--sample` distinct keys of each API verified once: req/s
//      and server CPU per request of the big API against the small one (≥ 0.80×), p99 (≤ 10 ms); then random big-API
//      keys until the server has verified `--random` keys in all, and its RSS after them (≤ 350 MB);
//   3. reads on that server (bench/scale-reads.ts), p95 of `--repeat` each (≤ 100 ms): v1 and v2 listKeys (first page,
//      21st page by cursor, by externalId), keys.getKey, identities.listIdentities, permissions.listRoles,
//      audit.listLogs, the dashboard's API page, key page and audit page; `keyhold audit list` timed as a process;
//   4. three servers on that schema and Redis (bench/scale-cluster.ts) under mixed load for `--mixed-seconds`
//      (95% verifications of random keys, 5% management calls, spread over the nodes): req/s, p99, credits spent =
//      VALID answers, and revocation seen by every node (≤ 1 s).
// `--parts` leaves out parts 2–4 (part 1 always runs). It prints progress as it goes, then a markdown table; it writes
// bench/out/scale-<UTC timestamp>.json and bench/out/scale-latest.md. Every process it starts is stopped and the schema
// and the key files removed on every way out (success, failure, Ctrl-C). It exits non-zero only when the setup fails
// (a server does not start, a request answers an error, a verification of an imported key is not VALID).
//
// The small API's keys are imported first, so they are older than the big API's (ids sort by time): a list that walks
// keys by id across APIs skips them. Duration on this 2-core machine, extrapolated from runs at 200,000 keys
// (2026-11-29, another benchmark busy on one core): at the defaults and 10,000,000 keys about 50 minutes (the import
// at about 6,800 keys/s, 25 minutes, more if it slows as the indexes outgrow memory: its progress lines give the time
// left; cache-miss passes 5 minutes; random verifications at about 900/s, 15 minutes; the rest 5 minutes). A run that
// proves the setup in about a minute: SCALE_N=20000 npm run bench:scale -- --small 10000 --identities 5000
// --sample 5000 --random 20000 --mixed-seconds 10. Disk: about 1.9 KB per key (19 GB at 10,000,000; reported).

import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { machineLine } from './output.ts';
import { addCleanup, runStandalone, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { benchCluster } from './scale-cluster.ts';
import { fill, type Filled, type FillSettings } from './scale-fill.ts';
import { minutes } from './scale-import.ts';
import { benchReads } from './scale-reads.ts';
import { growthTable, writeRun, type Figure } from './scale-report.ts';
import { benchSingleNode } from './scale-single-node.ts';
import { dashboardCookie } from './scale-workspace.ts';
import { BENCH_PG_URL, scratchStore } from './scratch-store.ts';

const PARTS = ['single', 'reads', 'cluster'] as const;
/** Of the three-node load's requests, the management calls (the 5%). */
const MANAGEMENT_SHARE = 0.05;
const REDIS_URL = process.env.KEYHOLD_BENCH_REDIS_URL || process.env.KEYHOLD_TEST_REDIS_URL;

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    keys: { type: 'string', default: process.env.SCALE_N || '10000000' },
    small: { type: 'string', default: '100000' },
    identities: { type: 'string', default: '100000' },
    roles: { type: 'string', default: '1000' },
    sample: { type: 'string', default: '100000' },
    warmup: { type: 'string', default: '5000' },
    random: { type: 'string', default: '1000000' },
    connections: { type: 'string', default: '2' },
    'random-connections': { type: 'string', default: '8' },
    'cold-starts': { type: 'string', default: '3' },
    'import-concurrency': { type: 'string', default: '2' },
    'mixed-seconds': { type: 'string', default: '60' },
    'mixed-connections': { type: 'string', default: '24' },
    revocations: { type: 'string', default: '10' },
    'credit-keys': { type: 'string', default: '100' },
    credits: { type: 'string', default: '50' },
    'credit-share': { type: 'string', default: '0.05' },
    repeat: { type: 'string', default: '30' },
    parts: { type: 'string', default: PARTS.join(',') },
    growth: { type: 'boolean', default: false },
  },
});

function int(name: keyof typeof args): number {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${args[name]}"`);
  return n;
}

function share(name: keyof typeof args): number {
  const n = Number(args[name]);
  if (!(n >= 0 && n <= 1)) throw new Error(`--${name} must be a number from 0 to 1, got "${args[name]}"`);
  return n;
}

function parts(): Set<string> {
  const chosen = String(args.parts)
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of chosen)
    if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--parts: unknown "${p}" (known: ${PARTS.join(', ')})`);
  return new Set(chosen);
}

function commandLine(): string {
  const env = ['SCALE_N', 'KEYHOLD_BENCH_POSTGRES_URL', 'KEYHOLD_TEST_POSTGRES_URL', 'KEYHOLD_BENCH_REDIS_URL', 'KEYHOLD_TEST_REDIS_URL']
    .filter((n) => process.env[n])
    .map((n) => (n.endsWith('_URL') ? `${n}=…` : `${n}=${process.env[n]}`));
  return [...env, 'npm run bench:scale', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' ');
}

/** Parts 2 and 3 on one restarted server. */
async function singleNodeAndReads(
  url: string,
  filled: Filled,
  dir: string,
  chosen: Set<string>,
): Promise<{ figures: Figure[]; detail: object }> {
  const single = await benchSingleNode({
    databaseUrl: url,
    rootKey: filled.rootKey,
    big: filled.big,
    small: filled.small,
    dir,
    sample: int('sample'),
    warmup: int('warmup'),
    random: int('random'),
    connections: int('connections'),
    randomConnections: int('random-connections'),
    coldStarts: int('cold-starts'),
  });
  try {
    if (!chosen.has('reads')) return { figures: single.figures, detail: { single } };
    const { server } = single;
    const cookie = await dashboardCookie(server, url, filled.workspaceId);
    const reads = await benchReads({
      server,
      databaseUrl: url,
      cookie,
      workspaceId: filled.workspaceId,
      apiId: filled.big.apiId,
      keyIds: filled.keyIds,
      externalId: filled.externalId,
      repeat: int('repeat'),
    });
    return { figures: [...single.figures, ...reads.figures], detail: { single: { ...single, server: undefined }, reads } };
  } finally {
    await stopChild(single.server.child);
  }
}

/** Part 4 on three servers. */
async function cluster(url: string, filled: Filled, dir: string): Promise<{ figures: Figure[]; detail: object }> {
  const result = await benchCluster({
    databaseUrl: url,
    rootKey: filled.rootKey,
    redisUrl: REDIS_URL!,
    dir,
    apiId: filled.big.apiId,
    keys: filled.big.set,
    credit: filled.credit,
    revoke: filled.revoke,
    keyIds: filled.keyIds,
    connections: int('mixed-connections'),
    seconds: int('mixed-seconds'),
    creditShare: share('credit-share'),
    managementShare: MANAGEMENT_SHARE,
  });
  return { figures: result.figures, detail: { cluster: result } };
}

/** The parts chosen, after checking that what they need is there. */
function chosenParts(): Set<string> {
  if (!BENCH_PG_URL) throw new Error('npm run bench:scale needs KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL');
  const chosen = parts();
  if (chosen.has('cluster') && !REDIS_URL)
    throw new Error('the three-node part needs KEYHOLD_BENCH_REDIS_URL or KEYHOLD_TEST_REDIS_URL (or leave it out with --parts)');
  if (chosen.has('reads') && !chosen.has('single')) throw new Error('--parts: reads run on the server of "single"');
  return chosen;
}

const fillSettings = (): FillSettings => ({
  keys: int('keys'),
  small: int('small'),
  identities: int('identities'),
  roles: int('roles'),
  creditKeys: int('credit-keys'),
  credits: int('credits'),
  revocations: int('revocations'),
  concurrency: int('import-concurrency'),
});

async function main(): Promise<void> {
  if (args.growth) return void console.log(await growthTable(positionals));
  const started = Date.now();
  const chosen = chosenParts();
  const settings = fillSettings();
  const load = loadavg().map((l) => fmt(l, 2));
  console.log(`keyhold bench:scale: ${fmt(settings.keys, 0)} keys in the big API; ${machineLine()}; load average ${load.join(' ')}`);
  const store = scratchStore('postgres');
  addCleanup(store.cleanup);
  const dir = await mkdtemp(join(tmpdir(), 'keyhold-bench-scale-'));
  addCleanup(() => rm(dir, { recursive: true, force: true }));
  const filled = await fill(store.url, settings);
  const figures = [...filled.figures];
  const imports = filled.imports.map((i) => ({ ...i, ids: undefined }));
  const detail: Record<string, unknown> = { imports, tables: filled.tables, autovacuum: filled.autovacuum };
  for (const part of [
    chosen.has('single') && (() => singleNodeAndReads(store.url, filled, dir, chosen)),
    chosen.has('cluster') && (() => cluster(store.url, filled, dir)),
  ]) {
    if (!part) continue;
    const r = await part();
    figures.push(...r.figures);
    Object.assign(detail, r.detail);
  }
  const wallSeconds = (Date.now() - started) / 1000;
  console.log(`\n== done in ${minutes(wallSeconds)}`);
  const audit = settings.keys + settings.small + settings.creditKeys + settings.revocations;
  await writeRun({
    date: new Date().toISOString(),
    machine: machineLine(),
    command: commandLine(),
    wallSeconds,
    keys: settings.keys,
    settings: { ...args, parts: [...chosen] },
    figures,
    notes: [
      'The dashboard has no key search: its key page (by id) is measured instead.',
      `At the reads: ${fmt(settings.roles, 0)} roles, ${fmt(settings.identities, 0)} identities, ${fmt(audit, 0)} audit records (one per imported key).`,
    ],
    detail,
  });
}

runStandalone(main);
