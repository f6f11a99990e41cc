import {
  Kysely,
  Migrator,
  sql,
  type CompiledQuery,
  type Dialect,
  type LogEvent,
  type Migration,
  type MigrationResultSet,
  type Transaction,
} from 'kysely';
import type { Database } from './schema.ts';
import { SQLITE_BUSY_TIMEOUT_MS, sqliteDialect } from './dialects/sqlite.ts';
import { listenForNotifications, type NotificationHandlers, type Notifications } from './dialects/postgres-notifications.ts';
import { POSTGRES_TIMEOUTS, unlimitedTimeouts, postgresDialect, type PostgresTimeouts } from './dialects/postgres.ts';
import { AvailabilityListeners, observedDialect, type AvailabilityListener } from './availability.ts';
import { StoreUnavailableError } from './errors.ts';
import { withDeadline } from './deadline.ts';
import { checkSchemaNotNewer } from './schema-version.ts';
import { backupSqliteFile, type BackupPace, type BackupStats } from './dialects/sqlite-backup.ts';
import { sqliteReadOnlyQuery } from './dialects/sqlite-read-only.ts';
import { postgresReadOnlyQuery } from './dialects/postgres-read-only.ts';
import type { ReadOnlyQuery } from './read-only-query.ts';
import * as initial from './schema-migrations/0001-initial.ts';
import * as clampOutOfRange from './schema-migrations/0002-clamp-out-of-range-numbers.ts';
import * as ratelimitNamespaces from './schema-migrations/0003-ratelimit-namespaces.ts';
import * as dashboardSessions from './schema-migrations/0004-dashboard-sessions.ts';
import * as migrationAlgorithms from './schema-migrations/0005-migration-algorithms.ts';
import * as retentionIndexes from './schema-migrations/0006-retention-indexes.ts';
import * as verificationExportIndex from './schema-migrations/0007-verification-export-index.ts';
import * as webhooks from './schema-migrations/0008-webhooks.ts';
import * as dashboardMembers from './schema-migrations/0009-dashboard-members.ts';
import * as webhookCreditCrossings from './schema-migrations/0010-webhook-credit-crossings.ts';
import * as analyticsEvents from './schema-migrations/0011-analytics-events.ts';
import * as foldHourlyAnalytics from './schema-migrations/0012-fold-hourly-analytics.ts';
import * as listIndexes from './schema-migrations/0013-list-indexes.ts';
import * as analyticsProjections from './schema-migrations/0014-analytics-projections.ts';
import * as usageExports from './schema-migrations/0015-usage-exports.ts';
import * as listFilterIndexes from './schema-migrations/0016-list-filter-indexes.ts';

export type { BackupPace, BackupStats } from './dialects/sqlite-backup.ts';
export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
/** Either the database or a transaction on it: repository functions accept both. */
export type Executor = Kysely<Database>;

/** What differs between dialects, as flags business code may read (never `dialect === …`). */
export interface Capabilities {
  dialect: 'sqlite' | 'postgres';
  /** Row locks that let several workers claim different rows at once (`FOR UPDATE SKIP LOCKED`). */
  skipLocked: boolean;
  /**
   * Every statement runs on this process' event loop (node:sqlite is synchronous), so a long write delays
   * every request: background work keeps each of its statements short and pauses between them.
   */
  writesOnEventLoop: boolean;
  /** Data-modifying statements inside WITH (`WITH a AS (UPDATE … RETURNING …) INSERT … SELECT … FROM a`): two writes, one statement. */
  writableCtes: boolean;
}

export interface Store {
  db: Db;
  caps: Capabilities;
  /** Where the data lives, for logs (never includes a password). */
  describe: string;
  migrate(): Promise<string[]>;
  /** Runs a trivial statement; rejects (a StoreUnavailableError after `timeoutMs`) when the store does not answer. */
  ping(timeoutMs: number): Promise<void>;
  /**
   * Tells `listener` the outcome of every call to the database from now on (`up()`: it answered, `down(err)`:
   * it was unavailable, see isStoreUnavailable); returns what stops it.
   */
  onAvailability(listener: AvailabilityListener): () => void;
  /**
   * SQLite only (absent on PostgreSQL, whose tool is pg_dump): writes a consistent copy of the database into
   * `targetPath`, an empty file the caller created, while other processes keep writing, at `pace` (see
   * backupSqliteFile).
   */
  backup?(targetPath: string, pace: BackupPace): Promise<BackupStats>;
  /**
   * PostgreSQL only: listens on a dedicated connection for the change notifications of this store's schema
   * (writeChangeFeed sends them; listenForNotifications reconnects by itself). Absent on SQLite, where the
   * change feed's poll carries changes between processes.
   */
  listen?(handlers: NotificationHandlers): Notifications;
  /** Runs one user-written SELECT (analytics queries) read-only, under a deadline, apart from the server's own work. */
  readOnlyQuery: ReadOnlyQuery;
  /**
   * SQLite on a file only: for another connection to the file to write beside the store's own (the analytics
   * writer thread). `run(fn)` runs `fn` while the store's writer holds no lock, its transactions waiting meanwhile.
   */
  writeAside?: WriteAside;
  close(): Promise<void>;
}

/** See Store.writeAside. */
export interface WriteAside {
  path: string;
  busyTimeoutMs: number;
  run<T>(fn: () => Promise<T>): Promise<T>;
}

/** How long the store may take before a call fails as unavailable; the defaults suit a server. */
export interface StoreOptions {
  /** PostgreSQL (default POSTGRES_TIMEOUTS). */
  postgres?: Partial<PostgresTimeouts>;
  /** SQLite: how long a write waits for another connection's lock (default SQLITE_BUSY_TIMEOUT_MS). */
  sqliteBusyTimeoutMs?: number;
  /** A span per statement (src/tracing.ts) when traces are on; absent, the dialect is not wrapped. */
  tracing?: StoreTracing;
  /** Told every statement the store ran, as sent (SQL and parameters): the query plan checks record them. */
  onStatement?: (statement: CompiledQuery) => void;
}

/** What traces the store's statements: the dialect (of `kind`) wrapped. */
export interface StoreTracing {
  dialect(dialect: Dialect, kind: Capabilities['dialect']): Dialect;
}

export { IN_LIST_CHUNK, MAX_PARAMS } from './statement-limits.ts';

export const MIGRATIONS: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-clamp-out-of-range-numbers': clampOutOfRange,
  '0003-ratelimit-namespaces': ratelimitNamespaces,
  '0004-dashboard-sessions': dashboardSessions,
  '0005-migration-algorithms': migrationAlgorithms,
  '0006-retention-indexes': retentionIndexes,
  '0007-verification-export-index': verificationExportIndex,
  '0008-webhooks': webhooks,
  '0009-dashboard-members': dashboardMembers,
  '0010-webhook-credit-crossings': webhookCreditCrossings,
  '0011-analytics-events': analyticsEvents,
  '0012-fold-hourly-analytics': foldHourlyAnalytics,
  '0013-list-indexes': listIndexes,
  '0014-analytics-projections': analyticsProjections,
  '0015-usage-exports': usageExports,
  '0016-list-filter-indexes': listFilterIndexes,
};

/**
 * The PostgreSQL URL without Keyhold's own parameters (`schema`, `prepared_statements`), and whether the hot
 * paths' statements run as named prepared statements: unless `?prepared_statements=off` (for poolers).
 */
function connectionOf(url: URL): { connectionString: string; named: boolean } {
  const named = url.searchParams.get('prepared_statements') !== 'off';
  url.searchParams.delete('schema');
  url.searchParams.delete('prepared_statements');
  return { connectionString: url.toString(), named };
}

/**
 * Opens the store named by a DATABASE_URL: `sqlite:<path>` (or a bare path) or `postgres://…`.
 * A `schema` query parameter on a PostgreSQL URL selects the schema (default `public`).
 */
export function openStore(url: string, options: StoreOptions = {}): Store {
  const listeners = new AvailabilityListeners();
  let dialect: Dialect;
  let caps: Capabilities;
  let describe: string;
  /** PostgreSQL: a database without statement timeouts, for migrations (their statements and lock waits may take long). */
  let openUnlimited: (() => Db) | undefined;
  let schema: string | undefined;
  let backup: Store['backup'];
  let listen: Store['listen'];
  let writeAside: WriteAside | undefined;
  if (/^postgres(ql)?:\/\//.test(url)) {
    const parsed = new URL(url);
    const name = parsed.searchParams.get('schema') ?? 'public';
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) throw new Error(`invalid PostgreSQL schema name "${name}"`);
    schema = name;
    const { connectionString, named } = connectionOf(parsed);
    dialect = postgresDialect(connectionString, name, { ...POSTGRES_TIMEOUTS, ...options.postgres }, 10, named).dialect;
    const unlimited = unlimitedTimeouts(options.postgres?.connectMs);
    openUnlimited = () => new Kysely<Database>({ dialect: postgresDialect(connectionString, name, unlimited, 2).dialect });
    caps = { dialect: 'postgres', skipLocked: true, writesOnEventLoop: false, writableCtes: true };
    listen = (handlers) => listenForNotifications(connectionString, name, handlers);
    parsed.password = '';
    describe = `${parsed.toString()} (schema ${schema})`;
  } else {
    const path = url.replace(/^sqlite:/, '');
    const busyTimeoutMs = options.sqliteBusyTimeoutMs ?? SQLITE_BUSY_TIMEOUT_MS;
    const sqlite = sqliteDialect(path, busyTimeoutMs);
    dialect = sqlite;
    if (path !== ':memory:') writeAside = { path, busyTimeoutMs, run: (fn) => sqlite.aside(fn) };
    caps = { dialect: 'sqlite', skipLocked: false, writesOnEventLoop: true, writableCtes: false };
    describe = `sqlite:${path}`;
    backup = (targetPath, pace) => backupSqliteFile(path, targetPath, pace);
  }
  const db = kyselyOf(options.tracing?.dialect(dialect, caps.dialect) ?? dialect, listeners, options.onStatement);
  const readOnly = readOnlyQueryOf(url); // analytics queries: apart from `db`
  return {
    db,
    caps,
    describe,
    async migrate() {
      const target = openUnlimited?.() ?? db;
      try {
        return await migrateToLatest(target, schema);
      } finally {
        if (target !== db) await target.destroy();
      }
    },
    ping: (timeoutMs) => ping(db, timeoutMs),
    onAvailability: (listener) => listeners.add(listener),
    ...(backup ? { backup } : {}),
    ...(listen ? { listen } : {}),
    ...(writeAside ? { writeAside } : {}),
    readOnlyQuery: readOnly.run,
    close: () => readOnly.close().then(() => db.destroy()),
  };
}

/** In a transaction: answered only when the store can take writes too (SQLite reads have their own connection). */
function ping(db: Db, timeoutMs: number): Promise<void> {
  return withDeadline(
    db
      .transaction()
      .execute((tx) => sql`select 1`.execute(tx))
      .then(() => {}),
    timeoutMs,
    () => new StoreUnavailableError(`the store did not answer within ${timeoutMs} ms`),
  );
}

/** The store's Kysely: the outcome of every call told to `listeners`, and each statement sent to `onStatement` when given. */
function kyselyOf(dialect: Dialect, listeners: AvailabilityListeners, onStatement?: StoreOptions['onStatement']): Db {
  const log = (event: LogEvent) => {
    if (event.level === 'query') onStatement?.(event.query);
  };
  return new Kysely<Database>({ dialect: observedDialect(dialect, listeners), ...(onStatement ? { log } : {}) });
}

/** Where analytics queries run: apart from the store's own connections (see read-only-query.ts). */
function readOnlyQueryOf(url: string): { run: ReadOnlyQuery; close(): Promise<void> } {
  if (!/^postgres(ql)?:\/\//.test(url)) return sqliteReadOnlyQuery(url.replace(/^sqlite:/, ''));
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? 'public';
  return postgresReadOnlyQuery(connectionOf(parsed).connectionString, schema);
}

/** Applies the pending schema migrations; returns their names. A schema newer than this code is a SchemaTooNewError. */
async function migrateToLatest(db: Db, schema: string | undefined): Promise<string[]> {
  if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  const known = Object.keys(MIGRATIONS);
  await checkSchemaNotNewer(db, known, schema);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  // Kysely's introspection looks at every schema and table of the database; one dropped meanwhile (another
  // process' test schema) fails it with invalid_schema_name, undefined_table, undefined_column (a sequence looked
  // up for a column just dropped) or an internal "cache lookup failed". That is transient: try again.
  const TRANSIENT = new Set(['3F000', '42P01', '42703', 'XX000']);
  let result: MigrationResultSet;
  for (let attempt = 1; ; attempt++) {
    result = await migrator.migrateToLatest();
    if (!result.error || !TRANSIENT.has((result.error as { code?: string }).code ?? '') || attempt === 5) break;
  }
  // A newer Keyhold migrated the database since the check above: say so as the check does.
  if (result.error && /^corrupted migrations/.test(String((result.error as Error).message))) await checkSchemaNotNewer(db, known, schema);
  if (result.error) throw result.error;
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
