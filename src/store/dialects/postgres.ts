import pg from 'pg';
import { PostgresDialect, type Dialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import { StoreUnavailableError } from '../errors.ts';
import { withDeadline } from '../deadline.ts';

// BIGINT (epoch milliseconds, counts) fits a JS number for every value Keyhold stores.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));
// NUMERIC only comes from aggregates (`sum` over BIGINT): the schema has no NUMERIC columns. As numbers,
// such results look the same as on SQLite.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v: string) => Number(v));

/**
 * How long Keyhold waits for PostgreSQL, so that an unreachable or stuck server turns into errors (503
 * `store/unavailable`) within a known time instead of requests that hang. 0 turns a limit off.
 */
export interface PostgresTimeouts {
  /** Opening a connection, and waiting for a free one when the pool is busy (pg `connectionTimeoutMillis`). */
  connectMs: number;
  /** Server side, per statement (`statement_timeout`): the server cancels it (57014). */
  statementMs: number;
  /**
   * Server side (`idle_in_transaction_session_timeout`): a session idle inside a transaction that long is
   * ended, so a process that vanished mid-transaction cannot hold row locks (a key's credits) for long.
   */
  idleInTransactionMs: number;
  /**
   * Client side, per statement: no answer by then (a connection cut without a reset, a server that stopped
   * answering) fails it and discards the connection. Longer than `statementMs`, so a slow statement is
   * cancelled by the server first and its connection stays usable.
   */
  queryMs: number;
}

/** The defaults: a request meets a dead store within 2 s (no connection) or 6 s (a connection that went silent). */
export const POSTGRES_TIMEOUTS: PostgresTimeouts = { connectMs: 2_000, statementMs: 5_000, idleInTransactionMs: 10_000, queryMs: 6_000 };

/**
 * Without limits but on connecting (`connectMs`, the store's): for schema migrations, whose statements (and the lock
 * that serializes them) may take long.
 */
export function unlimitedTimeouts(connectMs = POSTGRES_TIMEOUTS.connectMs): PostgresTimeouts {
  return { connectMs, statementMs: 0, idleInTransactionMs: 0, queryMs: 0 };
}

/**
 * PostgreSQL through `pg`. `schema` is put first on every connection's search_path, so one database
 * can hold several isolated Keyhold schemas (the tests use one per test). Connections are named
 * `keyhold` in pg_stat_activity unless the URL gives an `application_name`.
 *
 * No connection error can end the process: every client, idle or checked out, has an 'error' listener
 * (a checked-out client's error also fails its statement, and the pool drops the client when released).
 */
export function postgresDialect(
  connectionString: string,
  schema: string,
  timeouts: PostgresTimeouts = POSTGRES_TIMEOUTS,
  poolSize = 10,
  namedStatements = false,
): { dialect: Dialect; pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    options: `-c search_path=${schema}`,
    application_name: 'keyhold',
    connectionTimeoutMillis: timeouts.connectMs || undefined,
    statement_timeout: timeouts.statementMs || undefined,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionMs || undefined,
    keepAlive: true,
  });
  pool.on('error', () => {
    /* an idle client died; the pool replaces it on next use */
  });
  pool.on('connect', (client) => {
    client.on('error', () => {
      /* a checked-out client's connection broke: its statement fails with the error, and the pool drops it on release */
    });
  });
  return { dialect: new PostgresDialect({ pool: timedPool(pool, timeouts.queryMs, namedStatements) }), pool };
}

/**
 * Statements run as named prepared statements where the store allows it (see nameStatement), by text. Bounded:
 * a name is never given to another text, and each connection keeps every statement it prepared.
 */
const statementNames = new Map<string, string>();
const MAX_NAMED_STATEMENTS = 32;

/**
 * Marks `sql` (a statement run on every request of a hot path, whose text is cached) to be prepared once per
 * connection under a name, then only bound and executed: PostgreSQL parses and plans it once per connection
 * instead of on every request. Only on stores opened with prepared statements on (the default; a pooler in
 * transaction mode may need them off, see docs/postgresql.md).
 */
export function nameStatement(sql: string): void {
  if (statementNames.has(sql) || statementNames.size >= MAX_NAMED_STATEMENTS) return;
  statementNames.set(sql, `keyhold_${statementNames.size + 1}`);
}

/** The pool as Kysely sees it, with the client-side statement deadline on every client and named statements if on. */
function timedPool(pool: pg.Pool, queryMs: number, named: boolean): PostgresPool {
  if (!queryMs && !named) return pool as unknown as PostgresPool;
  // One wrapper per client, so Kysely (which keeps a connection per client object) sees the same one each time.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = timedClient(client, queryMs, named);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

function timedClient(client: pg.PoolClient, queryMs: number, named: boolean): PostgresPoolClient {
  let broken = false;
  const send = (sql: string, parameters: ReadonlyArray<unknown>): Promise<pg.QueryResult> => {
    const name = named ? statementNames.get(sql) : undefined;
    return name ? client.query({ name, text: sql, values: [...parameters] }) : client.query(sql, [...parameters]);
  };
  const query = (sql: string, parameters: ReadonlyArray<unknown>) =>
    // queryMs 0 is no deadline (named statements alone bring a client here).
    !queryMs
      ? send(sql, parameters)
      : withDeadline(send(sql, parameters), queryMs, () => {
          // The connection may be dead without having said so: discard it (its statement then fails with
          // nobody waiting for it), and have the pool drop the client when it comes back instead of reusing it.
          broken = true;
          (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
          return new StoreUnavailableError(`PostgreSQL did not answer within ${queryMs} ms`);
        });
  // pg-pool sets `release` anew on every checkout: look it up at call time. An argument makes it drop the client.
  return { query, release: () => client.release(broken || undefined) } as unknown as PostgresPoolClient;
}
