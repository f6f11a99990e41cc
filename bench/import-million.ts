// Importing a million hashed keys through POST /v1/migrations.createKeys (not run in CI).
//
//   node --disable-warning=ExperimentalWarning bench/import-million.ts [--dialect sqlite|postgres] [--keys 1000000]
//        [--batch 1000] [--concurrency 2] [--server-flags=--max-old-space-size=256] [--limit-mb 400]
//
// Measures the requirement "importing 1,000,000 hashed keys keeps the server's RSS under 400 MB and
// verification of an already-imported key answering throughout". It spawns the real server (src/main.ts) on
// 127.0.0.1 on a fresh store — a temporary SQLite file (default), or with `--dialect postgres` a new schema
// kh_bench_<random> in KEYHOLD_BENCH_POSTGRES_URL / KEYHOLD_TEST_POSTGRES_URL, dropped afterwards — creates an
// API, imports one known key (the hash of a plaintext kept here) and checks that it verifies, then imports
// `--keys` hashed keys in batches of `--batch` with `--concurrency` requests in flight. Meanwhile a worker
// thread (so that building batches here does not delay it) samples the server's VmRSS from /proc/<pid>/status
// every 250 ms and verifies the known key via POST /v1/keys.verifyKey every 100 ms (one request at a time,
// 2 s timeout), recording latencies and every answer that is not 200 + VALID.
// It prints total time, keys/s, peak RSS (sampled, and the kernel's VmHWM), RSS at the end, the verification
// count, p50/p99/max verify latency and the failures; it exits 1 when the import fails or the run takes more
// than 15 minutes, and kills the server on every way out. `--server-flags` are extra Node flags for the server
// (e.g. --max-old-space-size=256) for memory experiments. Other work on the machine skews the numbers, so the
// load average is printed too.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { base58 } from '../src/domain/base58.ts';
import { SERVER_ENV, SERVER_NODE_FLAGS } from './node-flags.ts';
import { scratchStore } from './scratch-store.ts';

const HOST = '127.0.0.1';
const DEADLINE_MS = 15 * 60_000;
const RSS_EVERY_MS = 250;
const VERIFY_EVERY_MS = 100;
const VERIFY_TIMEOUT_MS = 2000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha256b64 = (s: string) => createHash('sha256').update(s).digest('base64');
const mb = (kb: number) => (kb / 1024).toFixed(1);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** VmRSS and VmHWM (peak) of a process, in kB; undefined once it is gone. */
function memoryOf(pid: number): { rssKb: number; hwmKb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The probe (worker thread): RSS samples and verifications of the known key until the main thread says stop.

interface ProbeInput {
  base: string;
  key: string;
  apiId: string;
  pid: number;
}
interface ProbeResult {
  rssKb: number[];
  latenciesMs: number[];
  verifications: number;
  maxGapMs: number;
  failures: { timeouts: number; status: Record<string, number>; codes: Record<string, number>; errors: Record<string, number> };
}

async function probe({ base, key, apiId, pid }: ProbeInput): Promise<void> {
  let stopping = false;
  parentPort!.once('message', () => {
    stopping = true;
  });
  const result: ProbeResult = {
    rssKb: [],
    latenciesMs: [],
    verifications: 0,
    maxGapMs: 0,
    failures: { timeouts: 0, status: {}, codes: {}, errors: {} },
  };
  const sample = () => {
    const m = memoryOf(pid);
    if (m) result.rssKb.push(m.rssKb);
  };
  sample();
  const sampler = setInterval(sample, RSS_EVERY_MS);
  const body = JSON.stringify({ key, apiId });
  const count = (rec: Record<string, number>, k: string) => {
    rec[k] = (rec[k] ?? 0) + 1;
  };
  let lastOk = performance.now();
  let next = performance.now();
  while (!stopping) {
    const t = performance.now();
    result.verifications++;
    try {
      const r = await fetch(`${base}/v1/keys.verifyKey`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS),
      });
      const json: any = await r.json();
      const done = performance.now();
      result.latenciesMs.push(done - t);
      if (r.status !== 200) count(result.failures.status, String(r.status));
      else if (json?.valid !== true || json?.code !== 'VALID') count(result.failures.codes, String(json?.code));
      else {
        result.maxGapMs = Math.max(result.maxGapMs, done - lastOk);
        lastOk = done;
      }
    } catch (err: any) {
      if (err?.name === 'TimeoutError') result.failures.timeouts++;
      else count(result.failures.errors, String(err?.cause?.code ?? err?.message ?? err));
    }
    next += VERIFY_EVERY_MS;
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    else next = performance.now();
  }
  result.maxGapMs = Math.max(result.maxGapMs, performance.now() - lastOk);
  clearInterval(sampler);
  sample();
  parentPort!.postMessage(result);
}

// ---------------------------------------------------------------------------------------------------------
// The import (main thread).

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      dialect: { type: 'string', default: 'sqlite' },
      keys: { type: 'string', default: '1000000' },
      batch: { type: 'string', default: '1000' },
      concurrency: { type: 'string', default: '2' },
      'server-flags': { type: 'string', default: '' },
      'limit-mb': { type: 'string', default: '400' },
    },
  });
  const dialect = args.dialect!;
  const KEYS = Number(args.keys);
  const BATCH = Number(args.batch);
  const CONCURRENCY = Number(args.concurrency);
  const LIMIT_MB = Number(args['limit-mb']);
  const serverFlags = args['server-flags']!.split(/\s+/).filter(Boolean);
  if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error(`--dialect must be sqlite or postgres, not ${dialect}`);
  if (![KEYS, BATCH, CONCURRENCY].every((n) => Number.isInteger(n) && n > 0) || BATCH > 1000)
    throw new Error('--keys, --batch (≤ 1000) and --concurrency must be positive integers');
  const PG_URL = process.env.KEYHOLD_BENCH_POSTGRES_URL || process.env.KEYHOLD_TEST_POSTGRES_URL;
  if (dialect === 'postgres' && !PG_URL)
    throw new Error('--dialect postgres needs KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL');

  // Everything that must be undone, whichever way this ends.
  let child: ChildProcess | undefined;
  let probeWorker: Worker | undefined;
  let cleanup = async () => {};
  const killServer = () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', killServer);
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      killServer();
      void cleanup().finally(() => process.exit(130));
    });
  const deadline = setTimeout(() => {
    console.error(`aborted: not done after ${DEADLINE_MS / 60_000} minutes`);
    killServer();
    void probeWorker?.terminate();
    void Promise.race([cleanup(), sleep(10_000)]).finally(() => process.exit(1));
  }, DEADLINE_MS);
  deadline.unref();

  const scratch = scratchStore(dialect);
  const url = scratch.url;
  cleanup = scratch.cleanup;

  const root = `kh_root_${base58(randomBytes(24), 33)}`;
  const port = await new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, HOST, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
  const base = `http://${HOST}:${port}`;
  const post = async (path: string, body: string): Promise<{ status: number; json: any }> => {
    const r = await fetch(`${base}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${root}` },
    });
    return { status: r.status, json: await r.json() };
  };

  try {
    console.log(
      `keyhold import-million: ${dialect}, ${KEYS.toLocaleString('en')} hashed keys in batches of ${BATCH}, ${CONCURRENCY} in flight; ` +
        `${cpus().length} CPUs, load average ${load()}${serverFlags.length ? `; server flags ${serverFlags.join(' ')}` : ''}`,
    );
    child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...serverFlags, new URL('../src/main.ts', import.meta.url).pathname], {
      env: {
        ...process.env,
        ...SERVER_ENV,
        HOST,
        PORT: String(port),
        DATABASE_URL: url,
        LOG_LEVEL: 'warn',
        KEYHOLD_WORKERS: '0',
        KEYHOLD_BOOTSTRAP_ROOT_KEY: root,
        KEYHOLD_MASTER_KEYS: `bench:${randomBytes(32).toString('base64')}`,
        REDIS_URL: '',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/v1/liveness`)).ok) break;
      } catch {
        /* not up yet */
      }
      if (child.exitCode !== null || i > 300) throw new Error(`server did not start (exit ${child.exitCode})`);
      await sleep(100);
    }
    const pid = child.pid!;
    const died = new Promise<never>((_, reject) =>
      child!.once('exit', (code, signal) => reject(new Error(`server exited (${code ?? signal}) during the run`))),
    );
    died.catch(() => {});

    const api = await post('/v1/apis.createApi', JSON.stringify({ name: 'bench-import-million' }));
    if (api.status !== 200) throw new Error(`createApi → ${api.status}: ${JSON.stringify(api.json)}`);
    const apiId: string = api.json.apiId;
    const knownKey = `bench_${base58(randomBytes(16), 22)}`;
    const known = await post(
      '/v1/migrations.createKeys',
      JSON.stringify([{ apiId, prefix: 'bench', name: 'known', hash: { value: sha256b64(knownKey), variant: 'sha256_base64' } }]),
    );
    if (known.status !== 200) throw new Error(`importing the known key → ${known.status}: ${JSON.stringify(known.json)}`);
    const check = await post('/v1/keys.verifyKey', JSON.stringify({ key: knownKey, apiId }));
    if (check.json?.code !== 'VALID') throw new Error(`the known key does not verify: ${check.status} ${JSON.stringify(check.json)}`);
    const before = memoryOf(pid)!;
    console.log(`server pid ${pid} on ${base}; RSS before the import ${mb(before.rssKb)} MB`);

    probeWorker = new Worker(new URL(import.meta.url), { workerData: { base, key: knownKey, apiId, pid } satisfies ProbeInput });
    const probeResult = new Promise<ProbeResult>((resolve, reject) => {
      probeWorker!.once('message', resolve);
      probeWorker!.once('error', reject);
    });
    await sleep(300); // a few verifications before the first batch

    // Hashes of distinct made-up plaintexts; bodies are built per batch, so the client's memory stays flat.
    const run = randomBytes(6).toString('hex');
    let sent = 0;
    let imported = 0;
    let nextReport = KEYS / 10;
    const t0 = performance.now();
    const batchMs: number[] = [];
    const sender = async () => {
      while (sent < KEYS) {
        const from = sent;
        const size = Math.min(BATCH, KEYS - from);
        sent += size;
        const items = [];
        for (let n = from; n < from + size; n++) {
          items.push({
            apiId,
            prefix: 'bench',
            name: `imported ${n}`,
            externalId: `user_${n % 100}`,
            meta: { n },
            hash: { value: sha256b64(`bench_${run}_${n}`), variant: 'sha256_base64' },
          });
        }
        const t = performance.now();
        const r = await post('/v1/migrations.createKeys', JSON.stringify(items));
        if (r.status !== 200)
          throw new Error(`createKeys (keys ${from}..${from + size - 1}) → ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`);
        batchMs.push(performance.now() - t);
        imported += size;
        if (imported >= nextReport) {
          nextReport += KEYS / 10;
          const s = (performance.now() - t0) / 1000;
          console.log(
            `  ${imported.toLocaleString('en').padStart(9)} keys  ${s.toFixed(1).padStart(6)} s  ${Math.round(imported / s)
              .toLocaleString('en')
              .padStart(6)} keys/s  RSS ${mb(memoryOf(pid)?.rssKb ?? NaN)} MB  load ${load()}`,
          );
        }
      }
    };
    await Promise.race([Promise.all(Array.from({ length: CONCURRENCY }, sender)), died]);
    const seconds = (performance.now() - t0) / 1000;
    const end = memoryOf(pid)!;
    probeWorker.postMessage('stop');
    const p = await Promise.race([probeResult, died]);
    await probeWorker.terminate();

    const sorted = [...p.latenciesMs].sort((a, b) => a - b);
    const pct = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(1) : 'n/a');
    const peakSampledKb = Math.max(...p.rssKb);
    const f = p.failures;
    const failed = f.timeouts + [f.status, f.codes, f.errors].reduce((sum, rec) => sum + Object.values(rec).reduce((a, b) => a + b, 0), 0);
    batchMs.sort((a, b) => a - b);
    console.log(
      [
        `result (${dialect}):`,
        `  total time           ${seconds.toFixed(1)} s for ${imported.toLocaleString('en')} keys`,
        `  throughput           ${Math.round(imported / seconds).toLocaleString('en')} keys/s  (batch p50 ${batchMs[Math.floor(batchMs.length / 2)].toFixed(0)} ms, max ${batchMs[batchMs.length - 1].toFixed(0)} ms)`,
        `  peak RSS             ${mb(peakSampledKb)} MB sampled every ${RSS_EVERY_MS} ms (${p.rssKb.length} samples); kernel VmHWM ${mb(end.hwmKb)} MB  → ${Math.max(peakSampledKb, end.hwmKb) / 1024 < LIMIT_MB ? 'under' : 'OVER'} ${LIMIT_MB} MB`,
        `  RSS                  ${mb(before.rssKb)} MB before, ${mb(end.rssKb)} MB at the end`,
        `  verifications        ${p.verifications} during the import (every ${VERIFY_EVERY_MS} ms, ${VERIFY_TIMEOUT_MS} ms timeout); longest time without a VALID answer ${p.maxGapMs.toFixed(0)} ms`,
        `  verify latency       p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${sorted.length ? sorted[sorted.length - 1].toFixed(1) : 'n/a'} ms`,
        `  verify failures      ${failed}${failed ? ` (timeouts ${f.timeouts}, status ${JSON.stringify(f.status)}, codes ${JSON.stringify(f.codes)}, errors ${JSON.stringify(f.errors)})` : ''}`,
        `  load average         ${load()}`,
      ].join('\n'),
    );
    if (failed) process.exitCode = 1;
  } finally {
    void probeWorker?.terminate();
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(5000)]);
      killServer();
    }
    await cleanup();
    clearTimeout(deadline);
  }
}

if (isMainThread) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  await probe(workerData as ProbeInput);
}
