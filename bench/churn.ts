// Memory under key churn: the server's RSS while far more distinct keys are verified than its key cache holds
// (BENCH_MILLION=1 of `npm run bench`, and on its own: `node bench/churn.ts`).
//
// A store of 1,000,000 imported keys (hashes, through POST /v1/migrations.createKeys) is made once in a
// directory and reused by later runs (`--dir`, or BENCH_CHURN_DIR): the import alone takes minutes on two
// shared cores. Then a fresh server, with the DEFAULT key cache (KEYHOLD_KEY_CACHE_SIZE unset: 100,000), verifies
// every key once per pass, `--passes` passes (default 3: 3,000,000 verifications of distinct keys), each pass
// from bench/list-load.ts in its own process (50 connections, every answer checked to be VALID), while the
// server's VmRSS is sampled every second. It prints RSS at the start and end of every pass and its peak, and
// the growth over the last pass (target ≤ 5%, peak ≤ 350 MB).
//
//   node bench/churn.ts [--dir DIR] [--keys 1000000] [--passes 3] [--server-flags '--trace-gc'] [--env K=V,…]
//
// `--server-flags` and `--env` are for experiments (e.g. --env MALLOC_ARENA_MAX=2). The store in DIR is never
// deleted here; without --dir a temporary one is made and removed.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VERIFY_PATH } from './cases.ts';
import { importKeys, randomKeys, writeKeys } from './keyset.ts';
import { addCleanup, processCpuSeconds, residentMiB, runStandalone, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { call, listLoad, startServer, type Server } from './server.ts';
import type { Row } from './table.ts';

const PREFIX = 'bk';
const VALID = '"code":"VALID"';

/** A prepared store: the SQLite file, the plaintexts one a line, and what a server on it needs. */
export interface ChurnStore {
  url: string;
  keysFile: string;
  keys: number;
  apiId: string;
  rootKey: string;
}

/** The store in `dir` if one with `keys` keys was prepared there, else a new one (the import takes minutes). */
export async function churnStore(dir: string, keys: number): Promise<ChurnStore> {
  await mkdir(dir, { recursive: true });
  const metaFile = join(dir, 'churn.json');
  const url = `sqlite:${join(dir, 'keyhold.db')}`;
  if (existsSync(metaFile)) {
    const meta = JSON.parse(await readFile(metaFile, 'utf8')) as ChurnStore;
    if (meta.keys === keys && meta.url === url) {
      console.log(`   reusing the store in ${dir} (${fmt(keys, 0)} keys)`);
      return meta;
    }
    throw new Error(`${dir} holds a store of ${meta.keys} keys, not ${keys}: choose another --dir`);
  }
  const server = await startServer(url, {});
  try {
    const api = await call(server, {
      method: 'POST',
      path: '/v1/apis.createApi',
      body: JSON.stringify({ name: 'bench-churn' }),
      rootKey: server.rootKey,
    });
    if (api.status !== 200) throw new Error(`apis.createApi: ${api.status} ${JSON.stringify(api.json)}`);
    const plaintexts = randomKeys(keys, PREFIX);
    console.log(`   importing ${fmt(keys, 0)} keys into ${dir} (migrations.createKeys, hashes) …`);
    console.log(`   ${fmt(await importKeys(server, api.json.apiId, plaintexts, PREFIX), 0)} keys/s`);
    const keysFile = await writeKeys(dir, 'keys.txt', plaintexts);
    const meta: ChurnStore = { url, keysFile, keys, apiId: api.json.apiId, rootKey: server.rootKey };
    await writeFile(metaFile, JSON.stringify(meta));
    return meta;
  } finally {
    await stopChild(server.child);
  }
}

export interface ChurnPass {
  startMiB: number;
  endMiB: number;
  peakMiB: number;
  requestsPerSec: number;
  /** The server's CPU time (user + system) over the pass, per request. */
  serverCpuUsPerRequest?: number;
}

/** One pass over every key, sampling the server's RSS every second. */
async function churnPass(server: Server, store: ChurnStore, n: number): Promise<ChurnPass> {
  const startMiB = (await residentMiB(server.child.pid)) ?? Number.NaN;
  const cpuBefore = await processCpuSeconds(server.child.pid);
  let peakMiB = startMiB;
  const sampler = setInterval(() => void residentMiB(server.child.pid).then((m) => (peakMiB = Math.max(peakMiB, m ?? 0))), 1_000);
  let r: Awaited<ReturnType<typeof listLoad>>;
  try {
    const spec = { method: 'POST' as const, connections: 50, apiId: store.apiId, amount: store.keys, keysFile: store.keysFile };
    r = await listLoad({ ...spec, url: server.base + VERIFY_PATH, expect: VALID }, Math.ceil(store.keys / 200) + 120);
  } finally {
    clearInterval(sampler);
  }
  const wrong = r.non2xx + r.errors + r.timeouts + r.mismatches;
  if (wrong) throw new Error(`churn pass ${n}: ${wrong} wrong answers of ${r.requests}`);
  const endMiB = (await residentMiB(server.child.pid)) ?? Number.NaN;
  const cpuAfter = await processCpuSeconds(server.child.pid);
  const cpu =
    cpuBefore && cpuAfter ? ((cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) * 1e6) / r.requests : undefined;
  peakMiB = Math.max(peakMiB, endMiB);
  console.log(
    `   pass ${n}: ${fmt(r.requestsPerSec, 0)} req/s${cpu === undefined ? '' : `, server CPU ${fmt(cpu, 0)} µs/req`}; RSS ${fmt(startMiB, 0)} MB at start, ${fmt(endMiB, 0)} MB at end, peak ${fmt(peakMiB, 0)} MB`,
  );
  return { startMiB, endMiB, peakMiB, requestsPerSec: r.requestsPerSec, serverCpuUsPerRequest: cpu };
}

export interface ChurnOptions {
  passes: number;
  serverFlags?: string[];
  env?: Record<string, string>;
}

/** A fresh server with the default key cache on the store, `passes` passes; the table row and the passes. */
export async function churn(store: ChurnStore, opts: ChurnOptions): Promise<{ row: Row; passes: ChurnPass[] }> {
  const server = await startServer(store.url, { rootKey: store.rootKey, nodeFlags: opts.serverFlags, env: opts.env });
  addCleanup(() => stopChild(server.child));
  const passes: ChurnPass[] = [];
  try {
    console.log(`   server started (default key cache): RSS ${fmt((await residentMiB(server.child.pid)) ?? 0, 0)} MB`);
    for (let n = 1; n <= opts.passes; n++) passes.push(await churnPass(server, store, n));
  } finally {
    await stopChild(server.child);
  }
  const last = passes.at(-1)!;
  const growth = last.endMiB / last.startMiB - 1;
  const peak = Math.max(...passes.map((p) => p.peakMiB));
  const perPass = passes.map((p) => fmt(p.endMiB, 0)).join(' → ');
  const row: Row = {
    case: `RSS, ${fmt(store.keys, 0)} keys verified ${opts.passes}× (default cache): ${perPass} MB at each pass's end, last pass ${growth >= 0 ? '+' : ''}${fmt(growth * 100, 1)}%, peak ${fmt(peak, 0)} MB`,
    store: 'sqlite',
    target: 'last pass ≤ +5%, ≤ 350 MB',
    met: growth <= 0.05 && peak <= 350,
  };
  console.log(`   ${row.case}`);
  return { row, passes };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dir: { type: 'string', default: process.env.BENCH_CHURN_DIR ?? '' },
      keys: { type: 'string', default: '1000000' },
      passes: { type: 'string', default: '3' },
      'server-flags': { type: 'string', default: '' },
      env: { type: 'string', default: '' },
    },
  });
  const keys = Number(values.keys);
  const passes = Number(values.passes);
  if (!Number.isInteger(keys) || keys < 1 || !Number.isInteger(passes) || passes < 1)
    throw new Error('--keys and --passes must be positive integers');
  let dir = values.dir!;
  if (!dir) {
    dir = await mkdtemp(join(tmpdir(), 'keyhold-churn-'));
    addCleanup(() => rm(dir, { recursive: true, force: true }));
  }
  const env = Object.fromEntries(
    values
      .env!.split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const serverFlags = values['server-flags']!.split(/\s+/).filter(Boolean);
  console.log(
    `keyhold churn: ${fmt(keys, 0)} keys, ${passes} passes${serverFlags.length ? `, server flags ${serverFlags.join(' ')}` : ''}`,
  );
  const store = await churnStore(dir, keys);
  await churn(store, { passes, serverFlags, env });
}

if (import.meta.main) {
  runStandalone(main);
}
