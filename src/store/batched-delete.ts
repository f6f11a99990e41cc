import { sql, type RawBuilder } from 'kysely';
import type { Database } from './schema.ts';
import type { Store } from './store.ts';

/**
 * Deletes at most `limit` rows of `table` that match `where`, in one statement (one short write), and
 * returns how many it deleted. Rows are picked by the dialect's physical row address (SQLite's rowid,
 * PostgreSQL's ctid, fetched as an array so the delete is a TID scan), so one statement serves every table
 * whatever its primary key. `where` is checked again on the rows deleted: on PostgreSQL a row updated between
 * the pick and the delete is re-read, and one that no longer matches is left alone. A SQLite table WITHOUT ROWID
 * has no row address: its rows are picked by `primaryKey`, its columns (a row value).
 */
export async function deleteBatch(
  store: Store,
  table: keyof Database,
  where: RawBuilder<unknown>,
  limit: number,
  primaryKey?: readonly string[],
): Promise<number> {
  const t = sql.table(table);
  const columns = primaryKey ? sql.join(primaryKey.map((c) => sql.ref(c))) : sql`rowid`;
  const statement =
    store.caps.dialect === 'sqlite'
      ? sql`delete from ${t} where (${columns}) in (select ${columns} from ${t} where ${where} limit ${limit}) and ${where}`
      : sql`delete from ${t} where ctid = any(array(select ctid from ${t} where ${where} limit ${limit})) and ${where}`;
  const result = await statement.execute(store.db);
  return Number(result.numAffectedRows ?? 0n);
}
