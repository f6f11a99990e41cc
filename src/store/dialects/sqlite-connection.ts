import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { QueryResult } from 'kysely';

/** SQLITE_BUSY and its extended codes (BUSY_RECOVERY, BUSY_SNAPSHOT, BUSY_TIMEOUT). */
const isBusy = (err: unknown): boolean => {
  const code = (err as { errcode?: unknown })?.errcode;
  return typeof code === 'number' && (code & 0xff) === 5;
};

/** Runs `fn` again, on timers with growing delays, while it fails with SQLITE_BUSY and `timeoutMs` has not passed. */
export async function retryWhileBusy<T>(fn: () => T, timeoutMs: number, canRetry: () => boolean = () => true): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 1; ; delay = Math.min(delay * 2, 25)) {
    try {
      return fn();
    } catch (err) {
      if (!isBusy(err) || !canRetry() || Date.now() >= deadline) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, delay / 2 + Math.random() * delay));
  }
}

/**
 * A parameter as node:sqlite binds it. A number that is not finite is refused: every numeric column is an
 * INTEGER, which SQLite's type affinity would let hold Infinity as a REAL (and NaN as NULL) without an error,
 * so the transaction would commit a value nothing can answer with (the JSON serializer refuses it) — where
 * PostgreSQL refuses the statement and the transaction rolls back.
 */
const toSqlite = (v: unknown): SQLInputValue => {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number' && !Number.isFinite(v)) throw new RangeError(`SQLite does not store the number ${v}: columns hold integers`);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'object' && !(v instanceof Uint8Array)) return JSON.stringify(v);
  return v as SQLInputValue;
};

/**
 * node:sqlite returns rows with a null prototype; copy them into ordinary objects so rows look the same
 * as PostgreSQL's (deep equality, `hasOwnProperty`, spreading into typed objects).
 */
const plainRow = (row: object): object => ({ ...row });

interface Prepared {
  statement: StatementSync;
  /** Whether it answers rows (a select, a pragma, `returning`): asked once, `columns()` allocates. */
  returnsRows: boolean;
}

/**
 * Whether a statement only reads, so a connection that sees only committed data may run it. By its text:
 * Kysely compiles a read as `select …` or `with … select …`; anything naming a write goes to the writer.
 * The reader connection is `query_only`, so a misjudged write fails instead of writing.
 */
export const isRead = (sql: string): boolean => /^\s*(select|with)\b/i.test(sql) && !/\b(insert|update|delete|replace)\b/i.test(sql);

/**
 * Prepared statements kept per connection. A multi-row statement (a batch of analytics counters, an import
 * chunk) compiles to a program of hundreds of kilobytes outside the JavaScript heap, and V8 does not know it
 * is there: a statement dropped from the cache stays in memory until a garbage collection happens to find
 * it, and one text per row count kept them by the hundred (RSS 420 MB with 100,000 keys verified). So
 * statements up to 4 KiB of SQL are kept (500 of them), larger ones up to 64 KiB in a cache of their own (48:
 * the fixed shapes of the recorders' batches over 4 KiB, 2 for each of 18 tables, see fixedShapeChunks and
 * upsertRollups), and larger still are not kept.
 */
const SMALL = { maxSql: 4_096, maxStatements: 500 };
const LARGE = { maxSql: 65_536, maxStatements: 48 };

/** One node:sqlite connection and its prepared statements (by SQL text: Kysely compiles the same text for one query shape). */
export class SqliteConnection {
  readonly db: DatabaseSync;
  readonly #statements = new Map<string, Prepared>();
  readonly #large = new Map<string, Prepared>();
  readonly #busyTimeoutMs: number;

  constructor(db: DatabaseSync, busyTimeoutMs: number) {
    this.db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  /** Whether a transaction is open on this connection. */
  get inTransaction(): boolean {
    return this.db.isTransaction;
  }

  #prepare(sql: string): Prepared {
    const [cache, limits] = sql.length <= SMALL.maxSql ? [this.#statements, SMALL] : [this.#large, LARGE];
    let prepared = cache.get(sql);
    if (!prepared) {
      const statement = this.db.prepare(sql);
      // A pragma is stepped to its end like a query: some do their work a step at a time and name no column
      // (`incremental_vacuum(n)` frees one page per step).
      prepared = { statement, returnsRows: statement.columns().length > 0 || /^\s*pragma\b/i.test(sql) };
      if (sql.length > limits.maxSql) return prepared;
      if (cache.size >= limits.maxStatements) cache.delete(cache.keys().next().value!);
      cache.set(sql, prepared);
    }
    return prepared;
  }

  /** A statement without parameters or rows (transaction control). */
  exec(sql: string): void {
    this.#prepare(sql).statement.run();
  }

  /**
   * Runs one statement. Inside a transaction this connection already holds the write lock (BEGIN IMMEDIATE),
   * so SQLITE_BUSY there is not a wait-and-retry case; outside one, the failed statement had no effect and
   * can run again.
   */
  run<R>(sql: string, parameters: readonly unknown[]): Promise<QueryResult<R>> {
    const { statement, returnsRows } = this.#prepare(sql);
    const params = parameters.map(toSqlite);
    const outsideTransaction = !this.db.isTransaction;
    return retryWhileBusy(
      (): QueryResult<R> => {
        if (returnsRows) return { rows: statement.all(...params).map(plainRow) as R[] };
        const { changes, lastInsertRowid } = statement.run(...params);
        return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
      },
      this.#busyTimeoutMs,
      () => outsideTransaction,
    );
  }

  *iterate<R>(sql: string, parameters: readonly unknown[]): IterableIterator<QueryResult<R>> {
    const { statement } = this.#prepare(sql);
    for (const row of statement.iterate(...parameters.map(toSqlite))) yield { rows: [plainRow(row) as R] };
  }

  close(): void {
    this.#statements.clear();
    this.#large.clear();
    this.db.close();
  }
}
