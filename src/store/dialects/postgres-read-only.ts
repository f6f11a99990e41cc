import { CompiledQuery, Kysely, sql } from 'kysely';
import { QueryFailedError, QueryTimeoutError, type ReadOnlyQuery } from '../read-only-query.ts';
import { POSTGRES_TIMEOUTS, postgresDialect } from './postgres.ts';

/** Connections the analytics pool holds: queries beyond wait for one (the service bounds them per workspace too). */
export const ANALYTICS_POOL_SIZE = 4;

const code = (err: unknown): string | undefined => (err as { code?: string } | null)?.code;

/**
 * PostgreSQL: a pool of its own (so a slow query never holds a connection verifications wait for, and its
 * timeouts never count as the store being down), each query in a READ ONLY transaction with
 * `SET LOCAL statement_timeout`.
 */
export function postgresReadOnlyQuery(connectionString: string, schema: string): { run: ReadOnlyQuery; close(): Promise<void> } {
  let db: Kysely<unknown> | undefined;
  const open = (timeoutMs: number) => {
    db ??= new Kysely<unknown>({
      dialect: postgresDialect(
        connectionString,
        schema,
        { ...POSTGRES_TIMEOUTS, statementMs: 0, queryMs: timeoutMs + 5_000 },
        ANALYTICS_POOL_SIZE,
      ).dialect,
    });
    return db;
  };
  const run: ReadOnlyQuery = async (text, params, timeoutMs) => {
    try {
      return await open(timeoutMs)
        .transaction()
        .execute(async (tx) => {
          await sql`set transaction read only`.execute(tx);
          await sql.raw(`set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`).execute(tx);
          const result = await tx.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, [...params]));
          return result.rows;
        });
    } catch (err) {
      if (code(err) === '57014') throw new QueryTimeoutError(timeoutMs);
      if (typeof code(err) === 'string' && !code(err)!.startsWith('08') && !code(err)!.startsWith('57')) {
        throw new QueryFailedError((err as Error).message);
      }
      throw err;
    }
  };
  return { run, close: async () => db?.destroy() };
}
