import { DatabaseSync, type StatementSync, type SQLInputValue } from 'node:sqlite';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  CompiledQuery, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler,
  type DatabaseConnection, type Dialect, type Driver, type Kysely, type QueryResult, type TransactionSettings,
} from 'kysely';

/**
 * A Kysely dialect over Node's built-in `node:sqlite`. One connection per process, used by one query
 * or transaction at a time (a mutex), in WAL mode so other processes can read while one writes.
 * Transactions start with `BEGIN IMMEDIATE`, so a transaction that will write takes the write lock
 * up front and waits on the busy timeout instead of failing mid-way when another process holds it.
 */
export function sqliteDialect(path: string, busyTimeoutMs = 10_000): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new NodeSqliteDriver(path, busyTimeoutMs),
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
    const db = new DatabaseSync(this.#path, { timeout: this.#busyTimeoutMs, enableForeignKeyConstraints: true });
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;');
    this.#connection = new NodeSqliteConnection(db);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    let release!: () => void;
    const previous = this.#queue;
    this.#queue = new Promise<void>((r) => { release = r; });
    await previous;
    this.#connection!.release = release;
    return this.#connection!;
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as NodeSqliteConnection).release();
  }

  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {
    this.#connection?.close();
    this.#connection = undefined;
  }
}

const toSqlite = (v: unknown): SQLInputValue => {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'object' && !(v instanceof Uint8Array)) return JSON.stringify(v);
  return v as SQLInputValue;
};

class NodeSqliteConnection implements DatabaseConnection {
  release: () => void = () => {};
  readonly #db: DatabaseSync;
  /** Prepared statements by SQL text: Kysely compiles the same text for the same query shape. */
  readonly #statements = new Map<string, StatementSync>();

  constructor(db: DatabaseSync) { this.#db = db; }

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
    const statement = this.#prepare(query.sql);
    const params = query.parameters.map(toSqlite);
    if (statement.columns().length > 0) return { rows: statement.all(...params) as R[] };
    const { changes, lastInsertRowid } = statement.run(...params);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const statement = this.#prepare(query.sql);
    for (const row of statement.iterate(...query.parameters.map(toSqlite))) yield { rows: [row as R] };
  }

  close(): void {
    this.#statements.clear();
    this.#db.close();
  }
}
