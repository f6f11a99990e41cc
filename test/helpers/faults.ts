import { DEFAULT_WEBHOOK_SETTINGS } from '../../src/config/webhooks.ts';
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  Kysely,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { openStore, type Store } from '../../src/store/store.ts';
import type { Database } from '../../src/store/schema.ts';
import { sqliteDialect } from '../../src/store/dialects/sqlite.ts';
import { postgresDialect } from '../../src/store/dialects/postgres.ts';
import { world, type World } from './harness.ts';

/**
 * Failure injection for statements, at the driver: a store opened by `faultyStore` sends every statement
 * through `StatementFaults.before`, which counts the statements of an armed run and makes its N-th throw
 * before it reaches the database (as a driver would: a plain Error, not an AppError).
 *
 * Counted: every statement a connection is given, in the async context of the armed run — the transaction's
 * `begin` and `commit` included, raw statements (bulk inserts) included; `rollback` is never counted or
 * failed (it is how a failure is recovered from). Statements of anything else sharing the store meanwhile
 * (the change-feed poller, the analytics flush: their timers were started outside the run) are neither
 * counted nor failed, so the N-th statement is the request's own, deterministically.
 */
export class InjectedFailure extends Error {
  constructor(n: number, sql: string) {
    super(`injected failure at statement ${n}: ${sql.slice(0, 200)}`);
    this.name = 'InjectedFailure';
  }
}

interface Run {
  failAt: number;
  statements: string[];
  tripped: boolean;
  open: boolean;
}

export interface ArmedRun<T> {
  value: T;
  /** The SQL of every statement the run executed (or tried to: the failed one is the last). */
  statements: string[];
  /** Whether the failure was injected (false: the run executed fewer than `failAt` statements). */
  tripped: boolean;
}

export class StatementFaults {
  readonly #runs = new AsyncLocalStorage<Run>();

  /**
   * Runs `fn`, counting the statements it executes; with `failAt` ≥ 1 the failAt-th throws an InjectedFailure
   * instead of running. Statements started after `fn` settled (a timer it armed) are not counted.
   */
  async run<T>(fn: () => Promise<T>, failAt = 0): Promise<ArmedRun<T>> {
    const run: Run = { failAt, statements: [], tripped: false, open: true };
    try {
      const value = await this.#runs.run(run, fn);
      return { value, statements: run.statements, tripped: run.tripped };
    } finally {
      run.open = false;
    }
  }

  /** Called by a faulty connection before it executes `sql`. */
  before(sql: string): void {
    const run = this.#runs.getStore();
    if (!run?.open || /^\s*rollback\b/i.test(sql)) return;
    run.statements.push(sql);
    if (run.statements.length === run.failAt) {
      run.tripped = true;
      throw new InjectedFailure(run.failAt, sql);
    }
  }

  /** `inner` with its connections sending every statement through `before`. */
  dialect(inner: Dialect): Dialect {
    return {
      createAdapter: () => inner.createAdapter(),
      createDriver: () => new FaultyDriver(inner.createDriver(), this),
      createIntrospector: (db) => inner.createIntrospector(db),
      createQueryCompiler: () => inner.createQueryCompiler(),
    };
  }
}

/**
 * The dialect's driver, handing out its connections behind a proxy that calls `faults.before` first. The
 * driver's own transaction statements go through the proxy too (both dialects begin and commit with
 * `connection.executeQuery`); every other member is the real connection's, so the driver sees its own state.
 */
class FaultyDriver implements Driver {
  readonly #inner: Driver;
  readonly #faults: StatementFaults;
  readonly #proxies = new WeakMap<DatabaseConnection, DatabaseConnection>();
  readonly #real = new WeakMap<DatabaseConnection, DatabaseConnection>();

  constructor(inner: Driver, faults: StatementFaults) {
    this.#inner = inner;
    this.#faults = faults;
  }

  init(): Promise<void> {
    return this.#inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.#inner.acquireConnection();
    let proxy = this.#proxies.get(connection);
    if (!proxy) {
      proxy = faultyConnection(connection, this.#faults);
      this.#proxies.set(connection, proxy);
      this.#real.set(proxy, connection);
    }
    return proxy;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.#inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.rollbackTransaction(connection);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.#inner.releaseConnection(this.#real.get(connection) ?? connection);
  }

  destroy(): Promise<void> {
    return this.#inner.destroy();
  }
}

function faultyConnection(connection: DatabaseConnection, faults: StatementFaults): DatabaseConnection {
  const executeQuery = async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
    faults.before(query.sql);
    return connection.executeQuery<R>(query);
  };
  const streamQuery = <R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> => {
    faults.before(query.sql);
    return connection.streamQuery<R>(query, chunkSize);
  };
  return new Proxy(connection, {
    get(target, prop) {
      if (prop === 'executeQuery') return executeQuery;
      if (prop === 'streamQuery') return streamQuery;
      // The real connection as `this`: drivers keep private state (#fields) on it.
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
    set: (target, prop, value) => Reflect.set(target, prop, value, target),
  });
}

/** The dialect `openStore` would choose for `url` (the same URL forms). */
function dialectFor(url: string): Dialect {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get('schema') ?? 'public';
    parsed.searchParams.delete('schema');
    return postgresDialect(parsed.toString(), schema).dialect;
  }
  return sqliteDialect(url.replace(/^sqlite:/, ''));
}

/**
 * The store of `url` with every statement of its `db` going through `faults`. The rest (migrations, ping, …)
 * is a plain store of the same URL, whose statements are never counted; `close` closes both.
 */
export function faultyStore(url: string, faults: StatementFaults): Store {
  const plain = openStore(url);
  const db = new Kysely<Database>({ dialect: faults.dialect(dialectFor(url)) });
  return {
    ...plain,
    db,
    async close() {
      await db.destroy();
      await plain.close();
    },
  };
}

/** A test world (harness.ts) whose store — used by its app, its helpers and the test — fails on demand through `faults`. */
export async function faultyWorld(dialect: 'sqlite' | 'postgres'): Promise<{ w: World; faults: StatementFaults }> {
  const faults = new StatementFaults();
  // Subscriptions read on every verification that spends (not cached for 5 s): every attempt takes one path.
  const app = { webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, subscriptionsTtlMs: 0 } };
  const w = await world(dialect, { openStore: (url) => faultyStore(url, faults), app });
  return { w, faults };
}
