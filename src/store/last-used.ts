import { sql } from 'kysely';
import type { Db } from './store.ts';
import { IN_LIST_CHUNK } from './statement-limits.ts';
import { fixedShapeChunks } from './bulk-statements.ts';

/**
 * Moves each row's `last_used_at` forward to its time in `latest` (by id), never back: one conditional UPDATE per
 * IN_LIST_CHUNK ids, in id order (a lock order every node shares). Idempotent: a batch written twice is the same.
 * For keys (the verification recorder) and root keys (their usage recorder).
 *
 * The times are joined as a VALUES list (`UPDATE … FROM`), so each row finds its own by the primary key. A
 * `CASE id WHEN … THEN …` of the chunk's ids, as this once was, made each row compare its id with half the chunk
 * on average, twice (SET and WHERE): with 500 distinct keys per chunk that was about 20 µs per key on SQLite.
 */
export async function moveLastUsedForward(db: Db, table: 'keys' | 'root_keys', latest: ReadonlyMap<string, number>): Promise<void> {
  for (const ids of fixedShapeChunks([...latest.keys()].sort(), IN_LIST_CHUNK)) {
    // The CAST gives PostgreSQL the column's type (a bare parameter in VALUES would be text).
    const times = sql.join(ids.map((id) => sql`(${id}, cast(${latest.get(id)!} as bigint))`));
    const t = sql.table(table);
    await sql`update ${t} set last_used_at = v.column2 from (values ${times}) as v
      where ${t}.id = v.column1 and (${t}.last_used_at is null or ${t}.last_used_at < v.column2)`.execute(db);
  }
}
