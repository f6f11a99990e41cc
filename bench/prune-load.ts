// Retention under load (`BENCH_CASES=prune npm run bench`, SQLite): the server's background retention pass
// removes BENCH_PRUNE_ROWS (default 5,000,000) hourly analytics rows, 400 days old, while cached
// verifications run at BENCH_CONNECTIONS (50) from a separate process. Reports the verification p99 without a
// pass (the median of 5 s runs before the first pass, which starts a minute after the start, and after it)
// and during it (the median of 5 s runs while it goes on), how long the pass took, and the database file's
// size after the rows were written, after the pass, after the same rows were written a second time, and
// after the second pass: the file must not grow from one round to the next (the pages the first pass freed
// are used again, or were given back and taken anew).
// It asserts nothing; a missed target is printed.

import { statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { autocannon, call, ROOT, startServer, type AutocannonJson, type Load, type Server } from './server.ts';
import { addCleanup, residentMiB, sleep, stopChild } from './processes.ts';
import { scratchStore } from './scratch-store.ts';
import { fmt } from './report.ts';
import type { Row } from './table.ts';

export interface PruneLoadSettings {
  rows: number;
  connections: number;
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const KEYS_PER_HOUR = 100_000;
const WINDOW_S = 5;

/** `n` hourly rows, 400 days old and older, written straight into the file (as a year of traffic would have). */
function writeOldAnalytics(path: string, n: number): void {
  const db = new DatabaseSync(path, { timeout: 10_000 });
  const start = Date.now() - 400 * DAY_MS;
  const base = start - (start % HOUR_MS);
  const insert = db.prepare(
    `insert into key_verifications_hourly (key_id, hour, outcome, workspace_id, api_id, identity_id, count) values (?, ?, 'VALID', 'ws_bench', 'api_bench', null, 1)
     on conflict do nothing`,
  );
  for (let i = 0; i < n; ) {
    db.exec('begin immediate');
    for (const end = Math.min(n, i + 50_000); i < end; i++)
      insert.run(`key_${i % KEYS_PER_HOUR}`, base - Math.floor(i / KEYS_PER_HOUR) * HOUR_MS);
    db.exec('commit');
  }
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
}

function oldRows(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true, timeout: 10_000 });
  try {
    const row = db.prepare(`select count(*) as n from key_verifications_hourly where hour < ?`).get(Date.now() - 300 * DAY_MS) as {
      n: number;
    };
    return Number(row.n);
  } finally {
    db.close();
  }
}

const median = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : Number.NaN);
const mb = (bytes: number) => `${fmt(bytes / 1e6, 0)} MB`;
const fileSize = (path: string) => statSync(path).size;

async function lastPassAt(server: Server): Promise<number> {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  return Number(/^keyhold_prune_last_pass_timestamp_seconds (\S+)$/m.exec(text)?.[1] ?? 0);
}

/** Verification p99s of 10 s runs until a pass ends after `after` (unix s), the last one overlapping its end; that end. */
async function duringPass(server: Server, load: Load, connections: number, after: number): Promise<{ p99s: number[]; endedAt: number }> {
  const p99s: number[] = [];
  for (let i = 0; i < 720; i++) {
    const run = await autocannon(server, load, WINDOW_S, { connections, pipelining: 1 });
    p99s.push(run.latency.p99); // the last run overlaps the pass's end: it counts as during the pass
    const ended = await lastPassAt(server);
    if (ended > after) return { p99s, endedAt: ended };
  }
  throw new Error('the retention pass did not end within an hour');
}

export async function benchPruneUnderLoad(s: PruneLoadSettings): Promise<Row[]> {
  const store = scratchStore('sqlite');
  addCleanup(store.cleanup);
  const path = store.url.slice('sqlite:'.length);
  const migrate = spawnSync(process.execPath, [join(ROOT, 'bin', 'keyhold.js'), 'db', 'migrate'], {
    env: { ...process.env, DATABASE_URL: store.url },
  });
  if (migrate.status !== 0) throw new Error(`keyhold db migrate: ${migrate.stderr}`);
  const empty = fileSize(path);
  console.log(`\n== sqlite, retention under load: writing ${fmt(s.rows, 0)} analytics rows 400 days old …`);
  writeOldAnalytics(path, s.rows);
  const written = fileSize(path);
  // The first pass starts a minute after the start; then every minute.
  const server = await startServer(store.url, { env: { KEYHOLD_PRUNE_INTERVAL_MINUTES: '1' } });
  const started = Date.now();
  try {
    const api = await call(server, { method: 'POST', path: '/v1/apis.createApi', body: '{"name":"bench-prune"}', rootKey: server.rootKey });
    const key = await call(server, {
      method: 'POST',
      path: '/v1/keys.createKey',
      body: JSON.stringify({ apiId: api.json.apiId }),
      rootKey: server.rootKey,
    });
    const load: Load = { method: 'POST', path: '/v1/keys.verifyKey', body: JSON.stringify({ key: key.json.key }) };
    await autocannon(server, load, 2, { connections: s.connections, pipelining: 1 });
    // Runs without a pass before the first one (it starts a minute after the start) and after it, so that a
    // machine whose load drifts meanwhile weighs on both sides alike.
    const idle: AutocannonJson[] = [];
    while ((Date.now() - started) / 1000 < 60 - WINDOW_S)
      idle.push(await autocannon(server, load, WINDOW_S, { connections: s.connections, pipelining: 1 }));
    while ((Date.now() - started) / 1000 < 61) await sleep(200);
    const passStarted = Date.now();
    const first = await duringPass(server, load, s.connections, 0);
    const passSeconds = first.endedAt - passStarted / 1000;
    for (let i = 0; i < 6; i++) idle.push(await autocannon(server, load, WINDOW_S, { connections: s.connections, pipelining: 1 }));
    const idleP99 = median(idle.map((r) => r.latency.p99));
    const idleRate = median(idle.map((r) => r.requests.average));
    console.log(`   p99 of ${WINDOW_S} s runs without a pass (before and after it): ${idle.map((r) => r.latency.p99).join(', ')} ms`);
    const pruned = fileSize(path);
    const rss = await residentMiB(server.child.pid);
    const duringP99 = median(first.p99s);
    console.log(
      `   pass: ~${fmt(passSeconds, 0)} s; p99 of ${WINDOW_S} s runs during it: ${first.p99s.join(', ')} ms; file ${mb(written)} -> ${mb(pruned)}`,
    );

    console.log(`   writing the same ${fmt(s.rows, 0)} rows again beside the running server …`);
    writeOldAnalytics(path, s.rows);
    const rewritten = fileSize(path);
    // A pass may have started while the rows were written: wait for passes until none of them is left.
    const second = { p99s: [] as number[] };
    let after = await lastPassAt(server);
    while (oldRows(path) > 0) {
      const pass = await duringPass(server, load, s.connections, after);
      second.p99s.push(...pass.p99s);
      after = pass.endedAt;
    }
    const again = fileSize(path);
    console.log(`   second pass ended; file ${mb(rewritten)} -> ${mb(again)}`);
    const p99 = (n: number) => `${fmt(n, 0)} ms`;
    return [
      {
        case: `retention pass, ${fmt(s.rows, 0)} analytics rows, cached verifications at ${s.connections} connections: p99 ${p99(idleP99)} without, ${p99(duringP99)} during (medians of ${WINDOW_S} s runs: ${idle.length} without, ${first.p99s.length} during, worst ${p99(Math.max(...first.p99s))}); pass ~${fmt(passSeconds, 0)} s; RSS ${fmt(rss ?? 0, 0)} MiB`,
        store: 'sqlite',
        requestsPerSec: idleRate,
        target: '≤ 2× p99 without',
        met: duringP99 <= 2 * idleP99,
        detail: { idleP99s: idle.map((r) => r.latency.p99), duringP99s: first.p99s, secondPassP99s: second.p99s, passSeconds },
      },
      {
        case: `database file: empty ${mb(empty)}, ${mb(written)} with the rows, ${mb(pruned)} after the pass, ${mb(rewritten)} with the rows again, ${mb(again)} after the second pass`,
        store: 'sqlite',
        target: 'second round ≤ first',
        met: rewritten <= written * 1.02,
        detail: { empty, written, pruned, rewritten, again },
      },
    ];
  } catch (err) {
    throw new Error(`${(err as Error).message}; the server's last lines:\n${server.output.slice(-20).join('\n')}`);
  } finally {
    await stopChild(server.child);
  }
}
