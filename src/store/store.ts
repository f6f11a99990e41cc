import { Kysely, Migrator, sql, type Migration, type MigrationResultSet, type Transaction } from 'kysely';
import type { Database } from './schema.ts';
import { sqliteDialect } from './dialects/sqlite.ts';
import { postgresDialect } from './dialects/postgres.ts';
import * as initial from './schema-migrations/0001-initial.ts';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
/** Either the database or a transaction on it: repository functions accept both. */
export type Executor = Kysely<Database>;

/** What differs between dialects, as flags business code may read (never `dialect === …`). */
export interface Capabilities {
  dialect: 'sqlite' | 'postgres';
  /** Row locks that let several workers claim different rows at once (`FOR UPDATE SKIP LOCKED`). */
  skipLocked: boolean;
}

export interface Store {
  db: Db;
  caps: Capabilities;
  /** Where the data lives, for logs (never includes a password). */
  describe: string;
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Statement sizes that stay well inside both dialects' limits on bound parameters (SQLite 32,766,
 * PostgreSQL 65,535): at most MAX_PARAMS parameters per statement, at most IN_LIST_CHUNK values per
 * `IN (…)` list or rows per batch of a repeated statement.
 */
export const MAX_PARAMS = 16_000;
export const IN_LIST_CHUNK = 500;

const MIGRATIONS: Record<string, Migration> = { '0001-initial': initial };

/**
 * Opens the store named by a DATABASE_URL: `sqlite:<path>` (or a bare path) or `postgres://…`.
 * A `schema` query parameter on a PostgreSQL URL selects the schema (default `public`).
 */
export function openStore(url: string): Store {
  let db: Db;
  let caps: Capabilities;
  let describe: string;
  let schema: string | undefined;
  if (/^postgres(ql)?:\/\//.test(url)) {
    const parsed = new URL(url);
    schema = parsed.searchParams.get('schema') ?? 'public';
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid PostgreSQL schema name "${schema}"`);
    parsed.searchParams.delete('schema');
    const { dialect } = postgresDialect(parsed.toString(), schema);
    db = new Kysely<Database>({ dialect });
    caps = { dialect: 'postgres', skipLocked: true };
    parsed.password = '';
    describe = `${parsed.toString()} (schema ${schema})`;
  } else {
    const path = url.replace(/^sqlite:/, '');
    db = new Kysely<Database>({ dialect: sqliteDialect(path) });
    caps = { dialect: 'sqlite', skipLocked: false };
    describe = `sqlite:${path}`;
  }
  return {
    db,
    caps,
    describe,
    async migrate() {
      if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
      const migrator = new Migrator({
        db,
        provider: { getMigrations: async () => MIGRATIONS },
        ...(schema ? { migrationTableSchema: schema } : {}),
      });
      // Kysely's introspection looks at every schema of the database; one dropped meanwhile (another
      // process' test schema) fails it with invalid_schema_name. That is transient: try again.
      let result: MigrationResultSet;
      for (let attempt = 1; ; attempt++) {
        result = await migrator.migrateToLatest();
        if (!result.error || (result.error as { code?: string }).code !== '3F000' || attempt === 5) break;
      }
      if (result.error) throw result.error;
      return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    },
    close: () => db.destroy(),
  };
}
