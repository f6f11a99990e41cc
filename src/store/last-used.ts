import { PostgresAdapter, sql } from 'kysely';
import type { Db } from './store.ts';
import { IN_LIST_CHUNK, JSON_CHUNK } from './statement-limits.ts';
import { chunk, fixedShapeChunks } from './bulk-statements.ts';

/**
 * Moves each row's `last_used_at` forward to its time in `latest` (by id), never back, in id order (a lock order
 * every node shares). Idempotent: a batch written twice is the same. For keys (the verification recorder) and root
 * keys (their usage recorder).
 *
 * The times are joined to the rows (`UPDATE … FROM`), each row found by its primary key: on SQLite a VALUES list per
 * IN_LIST_CHUNK ids, on PostgreSQL one JSON parameter per JSON_CHUNK (`json_to_recordset`), which its client
 * serializes and its server parses far faster than a thousand parameters. A `CASE id WHEN … THEN …` of the chunk's
 * ids, as this once was, made each row compare its id with half the chunk, twice (docs/performance.md).
 */
export async function moveLastUsedForward(db: Db, table: 'keys' | 'root_keys', latest: ReadonlyMap<string, number>): Promise<void> {
  const ids = [...latest.keys()].sort();
  const t = sql.table(table);
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    for (const part of chunk(ids, JSON_CHUNK)) {
      const times = JSON.stringify(part.map((id) => ({ id, at: latest.get(id) })));
      await sql`update ${t} set last_used_at = v.at from json_to_recordset(${times}::json) as v(id text, at bigint)
        where ${t}.id = v.id and (${t}.last_used_at is null or ${t}.last_used_at < v.at)`.execute(db);
    }
    return;
  }
  for (const part of fixedShapeChunks(ids, IN_LIST_CHUNK)) {
    const times = sql.join(part.map((id) => sql`(${id}, ${latest.get(id)!})`));
    await sql`update ${t} set last_used_at = v.column2 from (values ${times}) as v
      where ${t}.id = v.column1 and (${t}.last_used_at is null or ${t}.last_used_at < v.column2)`.execute(db);
  }
}
