// `keyhold backup` of a large SQLite database while the server serves and writes (not run by `npm run bench`:
// the import alone takes minutes).
//
//   node --disable-warning=ExperimentalWarning bench/backup-under-load.ts [--keys 1000000] [--connections 50]
//        [--idle-seconds 15] [--writers 3] [--paces 0,default] [--rounds 1]
//
// It starts the real server (src/main.ts) on a temporary SQLite file, imports `--keys` hashed keys (through
// migrations.createKeys, bench/keyset.ts), then keeps `--writers` loops writing: one creates keys (keys.createKey),
// the others spend credits (keys.verifyKey on keys with credits), and a separate process (bench/latency-probe.ts)
// verifies a cached key without credits over `--connections` connections, remembering when each request ended.
// Then, `--rounds` times, for each of `--paces` in turn (`default`: no --pace option), it lets `--idle-seconds`
// of that load pass and runs `keyhold backup --to <new file> --json [--pace P]` as its own process, as an
// operator would, so that paces are compared under the same load, close together. For each backup it reports
// the verification latency (p50, p99, max) over the idle window before it and over the copy (the last `ms` the
// command printed: its start, loading the CLI, copies nothing), their ratio, the backup's duration and size,
// the WAL before and after, and `PRAGMA integrity_check` of the copy (removed after the check); then what the
// writers did. It exits 1 when a request fails or a copy is not intact.
//
// 2026-11-29, `--keys 200000 --rounds 3 --idle-seconds 10 --paces 0,default,16` (load average 1–5.5): verification
// p99 during / before each backup, `--pace 0` 2.25×, 1.34×, 5.33×; default pace (32 MB/s) 0.86×, 1.01×, 1.13×;
// `--pace 16` 1.71×, 0.88×, 0.80× (docs/performance.md#backup-under-load).

import { execFile, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { DatabaseSync } from 'node:sqlite';
import { importKeys, randomKeys } from './keyset.ts';
import type { ProbeSpec, WindowResult } from './latency-probe.ts';
import { addCleanup, runStandalone, sleep, stopChild, track } from './processes.ts';
import { scratchStore } from './scratch-store.ts';
import { call, ROOT, startServer, type Server } from './server.ts';

const run = promisify(execFile);
const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    connections: { type: 'string', default: '50' },
    'idle-seconds': { type: 'string', default: '15' },
    writers: { type: 'string', default: '3' },
    paces: { type: 'string', default: '0,default' },
    rounds: { type: 'string', default: '1' },
  },
});
const KEYS = Number(args.keys);
const CONNECTIONS = Number(args.connections);
const IDLE_S = Number(args['idle-seconds']);
const WRITERS = Math.max(2, Number(args.writers));
const PACES = args.paces.split(',');
const ROUNDS = Math.max(1, Number(args.rounds));
const CREDITS = 1_000_000_000;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const sizeOf = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/** Writers: one loop creates keys, the others spend a credit per verification; counts what they did. */
function startWriters(server: Server, apiId: string, creditKeys: string[]) {
  const done = { created: 0, spent: 0, failed: 0 };
  let stopping = false;
  const post = (path: string, body: unknown, rootKey?: string) =>
    call(server, { method: 'POST', path, body: JSON.stringify(body), rootKey });
  const writeOnce = async (i: number) => {
    if (i === 0) {
      const r = await post('/v1/keys.createKey', { apiId, prefix: 'made', remaining: CREDITS }, server.rootKey);
      if (r.status === 200) done.created++;
      else done.failed++;
    } else {
      const r = await post('/v1/keys.verifyKey', { key: creditKeys[(done.spent + i) % creditKeys.length] });
      if (r.status === 200 && r.json?.code === 'VALID') done.spent++;
      else done.failed++;
    }
  };
  const loops = Array.from({ length: WRITERS }, async (_, i) => {
    while (!stopping) {
      try {
        await writeOnce(i);
      } catch {
        done.failed++; // no answer within call's 10 s: counted, the loop goes on
      }
    }
  });
  return {
    done,
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** One `keyhold backup --pace <pace>` as an operator would run it, timed; the copy checked, then removed. */
async function backupOnce(dbUrl: string, dbPath: string, pace: string, n: number) {
  const target = join(dbPath, '..', `copy-${n}.db`);
  const walBefore = sizeOf(`${dbPath}-wal`);
  const from = Date.now();
  const { stdout, stderr } = await run(
    process.execPath,
    [join(ROOT, 'bin', 'keyhold.js'), 'backup', '--to', target, '--json', ...(pace === 'default' ? [] : ['--pace', pace])],
    { cwd: ROOT, env: { ...process.env, DATABASE_URL: dbUrl } },
  );
  const to = Date.now();
  const walAfter = sizeOf(`${dbPath}-wal`);
  const printed = JSON.parse(stdout) as { path: string; bytes: number; ms: number };
  const copy = new DatabaseSync(target, { readOnly: true });
  const integrity = (copy.prepare('pragma integrity_check').all() as Array<{ integrity_check: string }>)
    .map((r) => r.integrity_check)
    .join(', ');
  const keys = (copy.prepare('select count(*) as n from keys').get() as { n: number }).n;
  copy.close();
  rmSync(target, { force: true });
  return { pace, from, to, printed, integrity, keys, walBefore, walAfter, stderr: stderr.trim() };
}
type Backup = Awaited<ReturnType<typeof backupOnce>>;

/** The database with `--keys` imported keys, 20 keys with credits for the writers and one cached key for the probe. */
async function prepare(server: Server) {
  const post = (path: string, body: unknown) => call(server, { method: 'POST', path, body: JSON.stringify(body), rootKey: server.rootKey });
  const api = await post('/v1/apis.createApi', { name: 'bench-backup' });
  const apiId: string = api.json.apiId;
  const started = performance.now();
  for (let done = 0; done < KEYS; ) {
    const n = Math.min(100_000, KEYS - done);
    await importKeys(server, apiId, randomKeys(n, 'bench'), 'bench');
    done += n;
    console.log(`  imported ${done.toLocaleString('en')} keys in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  const creditKeys: string[] = [];
  for (let i = 0; i < 20; i++)
    creditKeys.push((await post('/v1/keys.createKey', { apiId, prefix: 'credit', remaining: CREDITS })).json.key);
  const cached: string = (await post('/v1/keys.createKey', { apiId, prefix: 'probe' })).json.key;
  return { apiId, creditKeys, cached };
}

function report(backups: Backup[], results: WindowResult[]): boolean {
  const line = (name: string, r: WindowResult) =>
    `    ${name.padEnd(14)} ${String(r.requests).padStart(7)} verifications  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  max ${r.maxMs} ms  (non-2xx ${r.non2xx}, not VALID ${r.mismatches})`;
  let ok = true;
  backups.forEach((b, i) => {
    const [idle, during] = [results[2 * i], results[2 * i + 1]];
    ok &&= b.integrity === 'ok' && idle.non2xx + idle.mismatches + during.non2xx + during.mismatches === 0;
    console.log(
      [
        `  backup ${i + 1}, --pace ${b.pace}:`,
        line('idle before', idle),
        line('during backup', during),
        `    p99 during / idle   ${(during.p99Ms / idle.p99Ms).toFixed(2)}× (target ≤ 2×)`,
        `    backup              ${b.printed.ms} ms (command printed; ${b.to - b.from} ms wall with the CLI's start), ${mb(b.printed.bytes)} (${b.printed.bytes} bytes), ${b.keys.toLocaleString('en')} keys in the copy`,
        `    integrity_check     ${b.integrity}; WAL ${mb(b.walBefore)} before the backup, ${mb(b.walAfter)} at its end`,
      ].join('\n'),
    );
  });
  return ok;
}

async function main(): Promise<void> {
  const scratch = scratchStore('sqlite');
  addCleanup(scratch.cleanup);
  const dbPath = scratch.url.replace(/^sqlite:/, '');
  console.log(
    `backup under load: ${KEYS.toLocaleString('en')} keys, ${CONNECTIONS} verifying connections, ${WRITERS} writers, paces ${PACES.join(', ')} × ${ROUNDS}; load ${loadavg()[0].toFixed(2)}`,
  );
  const server = await startServer(scratch.url, {
    env: { KEYHOLD_WORKERS: '0', KEYHOLD_MASTER_KEYS: `bench:${randomBytes(32).toString('base64')}` },
  });
  const { apiId, creditKeys, cached } = await prepare(server);
  console.log(`database ${mb(sizeOf(dbPath))}, WAL ${mb(sizeOf(`${dbPath}-wal`))}`);

  const spec: ProbeSpec = {
    url: `${server.base}/v1/keys.verifyKey`,
    body: JSON.stringify({ key: cached }),
    connections: CONNECTIONS,
    expect: '"code":"VALID"',
  };
  const probe = track(fork(join(ROOT, 'bench', 'latency-probe.ts'), [JSON.stringify(spec)], { cwd: ROOT }));
  const writers = startWriters(server, apiId, creditKeys);
  await sleep(2_000); // the connections up and warm
  const windows: Array<[number, number]> = [];
  const backups: Backup[] = [];
  for (let round = 0; round < ROUNDS; round++)
    for (const pace of PACES) {
      const idleFrom = Date.now();
      await sleep(IDLE_S * 1000);
      const b = await backupOnce(scratch.url, dbPath, pace, backups.length);
      // The copy itself: the command prints how long it took, and ends right after it (its start, loading the
      // CLI, takes seconds on a loaded machine and copies nothing).
      windows.push([idleFrom, b.from], [b.to - b.printed.ms, b.to]);
      backups.push(b);
      await sleep(3_000); // the WAL checkpointed before the next idle window
    }
  const results = await new Promise<WindowResult[]>((resolve) => {
    probe.once('message', (m: { results: WindowResult[] }) => resolve(m.results));
    probe.send({ windows });
  });
  await writers.stop();
  await stopChild(server.child);

  console.log('result:');
  const ok = report(backups, results);
  console.log(
    [
      `  source              ${mb(sizeOf(dbPath))}; WAL ${mb(sizeOf(`${dbPath}-wal`))}`,
      `  writers             ${writers.done.created} keys created, ${writers.done.spent} credits spent, ${writers.done.failed} failed (over the whole run)`,
      `  stderr of the CLI   ${backups[0]?.stderr}`,
      `  load average        ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    ].join('\n'),
  );
  if (!ok || writers.done.failed > 0) process.exitCode = 1;
}

runStandalone(main);
