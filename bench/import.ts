// Import throughput of POST /v1/migrations.createKeys through real HTTP (not run in CI).
//
//   node --disable-warning=ExperimentalWarning bench/import.ts [--batches 20] [--size 1000] [--concurrency 1,4] [--dialects sqlite,postgres]
//
// For each dialect it spawns the server (`src/main.ts`) on a fresh store — a temporary SQLite file, or a new
// schema in KEYHOLD_BENCH_POSTGRES_URL / KEYHOLD_TEST_POSTGRES_URL (PostgreSQL is skipped when neither is set) —
// sends warm-up batches, then `--batches` batches of `--size` keys with `--concurrency` requests in flight,
// first hashed keys, then plaintext keys (hashed + vault-encrypted by the server), and prints keys/s.
// Request bodies are built before the clock starts, so the client costs little more than sending bytes.
// The load average is printed too: numbers from a machine that is busy with other work are not comparable.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { base58 } from '../src/domain/base58.ts';
import { BENCH_PG_URL, scratchStore } from './scratch-store.ts';
import { SERVER_ENV, SERVER_NODE_FLAGS } from './node-flags.ts';

const { values: args } = parseArgs({
  options: {
    batches: { type: 'string', default: '20' },
    size: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '1,4' },
    dialects: { type: 'string', default: 'sqlite,postgres' },
    warmup: { type: 'string', default: '3' },
  },
});
const BATCHES = Number(args.batches);
const SIZE = Number(args.size);
const WARMUP = Number(args.warmup);
const CONCURRENCY = args.concurrency!.split(',').map(Number);
const PG_URL = BENCH_PG_URL;
const ROOT = `kh_root_${base58(randomBytes(24), 33)}`;
const MAIN = new URL('../src/main.ts', import.meta.url).pathname;

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

interface Server {
  base: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

async function startServer(databaseUrl: string): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, MAIN], {
    env: {
      ...process.env,
      ...SERVER_ENV,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      KEYHOLD_WORKERS: '0',
      KEYHOLD_BOOTSTRAP_ROOT_KEY: ROOT,
      KEYHOLD_MASTER_KEYS: `bench:${randomBytes(32).toString('base64')}`,
      REDIS_URL: '',
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
  return {
    base,
    child,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

const post = async (base: string, path: string, body: string): Promise<{ status: number; json: any }> => {
  const r = await fetch(`${base}${path}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ROOT}` },
  });
  return { status: r.status, json: await r.json() };
};

const sha256b64 = (s: string) => createHash('sha256').update(s).digest('base64');
let serial = 0;
function batch(apiId: string, kind: 'hash' | 'plaintext'): string {
  const items = [];
  for (let i = 0; i < SIZE; i++) {
    const key = `bench_${base58(randomBytes(16), 22)}`;
    const n = serial++;
    items.push({
      apiId,
      prefix: 'bench',
      name: `imported ${n}`,
      externalId: `user_${n % 100}`,
      meta: { n },
      ...(kind === 'hash' ? { hash: { value: sha256b64(key), variant: 'sha256_base64' } } : { plaintext: key }),
    });
  }
  return JSON.stringify(items);
}

/** Sends `bodies` with `concurrency` requests in flight; returns keys/s and batch latencies. */
async function run(base: string, bodies: string[], concurrency: number): Promise<{ keysPerSec: number; p50: number; max: number }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const t = performance.now();
        const r = await post(base, '/v1/migrations.createKeys', body);
        if (r.status !== 200) throw new Error(`createKeys → ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    keysPerSec: (bodies.length * SIZE) / seconds,
    p50: latencies[Math.floor(latencies.length / 2)],
    max: latencies[latencies.length - 1],
  };
}

async function benchDialect(dialect: 'sqlite' | 'postgres'): Promise<void> {
  const { url, cleanup } = scratchStore(dialect);
  const server = await startServer(url);
  try {
    const api = await post(server.base, '/v1/apis.createApi', JSON.stringify({ name: 'bench-import' }));
    if (api.status !== 200) throw new Error(`createApi → ${api.status}`);
    const apiId: string = api.json.apiId;
    for (const kind of ['hash', 'plaintext'] as const) {
      await run(
        server.base,
        Array.from({ length: WARMUP }, () => batch(apiId, kind)),
        1,
      );
      for (const c of CONCURRENCY) {
        const bodies = Array.from({ length: BATCHES }, () => batch(apiId, kind));
        const r = await run(server.base, bodies, c);
        console.log(
          `${dialect.padEnd(8)} ${kind.padEnd(9)} concurrency ${String(c).padEnd(2)} ${BATCHES} × ${SIZE}: ${Math.round(r.keysPerSec).toLocaleString('en').padStart(7)} keys/s  (batch p50 ${r.p50.toFixed(0)} ms, max ${r.max.toFixed(0)} ms)  load ${loadavg()[0].toFixed(2)}`,
        );
      }
    }
  } finally {
    await server.stop();
    await cleanup();
  }
}

console.log(
  `keyhold import bench: ${cpus().length} CPUs, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} (other work on the machine skews these numbers)`,
);
for (const dialect of args.dialects!.split(',') as Array<'sqlite' | 'postgres'>) {
  if (dialect === 'postgres' && !PG_URL) {
    console.log('postgres: skipped (set KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL)');
    continue;
  }
  await benchDialect(dialect);
}
