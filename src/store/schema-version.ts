import { DEFAULT_MIGRATION_TABLE, type Kysely, sql } from 'kysely';

/**
 * The database's schema was migrated by a newer Keyhold: this code does not know every migration it lists.
 * Its message is one line naming both schema versions (their last migrations) and what to do.
 */
export class SchemaTooNewError extends Error {
  readonly databaseVersion: string;
  readonly codeVersion: string;
  constructor(databaseVersion: string, codeVersion: string) {
    super(
      `the database's schema is at ${databaseVersion}, newer than this Keyhold's ${codeVersion}: run the newer Keyhold, or restore a backup taken before the upgrade`,
    );
    this.name = 'SchemaTooNewError';
    this.databaseVersion = databaseVersion;
    this.codeVersion = codeVersion;
  }
}

const last = (names: string[]): string => [...names].sort().at(-1) ?? '(none)';

/**
 * Refuses (SchemaTooNewError) a database whose migration table lists a migration that is not in `known`: an
 * older Keyhold would read and write a schema it does not know. Kysely's Migrator would refuse it too, but as
 * "corrupted migrations", which tells an operator nothing; a database without the table (new) passes.
 */
// biome-ignore lint/suspicious/noExplicitAny: the migration table is Kysely's, outside Keyhold's schema type
export async function checkSchemaNotNewer(db: Kysely<any>, known: string[], schema: string | undefined): Promise<void> {
  const applied = await appliedMigrations(db, schema);
  if (applied.some((name) => !known.includes(name))) throw new SchemaTooNewError(last(applied), last(known));
}

// biome-ignore lint/suspicious/noExplicitAny: as above
async function appliedMigrations(db: Kysely<any>, schema: string | undefined): Promise<string[]> {
  const table = sql.table(schema ? `${schema}.${DEFAULT_MIGRATION_TABLE}` : DEFAULT_MIGRATION_TABLE);
  try {
    const { rows } = await sql<{ name: string }>`select name from ${table}`.execute(db);
    return rows.map((r) => r.name);
  } catch (err) {
    // No migration table (PostgreSQL 42P01 undefined_table, 3F000 invalid_schema_name; SQLite "no such table"): a new database.
    const e = err as { code?: unknown; message?: unknown };
    if (e?.code === '42P01' || e?.code === '3F000' || /no such table/.test(String(e?.message))) return [];
    throw err;
  }
}
