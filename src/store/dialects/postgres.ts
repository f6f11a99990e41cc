import pg from 'pg';
import { PostgresDialect, type Dialect } from 'kysely';

// BIGINT (epoch milliseconds, counts) fits a JS number for every value Keyhold stores.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));
// NUMERIC only comes from aggregates (`sum` over BIGINT): the schema has no NUMERIC columns. As numbers,
// such results look the same as on SQLite.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v: string) => Number(v));

/**
 * PostgreSQL through `pg`. `schema` is put first on every connection's search_path, so one database
 * can hold several isolated Keyhold schemas (the tests use one per test).
 */
export function postgresDialect(connectionString: string, schema: string, poolSize = 10): { dialect: Dialect; pool: pg.Pool } {
  const pool = new pg.Pool({ connectionString, max: poolSize, options: `-c search_path=${schema}` });
  pool.on('error', () => {
    /* an idle client died; the pool replaces it on next use */
  });
  return { dialect: new PostgresDialect({ pool }), pool };
}
