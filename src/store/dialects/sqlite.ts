import { DatabaseSync } from 'node:sqlite';
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
import { isRead, retryWhileBusy, SqliteConnection } from './sqlite-connection.ts';
import { GroupCommitWriter } from './sqlite-group-commit.ts';
import { makeDirectory } from '../make-directory.ts';
import { Checkpoints } from './sqlite-checkpoints.ts';

/** How long a statement waits for another connection's write lock: as long as PostgreSQL's statement timeout. */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;
/** The size the write-ahead log file is cut back to when it starts over (64 MiB). */
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * A Kysely dialect over Node's built-in `node:sqlite`, in WAL mode so other connections can read while one
 * writes. Two connections per store: the writer, used by one transaction or autocommit write at a time, with
 * concurrent transactions committed together (GroupCommitWriter); and a reader (`query_only`) for reads
 * outside transactions, which so see only committed data and never wait for writes. (`:memory:` has no
 * second connection to the same database: there everything runs on the writer.) Transactions start with
 * `BEGIN IMMEDIATE`, so a transaction that will write takes the write lock up front instead of failing
 * mid-way when another connection holds it.
 *
 * Waiting for the lock is asynchronous: `DatabaseSync` runs on the event loop, so SQLite's own busy
 * timeout would block the whole process, and when the lock holder is another store of the same
 * process (it can only release the lock on a later tick) that wait ends in SQLITE_BUSY after the full
 * timeout. Instead SQLite's busy timeout is 0 and a statement that gets SQLITE_BUSY while it is not
 * inside a transaction (`BEGIN IMMEDIATE` itself, or an autocommit write) is retried with backoff on
 * timers until `busyTimeoutMs` has passed; then it fails with SQLITE_BUSY, which is answered as 503
 * `store/unavailable` (see isStoreUnavailable).
 */
export function sqliteDialect(path: string, busyTimeoutMs = SQLITE_BUSY_TIMEOUT_MS, companion = false): SqliteDialect {
  let driver: NodeSqliteDriver | undefined;
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => {
      driver = new NodeSqliteDriver(path, busyTimeoutMs, companion);
      return driver;
    },
    aside: (fn) => (driver ? driver.aside(fn) : fn()),
    // biome-ignore lint/suspicious/noExplicitAny: Kysely's introspector takes a database of any schema
    createIntrospector: (db: Kysely<any>) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}

/** The dialect, and a way to write beside the store's writer (GroupCommitWriter.aside) once it has been opened. */
export interface SqliteDialect extends Dialect {
  aside<T>(fn: () => Promise<T>): Promise<T>;
}

class NodeSqliteDriver implements Driver {
  #writer?: GroupCommitWriter;
  #reader?: SqliteConnection;
  #checkpoints?: Checkpoints;
  /** Leases not in use: Kysely keeps every connection object it was given, so they are reused, not made anew. */
  readonly #idle: Lease[] = [];
  readonly #path: string;
  readonly #busyTimeoutMs: number;
  /** A second writer of a file a store of this process has open (the analytics writer thread): no reader, no checkpoints of its own. */
  readonly #companion: boolean;

  constructor(path: string, busyTimeoutMs: number, companion: boolean) {
    this.#path = path;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#companion = companion;
  }

  aside<T>(fn: () => Promise<T>): Promise<T> {
    return this.#writer ? this.#writer.aside(fn) : fn();
  }

  async init(): Promise<void> {
    if (this.#path !== ':memory:') makeDirectory(dirname(this.#path));
    const db = new DatabaseSync(this.#path, { timeout: 0, enableForeignKeyConstraints: true });
    try {
      // Switching a new file to WAL takes an exclusive lock for a moment; wait for it like any other write.
      await retryWhileBusy(
        // auto_vacuum applies only to a file without tables yet (a new one): its free pages can then be given
        // back after the retention pass removes rows (store/free-pages.ts); on an older file it changes nothing.
        () =>
          db.exec('PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;'),
        this.#busyTimeoutMs,
      );
    } catch (err) {
      db.close();
      throw err;
    }
    this.#writer = new GroupCommitWriter(new SqliteConnection(db, this.#busyTimeoutMs), this.#busyTimeoutMs);
    if (this.#path === ':memory:') return;
    // Checkpoints run in a worker thread, not on the commit that fills the log (sqlite-checkpoints.ts): the
    // store's, which checkpoints the whole log, a companion's commits included.
    db.exec('PRAGMA wal_autocheckpoint = 0;');
    // A log the checkpointer has started over is cut back to this size (sqlite-checkpointer.ts bounds its growth),
    // whichever connection started it over.
    db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES};`);
    if (this.#companion) return;
    this.#checkpoints = new Checkpoints(this.#path, () => {
      if (db.isOpen) db.exec('PRAGMA wal_autocheckpoint = 1000;');
    });
    const reader = new DatabaseSync(this.#path, { timeout: 0 });
    reader.exec('PRAGMA query_only = ON;');
    this.#reader = new SqliteConnection(reader, this.#busyTimeoutMs);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.#idle.pop() ?? new Lease(this.#writer!, this.#reader);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as Lease).end();
    this.#idle.push(connection as Lease);
  }

  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    await connection.executeQuery(BEGIN);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(COMMIT);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as Lease).rollback();
  }

  async destroy(): Promise<void> {
    await this.#checkpoints?.stop();
    this.#checkpoints = undefined;
    this.#writer?.close();
    this.#writer?.connection.close();
    this.#reader?.close();
    this.#writer = undefined;
    this.#reader = undefined;
    this.#idle.length = 0;
  }
}

/**
 * Beginning and committing are statements given to the connection, as with any other driver, so whatever
 * wraps connections sees them as statements; the Lease runs them as its begin() and commit().
 */
const BEGIN = CompiledQuery.raw('begin immediate');
const COMMIT = CompiledQuery.raw('commit');
const NO_ROWS: QueryResult<never> = { rows: [] };

/**
 * What Kysely holds as a connection for one query, one transaction or one `db.connection()` scope. It takes
 * the writer's turn only when it writes (a transaction, or an autocommit statement that is not a read) and
 * keeps it until Kysely releases it; reads outside a transaction go to the reader at once.
 */
class Lease implements DatabaseConnection {
  readonly #writer: GroupCommitWriter;
  readonly #reader: SqliteConnection | undefined;
  #hasTurn = false;
  #inTransaction = false;

  constructor(writer: GroupCommitWriter, reader: SqliteConnection | undefined) {
    this.#writer = writer;
    this.#reader = reader;
  }

  async #takeTurn(): Promise<void> {
    if (this.#hasTurn) return;
    await this.#writer.takeTurn();
    this.#hasTurn = true;
  }

  async #begin(): Promise<void> {
    await this.#takeTurn();
    await this.#writer.begin();
    this.#inTransaction = true;
  }

  async #commit(): Promise<void> {
    this.#inTransaction = false;
    const committed = this.#writer.commit(); // throws, keeping the turn, when there is nothing left to commit
    this.#hasTurn = false; // given up by commit(): later transactions run while this one waits for its batch
    await committed;
  }

  rollback(): void {
    this.#inTransaction = false;
    // Without the turn the transaction has ended in a batch whose commit failed: it rolled back with it.
    if (this.#hasTurn) this.#writer.rollback();
  }

  end(): void {
    this.#inTransaction = false;
    if (!this.#hasTurn) return;
    this.#hasTurn = false;
    this.#writer.giveTurn();
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (query === BEGIN || query === COMMIT) {
      await (query === BEGIN ? this.#begin() : this.#commit());
      return NO_ROWS;
    }
    if (this.#inTransaction) {
      // SQLite rolls the whole transaction back by itself on some errors (SQLITE_FULL, SQLITE_IOERR, a trigger's
      // RAISE(ROLLBACK)…). A statement of that transaction issued after it (one already queued by Promise.all,
      // or after a caught error) would run in autocommit mode and commit on its own: refuse it instead.
      this.#writer.checkInTransaction();
      try {
        return await this.#writer.connection.run<R>(query.sql, query.parameters);
      } catch (err) {
        this.#writer.failedInTransaction(err);
        throw err;
      }
    }
    if (this.#reader && isRead(query.sql)) return this.#reader.run<R>(query.sql, query.parameters);
    await this.#takeTurn();
    this.#writer.commitBatch(); // an autocommit statement never rides along in a batch
    return this.#writer.connection.run<R>(query.sql, query.parameters);
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (this.#inTransaction) this.#writer.checkInTransaction();
    else if (this.#reader && isRead(query.sql)) return yield* this.#reader.iterate<R>(query.sql, query.parameters);
    else {
      await this.#takeTurn();
      this.#writer.commitBatch();
    }
    yield* this.#writer.connection.iterate<R>(query.sql, query.parameters);
  }
}
