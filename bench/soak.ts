// The soak: mixed traffic against a real server for a bounded time, to see that it stays up, answers no 5xx,
// keeps its latency and does not grow its memory. It prints numbers and asserts nothing (it is a bench).
//
//   node_modules/.bin/node bench/soak.ts                       # SQLite, 3 minutes
//   SOAK_STORE=postgres KEYHOLD_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test node_modules/.bin/node bench/soak.ts
//
// It starts src/main.ts on a scratch store (a temporary SQLite file, or a fresh PostgreSQL schema that is dropped
// afterwards), creates an API and keys over HTTP, then runs SOAK_CONCURRENCY request loops in this process (so the
// load generator shares the machine with the server: absolute req/s are modest; the point is what changes over
// time). Each loop draws an operation by weight (MIX below): verifications of a cached key, of keys not yet cached
// (fresh keys, updated keys, unknown keys), with credits, rate-limited; creates, updates, deletes, reads and
// lists of keys, credit changes. It reports per operation the count, req/s, p50/p99 and the answers (HTTP status,
// verification codes), the 5xx and connection-error counts, and the server's RSS at the start (after setup), every
// 30 s, and at the end. Results also go to bench/out/soak.json.
//
// Settings (environment):
//   SOAK_SECONDS      duration of the traffic (default 180)
//   SOAK_CONCURRENCY  concurrent request loops (default 16)
//   SOAK_STORE        sqlite | postgres (default sqlite; postgres needs KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL)
//   SOAK_REDIS_URL    redis://… to run the server with REDIS_URL (rate-limit counters and change notices in Redis)

import { mkdir, writeFile } from 'node:fs/promises';
import { randomBytes, randomInt } from 'node:crypto';
import { scratchStore } from './scratch-store.ts';
import { newRootKey, ServerProcess } from '../test/helpers/server-process.ts';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 180);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 16);
const STORE = (process.env.SOAK_STORE ?? 'sqlite') as 'sqlite' | 'postgres';
const REDIS_URL = process.env.SOAK_REDIS_URL;
const POOL = 500;
const MiB = 1024 * 1024;

interface Key {
  keyId: string;
  key: string;
}
interface Ctx {
  s: ServerProcess;
  root: string;
  apiId: string;
  hot: Key;
  credits: Key;
  limited: Key;
  /** Keys created, updated and deleted by the soak; `fresh` ones have not been verified since created or updated. */
  pool: Key[];
  fresh: Key[];
}
interface Outcome {
  status: number;
  /** The verification code, for keys.verifyKey. */
  code?: string;
}

const pick = <T>(xs: T[]): T => xs[randomInt(xs.length)];
const verify = async (c: Ctx, body: object): Promise<Outcome> => {
  const r = await c.s.post<any>('/v1/keys.verifyKey', body);
  return { status: r.status, code: r.json?.code };
};

/** The operations and their weights. */
const MIX: Array<{ name: string; weight: number; run: (c: Ctx) => Promise<Outcome> }> = [
  { name: 'verify cached', weight: 30, run: (c) => verify(c, { key: c.hot.key }) },
  { name: 'verify uncached', weight: 8, run: (c) => verify(c, { key: (c.fresh.pop() ?? pick(c.pool)).key }) },
  { name: 'verify unknown key', weight: 4, run: (c) => verify(c, { key: `soak_${randomBytes(12).toString('hex')}` }) },
  { name: 'verify with credits', weight: 14, run: (c) => verify(c, { key: c.credits.key, remaining: { cost: 1 } }) },
  { name: 'verify rate-limited', weight: 10, run: (c) => verify(c, { key: c.limited.key }) },
  {
    name: 'createKey',
    weight: 8,
    run: async (c) => {
      const r = await c.s.post<any>('/v1/keys.createKey', { apiId: c.apiId, name: 'soak', meta: { n: randomInt(1e6) } }, c.root);
      if (r.status === 200) {
        c.pool.push(r.json);
        c.fresh.push(r.json);
      }
      return { status: r.status };
    },
  },
  {
    name: 'updateKey',
    weight: 8,
    run: async (c) => {
      const k = pick(c.pool);
      const r = await c.s.post(
        '/v1/keys.updateKey',
        { keyId: k.keyId, meta: { n: randomInt(1e6) }, name: `soak-${randomInt(1e6)}` },
        c.root,
      );
      c.fresh.push(k);
      return { status: r.status };
    },
  },
  {
    name: 'deleteKey',
    weight: 5,
    run: async (c) => {
      if (c.pool.length < POOL / 2) return { status: 0 };
      const [k] = c.pool.splice(randomInt(c.pool.length), 1);
      return { status: (await c.s.post('/v1/keys.deleteKey', { keyId: k.keyId }, c.root)).status };
    },
  },
  {
    name: 'getKey',
    weight: 5,
    run: async (c) => ({ status: (await c.s.get('/v1/keys.getKey', { keyId: pick(c.pool).keyId }, c.root)).status }),
  },
  {
    name: 'listKeys',
    weight: 4,
    run: async (c) => ({ status: (await c.s.get('/v1/apis.listKeys', { apiId: c.apiId, limit: '50' }, c.root)).status }),
  },
  {
    name: 'updateRemaining',
    weight: 3,
    run: async (c) => ({
      status: (await c.s.post('/v1/keys.updateRemaining', { keyId: c.credits.keyId, op: 'increment', value: 1 }, c.root)).status,
    }),
  },
  {
    name: 'audit.listLogs',
    weight: 1,
    run: async (c) => ({ status: (await c.s.get('/v1/audit.listLogs', { limit: '20' }, c.root)).status }),
  },
];

async function setup(s: ServerProcess, root: string): Promise<Ctx> {
  const ok = async (path: string, body: object) => {
    const r = await s.post<any>(path, body, root);
    if (r.status !== 200) throw new Error(`setup: ${path} answered ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  const { apiId } = await ok('/v1/apis.createApi', { name: 'soak' });
  const hot = await ok('/v1/keys.createKey', { apiId, name: 'hot' });
  const credits = await ok('/v1/keys.createKey', { apiId, remaining: 1_000_000_000 });
  const limited = await ok('/v1/keys.createKey', { apiId, ratelimit: { type: 'consistent', limit: 100, duration: 1000 } });
  const pool: Key[] = [];
  for (let i = 0; i < POOL; i++) pool.push(await ok('/v1/keys.createKey', { apiId, name: `pool-${i}` }));
  return { s, root, apiId, hot, credits, limited, pool, fresh: [...pool] };
}

interface Stats {
  latencies: number[];
  answers: Record<string, number>;
  networkErrors: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;
}

/** An operation of MIX, drawn by weight. */
function draw(): (typeof MIX)[number] {
  let r = randomInt(MIX.reduce((n, m) => n + m.weight, 0));
  for (const m of MIX) {
    if (r < m.weight) return m;
    r -= m.weight;
  }
  throw new Error('unreachable');
}

async function soak(c: Ctx, until: number, stats: Map<string, Stats>): Promise<void> {
  while (Date.now() < until) {
    const op = draw();
    const st = stats.get(op.name)!;
    const t0 = performance.now();
    try {
      const out = await op.run(c);
      if (out.status === 0) continue; // skipped (e.g. no key left to delete)
      st.latencies.push(performance.now() - t0);
      const tag = out.code ? `${out.status} ${out.code}` : String(out.status);
      st.answers[tag] = (st.answers[tag] ?? 0) + 1;
    } catch {
      st.networkErrors++;
    }
  }
}

const mib = (b: number | undefined) => (b === undefined ? '?' : `${(b / MiB).toFixed(1)} MiB`);

async function main(): Promise<void> {
  const { url, cleanup } = scratchStore(STORE);
  const root = newRootKey();
  let server: ServerProcess | undefined;
  try {
    server = await ServerProcess.start(url, root, REDIS_URL ? { REDIS_URL } : {});
    const s = server;
    console.log(`soak: ${STORE}${REDIS_URL ? ' + Redis' : ''}, ${SECONDS} s, ${CONCURRENCY} loops; setting up ${POOL} keys…`);
    const ctx = await setup(s, root);
    const stats = new Map(MIX.map((m) => [m.name, { latencies: [], answers: {}, networkErrors: 0 } as Stats]));
    const rss: Array<{ at: number; bytes: number | undefined }> = [{ at: 0, bytes: s.rss() }];
    console.log(`server RSS at start: ${mib(rss[0].bytes)}`);
    const started = Date.now();
    const sampler = setInterval(() => {
      rss.push({ at: Math.round((Date.now() - started) / 1000), bytes: s.rss() });
      console.log(`  ${rss.at(-1)!.at} s: RSS ${mib(rss.at(-1)!.bytes)}`);
    }, 30_000);
    await Promise.all(Array.from({ length: CONCURRENCY }, () => soak(ctx, started + SECONDS * 1000, stats)));
    clearInterval(sampler);
    const elapsed = (Date.now() - started) / 1000;
    if (rss.at(-1)!.at !== Math.round(elapsed)) rss.push({ at: Math.round(elapsed), bytes: s.rss() });
    report(stats, elapsed, rss);
  } finally {
    await server?.stop();
    await cleanup();
  }
}

function report(stats: Map<string, Stats>, elapsed: number, rss: Array<{ at: number; bytes: number | undefined }>): void {
  const rows = [...stats].map(([name, st]) => {
    const sorted = [...st.latencies].sort((a, b) => a - b);
    return { name, count: sorted.length, rps: sorted.length / elapsed, p50: percentile(sorted, 50), p99: percentile(sorted, 99), ...st };
  });
  const all = rows.flatMap((r) => r.latencies).sort((a, b) => a - b);
  console.log(
    `\n${'operation'.padEnd(22)} ${'count'.padStart(8)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}  answers`,
  );
  for (const r of rows)
    console.log(
      `${r.name.padEnd(22)} ${String(r.count).padStart(8)} ${r.rps.toFixed(1).padStart(8)} ${r.p50.toFixed(2).padStart(8)} ${r.p99.toFixed(2).padStart(8)}  ${JSON.stringify(r.answers)}`,
    );
  console.log(
    `${'all'.padEnd(22)} ${String(all.length).padStart(8)} ${(all.length / elapsed).toFixed(1).padStart(8)} ${percentile(all, 50).toFixed(2).padStart(8)} ${percentile(all, 99).toFixed(2).padStart(8)}`,
  );
  const byStatus: Record<string, number> = {};
  for (const r of rows)
    for (const [tag, n] of Object.entries(r.answers)) byStatus[tag.split(' ')[0]] = (byStatus[tag.split(' ')[0]] ?? 0) + n;
  const fivexx = Object.entries(byStatus).reduce((n, [s, k]) => n + (Number(s) >= 500 ? k : 0), 0);
  const networkErrors = rows.reduce((n, r) => n + r.networkErrors, 0);
  console.log(`\nanswers by HTTP status: ${JSON.stringify(byStatus)}; 5xx: ${fivexx}; connection errors: ${networkErrors}`);
  const [first, last] = [rss[0].bytes, rss.at(-1)!.bytes];
  const growth = first !== undefined && last !== undefined ? ` (${last >= first ? '+' : ''}${((last - first) / MiB).toFixed(1)} MiB)` : '';
  console.log(
    `server RSS: start ${mib(first)}, end ${mib(last)}${growth}, samples ${rss.map((r) => `${r.at}s=${mib(r.bytes)}`).join(' ')}`,
  );
  const out = {
    store: STORE,
    redis: Boolean(REDIS_URL),
    seconds: elapsed,
    concurrency: CONCURRENCY,
    operations: rows.map(({ latencies: _, ...r }) => r),
    all: { count: all.length, rps: all.length / elapsed, p50: percentile(all, 50), p99: percentile(all, 99) },
    byStatus,
    fivexx,
    networkErrors,
    rss,
  };
  void mkdir(new URL('./out/', import.meta.url), { recursive: true }).then(() =>
    writeFile(new URL('./out/soak.json', import.meta.url), `${JSON.stringify(out, null, 2)}\n`),
  );
}

await main();
