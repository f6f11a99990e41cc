import { DatabaseSync, type StatementSync, type SQLInputValue } from 'node:sqlite';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/** How long a statement waits for another connection's write lock: as long as PostgreSQL's statement timeout. */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;

/**
 * A Kysely dialect over Node's built-in `node:sqlite`. One connection per store, used by one query
 * or transaction at a time (a mutex), in WAL mode so other connections can read while one writes.
 * Transactions start with `BEGIN IMMEDIATE`, so a transaction that will write takes the write lock
 * up front instead of failing mid-way when another connection holds it.
 *
 * Waiting for the lock is asynchronous: `DatabaseSync` runs on the event loop, so SQLite's own busy
 * timeout would block the whole process, and when the lock holder is another store of the same
 * process (it can only release the lock on a later tick) that wait ends in SQLITE_BUSY after the full
 * timeout. Instead SQLite's busy timeout is 0 and a statement that gets SQLITE_BUSY while it is not
 * inside a transaction (`BEGIN IMMEDIATE` itself, or an autocommit write) is retried with backoff on
 * timers until `busyTimeoutMs` has passed; then it fails with SQLITE_BUSY, which is answered as 503
 * `store/unavailable` (see isStoreUnavailable).
 */
export function sqliteDialect(path: string, busyTimeoutMs = SQLITE_BUSY_TIMEOUT_MS): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new NodeSqliteDriver(path, busyTimeoutMs),
    // biome-ignore lint/suspicious/noExplicitAny: Kysely's introspector takes a database of any schema
    createIntrospector: (db: Kysely<any>) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}

class NodeSqliteDriver implements Driver {
  #connection?: NodeSqliteConnection;
  #queue: Promise<void> = Promise.resolve();
  readonly #path: string;
  readonly #busyTimeoutMs: number;

  constructor(path: string, busyTimeoutMs: number) {
    this.#path = path;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  async init(): Promise<void> {
    if (this.#path !== ':memory:') mkdirSync(dirname(this.#path), { recursive: true });
    const db = new DatabaseSync(this.#path, { timeout: 0, enableForeignKeyConstraints: true });
    try {
      // Switching a new file to WAL takes an exclusive lock for a moment; wait for it like any other write.
      await retryWhileBusy(
        () => db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;'),
        this.#busyTimeoutMs,
      );
    } catch (err) {
      db.close();
      throw err;
    }
    this.#connection = new NodeSqliteConnection(db, this.#busyTimeoutMs);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    let release!: () => void;
    const previous = this.#queue;
    this.#queue = new Promise<void>((r) => {
      release = r;
    });
    await previous;
    this.#connection!.release = release;
    return this.#connection!;
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as NodeSqliteConnection).release();
  }

  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    (connection as NodeSqliteConnection).transactionOpen = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
    (connection as NodeSqliteConnection).transactionOpen = false;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as NodeSqliteConnection).transactionOpen = false;
    // SQLite rolls back by itself on some errors (SQLITE_FULL, SQLITE_IOERR…); a second rollback would
    // replace the original error with "no transaction is active".
    if ((connection as NodeSqliteConnection).inTransaction) await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {
    this.#connection?.close();
    this.#connection = undefined;
  }
}

/** SQLITE_BUSY and its extended codes (BUSY_RECOVERY, BUSY_SNAPSHOT, BUSY_TIMEOUT). */
const isBusy = (err: unknown): boolean => {
  const code = (err as { errcode?: unknown })?.errcode;
  return typeof code === 'number' && (code & 0xff) === 5;
};

/** Runs `fn` again, on timers with growing delays, while it fails with SQLITE_BUSY and `timeoutMs` has not passed. */
async function retryWhileBusy<T>(fn: () => T, timeoutMs: number, canRetry: () => boolean = () => true): Promise<T> {
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

class NodeSqliteConnection implements DatabaseConnection {
  release: () => void = () => {};
  readonly #db: DatabaseSync;
  /** Prepared statements by SQL text: Kysely compiles the same text for the same query shape. */
  readonly #statements = new Map<string, StatementSync>();

  readonly #busyTimeoutMs: number;

  constructor(db: DatabaseSync, busyTimeoutMs: number) {
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  /**
   * Whether Kysely's transaction is open on this connection (set by the driver), which SQLite may have ended
   * on its own (see executeQuery).
   */
  transactionOpen = false;

  /** Whether a transaction is open on this connection. */
  get inTransaction(): boolean {
    return this.#db.isTransaction;
  }

  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      if (this.#statements.size >= 1000) this.#statements.delete(this.#statements.keys().next().value!);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    // SQLite rolls the whole transaction back by itself on some errors (SQLITE_FULL, SQLITE_IOERR, a trigger's
    // RAISE(ROLLBACK)…). A statement of that transaction issued after it (one already queued by Promise.all,
    // or after a caught error) would run in autocommit mode and commit on its own: refuse it instead.
    if (this.transactionOpen && !this.#db.isTransaction) {
      throw new Error('SQLite rolled this transaction back after an error; its later statements are refused');
    }
    const statement = this.#prepare(query.sql);
    const params = query.parameters.map(toSqlite);
    // Inside a transaction we already hold the write lock (BEGIN IMMEDIATE), so SQLITE_BUSY there is
    // not a wait-and-retry case; outside one, the failed statement had no effect and can run again.
    const outsideTransaction = !this.#db.isTransaction;
    return retryWhileBusy(
      (): QueryResult<R> => {
        if (statement.columns().length > 0) return { rows: statement.all(...params).map(plainRow) as R[] };
        const { changes, lastInsertRowid } = statement.run(...params);
        return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
      },
      this.#busyTimeoutMs,
      () => outsideTransaction,
    );
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const statement = this.#prepare(query.sql);
    for (const row of statement.iterate(...query.parameters.map(toSqlite))) yield { rows: [plainRow(row) as R] };
  }

  close(): void {
    this.#statements.clear();
    this.#db.close();
  }
}
