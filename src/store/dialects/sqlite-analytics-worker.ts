import { parentPort, workerData } from 'node:worker_threads';
import { DatabaseSync } from 'node:sqlite';

/*
 * Runs analytics queries, one at a time, in a worker thread (sqlite-read-only.ts keeps a few) on its own read-only
 * connection, so a slow query never holds the event loop that answers verifications. Every row a table scan
 * reads calls keyhold_live() (one read in 1,024, compile-sqlite.ts), which fails the statement once the query's deadline has passed; the starting thread
 * also terminates this worker at the deadline. Registers what SQLite lacks for ClickHouse's semantics: quantile
 * (linear interpolation, as ClickHouse's exact reservoir) and banker's rounding (ClickHouse's round of floats).
 */
const { path } = workerData as { path: string };
/** The running query's deadline (epoch ms). */
let deadline = 0;

function quantile(values: number[], level: number): number | null {
  if (values.length === 0) return null;
  values.sort((a, b) => a - b);
  const index = Math.min(Math.max(level, 0), 1) * (values.length - 1);
  const lower = Math.floor(index);
  const upper = Math.min(lower + 1, values.length - 1);
  return values[lower] + (index - lower) * (values[upper] - values[lower]);
}

function bankersRound(value: number | null, digits: number): number | null {
  if (value === null) return null;
  const factor = 10 ** digits;
  const scaled = value * factor;
  const rounded = Math.abs(scaled % 1) === 0.5 ? 2 * Math.round(scaled / 2) : Math.round(scaled);
  return rounded / factor;
}

function open(): DatabaseSync {
  const db = new DatabaseSync(path, { readOnly: true, timeout: 1_000 });
  db.exec('PRAGMA query_only = 1');
  // ClickHouse's LIKE is case-sensitive; SQLite's is not unless told.
  db.exec('PRAGMA case_sensitive_like = 1');
  // Given the row's time (unused): a column makes SQLite call it on every read of a row (compile-sqlite.ts).
  db.function('keyhold_live', (_time) => {
    if (Date.now() > deadline) throw new Error('keyhold: deadline passed');
    return 1;
  });
  db.function('keyhold_round', { deterministic: true }, (v, d) => bankersRound(v === null ? null : Number(v), Number(d ?? 0)));
  // The accumulator SQLite carries is a number: the key of this group's values in `groups`.
  const groups = new Map<number, { values: number[]; level: number }>();
  let next = 0;
  db.aggregate('keyhold_quantile', {
    start: () => {
      next += 1;
      groups.set(next, { values: [], level: 0.5 });
      return next;
    },
    step: (key, value, level) => {
      const group = groups.get(Number(key))!;
      if (value !== null) group.values.push(Number(value));
      group.level = Number(level);
      return key;
    },
    result: (key) => {
      const group = groups.get(Number(key))!;
      groups.delete(Number(key));
      return quantile(group.values, group.level);
    },
  });
  return db;
}

let db: DatabaseSync | undefined;
parentPort!.on('message', ({ sql, params, deadline: until }: { sql: string; params: unknown[]; deadline: number }) => {
  deadline = until;
  try {
    db ??= open();
    const rows = db.prepare(sql).all(...(params as Array<string | number | null>));
    parentPort!.postMessage({ rows });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    parentPort!.postMessage({ error: message, timeout: message.includes('keyhold: deadline passed') });
  }
});
