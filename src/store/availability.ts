import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryCompiler, QueryResult, TransactionSettings } from 'kysely';
import { isStoreUnavailable } from './errors.ts';

/** Told the outcome of each call to a dependency: `up()` when it answered, `down(err)` when it was unavailable. */
export interface AvailabilityListener {
  up(): void;
  down(err: unknown): void;
}

/**
 * Listeners of a store's availability: every statement's outcome reaches each of them. A statement that
 * fails for another reason (a constraint violation, bad SQL) still counts as an answer: `up()`.
 */
export class AvailabilityListeners implements AvailabilityListener {
  readonly #listeners = new Set<AvailabilityListener>();

  /** Adds a listener; returns what removes it. */
  add(listener: AvailabilityListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  up(): void {
    for (const l of this.#listeners) l.up();
  }

  down(err: unknown): void {
    for (const l of this.#listeners) l.down(err);
  }

  /** Runs one call to the store and reports its outcome. */
  async observe<T>(call: () => Promise<T>): Promise<T> {
    if (this.#listeners.size === 0) return call();
    try {
      const result = await call();
      this.up();
      return result;
    } catch (err) {
      if (isStoreUnavailable(err)) this.down(err);
      else this.up();
      throw err;
    }
  }
}

/**
 * `dialect` with every call to the database (connecting, statements, transaction control) reported to
 * `listeners`: this is how a process learns that its store went away or came back, whatever made the call
 * (a request, a background loop, the job worker).
 */
export function observedDialect(dialect: Dialect, listeners: AvailabilityListeners): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new ObservedDriver(dialect.createDriver(), listeners),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  };
}

class ObservedConnection implements DatabaseConnection {
  readonly inner: DatabaseConnection;
  readonly #listeners: AvailabilityListeners;
  constructor(inner: DatabaseConnection, listeners: AvailabilityListeners) {
    this.inner = inner;
    this.#listeners = listeners;
  }
  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.#listeners.observe(() => this.inner.executeQuery<R>(query));
  }
  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

type Compile = QueryCompiler['compileQuery'];

class ObservedDriver implements Driver {
  readonly #inner: Driver;
  readonly #listeners: AvailabilityListeners;
  /** One wrapper per connection of the inner driver (pooled connections come back). */
  readonly #wrappers = new WeakMap<DatabaseConnection, ObservedConnection>();

  savepoint?: Driver['savepoint'];
  rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  releaseSavepoint?: Driver['releaseSavepoint'];

  constructor(driver: Driver, listeners: AvailabilityListeners) {
    this.#inner = driver;
    this.#listeners = listeners;
    // Savepoints exactly where the inner driver has them (Kysely refuses them otherwise).
    for (const name of ['savepoint', 'rollbackToSavepoint', 'releaseSavepoint'] as const) {
      const method = driver[name]?.bind(driver);
      if (method)
        this[name] = (c: DatabaseConnection, savepoint: string, compile: Compile) =>
          listeners.observe(() => method(inner(c), savepoint, compile));
    }
  }

  /** Reports only a failure: a successful init may not have asked the database anything (PostgreSQL's). */
  async init(): Promise<void> {
    try {
      await this.#inner.init();
    } catch (err) {
      if (isStoreUnavailable(err)) this.#listeners.down(err);
      throw err;
    }
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.#listeners.observe(() => this.#inner.acquireConnection());
    let wrapper = this.#wrappers.get(connection);
    if (!wrapper) {
      wrapper = new ObservedConnection(connection, this.#listeners);
      this.#wrappers.set(connection, wrapper);
    }
    return wrapper;
  }

  // Transaction control goes through the inner driver with the inner connection; its statements are observed here.
  beginTransaction(c: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.#listeners.observe(() => this.#inner.beginTransaction(inner(c), settings));
  }
  commitTransaction(c: DatabaseConnection): Promise<void> {
    return this.#listeners.observe(() => this.#inner.commitTransaction(inner(c)));
  }
  rollbackTransaction(c: DatabaseConnection): Promise<void> {
    return this.#listeners.observe(() => this.#inner.rollbackTransaction(inner(c)));
  }
  releaseConnection(c: DatabaseConnection): Promise<void> {
    return this.#inner.releaseConnection(inner(c));
  }
  destroy(): Promise<void> {
    return this.#inner.destroy();
  }
}

const inner = (c: DatabaseConnection): DatabaseConnection => (c instanceof ObservedConnection ? c.inner : c);
