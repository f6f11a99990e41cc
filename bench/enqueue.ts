// Migration throughput of POST /v1/migrations.enqueueKeys through real HTTP (not run in CI).
//
//   node --disable-warning=ExperimentalWarning bench/enqueue.ts [--keys 100000] [--batch 100] [--concurrency 4]
//        [--modes server,separate,backlog] [--dialects sqlite,postgres] [--plaintext-every 0] [--baseline 20000]
//
// Target (issue): 100,000 keys enqueued in batches of 100 are all migrated ≤ 30 s after the last 202.
//
// For each dialect and mode it starts the real server (`src/main.ts`) on a fresh store — a temporary SQLite
// file, or a new schema in KEYHOLD_BENCH_POSTGRES_URL / KEYHOLD_TEST_POSTGRES_URL (PostgreSQL is skipped
// when neither is set) — creates an API over HTTP and a migration with the CLI (`keyhold migrations create`),
// sends `--keys` keys in requests of `--batch` with `--concurrency` requests in flight, and polls
// migrations.getMigration until nothing is pending. Modes: `server` — the server's own worker
// (KEYHOLD_WORKERS default); `separate` — KEYHOLD_WORKERS=0 and one `keyhold worker` process; `backlog` — as
// separate, but the worker starts only after the last 202 (a pure drain of the whole backlog: the worst case).
// It prints the enqueue rate, the time from the last 202 until every key is migrated (the target), and the
// import rate, next to a baseline from the same run: the synchronous migrations.createKeys rate on the same
// server with the same batches (`--baseline` keys; 0 skips it), so the numbers can be compared across machines.
// Request bodies are built before the clock starts. The load average is printed: numbers from a busy machine
// are not comparable.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { parseArgs, promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { base58 } from '../src/domain/base58.ts';
import { BENCH_PG_URL, scratchStore } from './scratch-store.ts';
import { SERVER_ENV, SERVER_NODE_FLAGS } from './node-flags.ts';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '4' },
    modes: { type: 'string', default: 'server,separate,backlog' },
    dialects: { type: 'string', default: 'sqlite,postgres' },
    'plaintext-every': { type: 'string', default: '0' },
    baseline: { type: 'string', default: '20000' },
  },
});
const KEYS = Number(args.keys);
const BATCH = Number(args.batch);
const CONCURRENCY = Number(args.concurrency);
const PLAINTEXT_EVERY = Number(args['plaintext-every']);
const BASELINE_KEYS = Number(args.baseline);
const TARGET_SECONDS = 30;
const PG_URL = BENCH_PG_URL;
const ROOT = `kh_root_${base58(randomBytes(24), 33)}`;
const MAIN = new URL('../src/main.ts', import.meta.url).pathname;
const CLI = new URL('../bin/keyhold.js', import.meta.url).pathname;
const MASTER_KEYS = `bench:${randomBytes(32).toString('base64')}`;

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

const stopChild = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

interface Server {
  base: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

async function startServer(databaseUrl: string, workers: string | undefined): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, MAIN], {
    env: {
      ...process.env,
      ...SERVER_ENV,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      KEYHOLD_BOOTSTRAP_ROOT_KEY: ROOT,
      KEYHOLD_MASTER_KEYS: MASTER_KEYS,
      REDIS_URL: '',
      ...(workers === undefined ? { KEYHOLD_WORKERS: '' } : { KEYHOLD_WORKERS: workers }),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/v1/liveness`)).ok) break;
    } catch {
      /* not up yet */
    }
    if (child.exitCode !== null || i > 300) throw new Error(`server did not start (exit ${child.exitCode})`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, child, stop: () => stopChild(child) };
}

const call = async (base: string, method: 'GET' | 'POST', path: string, body?: string): Promise<{ status: number; json: any }> => {
  const r = await fetch(`${base}${path}`, {
    method,
    body,
    headers: { authorization: `Bearer ${ROOT}`, ...(body ? { 'content-type': 'application/json' } : {}) },
  });
  return { status: r.status, json: await r.json() };
};

const sha256b64 = (s: string) => createHash('sha256').update(s).digest('base64');
let serial = 0;
function item(): Record<string, unknown> {
  const key = `bench_${base58(randomBytes(16), 22)}`;
  const n = serial++;
  const material =
    PLAINTEXT_EVERY > 0 && n % PLAINTEXT_EVERY === 0 ? { plaintext: key } : { hash: { value: sha256b64(key), variant: 'sha256_base64' } };
  return { prefix: 'bench', name: `imported ${n}`, ownerId: `user_${n % 100}`, meta: { n }, ...material };
}

/** Sends `bodies` to `path` with CONCURRENCY requests in flight; resolves with the time the last response arrived. */
async function send(base: string, path: string, bodies: string[], expect: number): Promise<number> {
  let next = 0;
  let last = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const r = await call(base, 'POST', path, body);
        if (r.status !== expect) throw new Error(`${path} → ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`);
        last = performance.now();
      }
    }),
  );
  return last;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en');

type Mode = 'server' | 'separate' | 'backlog';

async function benchOne(dialect: 'sqlite' | 'postgres', mode: Mode): Promise<void> {
  const { url, cleanup } = scratchStore(dialect);
  const server = await startServer(url, mode === 'server' ? undefined : '0');
  let worker: ChildProcess | undefined;
  try {
    const api = await call(server.base, 'POST', '/v1/apis.createApi', JSON.stringify({ name: 'bench-enqueue' }));
    if (api.status !== 200) throw new Error(`createApi → ${api.status}`);
    const apiId: string = api.json.apiId;
    const workspaceId: string = (await call(server.base, 'GET', `/v1/apis.getApi?apiId=${apiId}`)).json.workspaceId;
    const env = { ...process.env, DATABASE_URL: url };
    const created = await promisify(execFile)(
      process.execPath,
      [CLI, 'migrations', 'create', '--workspace', workspaceId, '--name', 'bench', '--json'],
      { env },
    );
    const { migrationId } = JSON.parse(created.stdout) as { migrationId: string };
    const startWorker = () =>
      spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, 'worker', '--concurrency', '4'], {
        env,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    if (mode === 'separate') worker = startWorker();

    // Baseline: the synchronous import of the same batches (its keys are in the store before the measured run).
    let baselineRate: number | undefined;
    if (BASELINE_KEYS > 0) {
      const bodies = Array.from({ length: Math.ceil(BASELINE_KEYS / BATCH) }, () =>
        JSON.stringify(Array.from({ length: BATCH }, () => ({ ...item(), apiId }))),
      );
      const t0 = performance.now();
      const t1 = await send(server.base, '/v1/migrations.createKeys', bodies, 200);
      baselineRate = (bodies.length * BATCH) / ((t1 - t0) / 1000);
    }

    const bodies = Array.from({ length: Math.ceil(KEYS / BATCH) }, () =>
      JSON.stringify({ migrationId, apiId, keys: Array.from({ length: BATCH }, item) }),
    );
    const total = bodies.length * BATCH;
    const t0 = performance.now();
    const lastAccepted = await send(server.base, '/v1/migrations.enqueueKeys', bodies, 202);
    if (mode === 'backlog') worker = startWorker();
    let status: any;
    let atLast: any;
    for (;;) {
      status = (await call(server.base, 'GET', `/v1/migrations.getMigration?migrationId=${migrationId}`)).json;
      atLast ??= status;
      if (status.counts.pending === 0 && status.counts.enqueued === total) break;
      if (performance.now() - lastAccepted > 600_000) throw new Error(`not done after 10 minutes: ${JSON.stringify(status.counts)}`);
      // Not more often: counting a migration of 100,000 items costs the server ~30 ms.
      await new Promise((r) => setTimeout(r, 100));
    }
    const done = performance.now();
    const drainSeconds = (done - lastAccepted) / 1000;
    const importRate = total / ((done - t0) / 1000);
    console.log(
      [
        `${dialect.padEnd(8)} ${mode.padEnd(8)} ${fmt(total)} keys in ${bodies.length} × ${BATCH}, concurrency ${CONCURRENCY}:`,
        `  enqueue ${((lastAccepted - t0) / 1000).toFixed(1)} s (${fmt(total / ((lastAccepted - t0) / 1000))} keys/s); at the last 202, ${fmt(atLast.counts.migrated + atLast.counts.failed)} were already done`,
        `  last 202 → all migrated: ${drainSeconds.toFixed(1)} s (target ≤ ${TARGET_SECONDS} s: ${drainSeconds <= TARGET_SECONDS ? 'met' : 'MISSED'}); ${status.status}, migrated ${fmt(status.counts.migrated)}, failed ${fmt(status.counts.failed)}`,
        `  first request → all migrated: ${((done - t0) / 1000).toFixed(1)} s = ${fmt(importRate)} keys/s` +
          (baselineRate
            ? `; migrations.createKeys baseline ${fmt(baselineRate)} keys/s (ratio ${(importRate / baselineRate).toFixed(2)})`
            : ''),
        `  load average ${loadavg()[0].toFixed(2)}`,
      ].join('\n'),
    );
  } finally {
    if (worker) await stopChild(worker);
    await server.stop();
    await cleanup();
  }
}

console.log(
  `keyhold enqueue bench: ${cpus().length} CPUs, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} (other work on the machine skews these numbers)`,
);
for (const dialect of args.dialects!.split(',') as Array<'sqlite' | 'postgres'>) {
  if (dialect === 'postgres' && !PG_URL) {
    console.log('postgres: skipped (set KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL)');
    continue;
  }
  for (const mode of args.modes!.split(',') as Mode[]) await benchOne(dialect, mode);
}
