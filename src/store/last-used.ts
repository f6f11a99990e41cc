import { sql } from 'kysely';
import type { Db } from './store.ts';
import { IN_LIST_CHUNK } from './statement-limits.ts';
import { fixedShapeChunks } from './bulk-statements.ts';

/**
 * Moves each row's `last_used_at` forward to its time in `latest` (by id), never back: one conditional UPDATE per
 * IN_LIST_CHUNK ids, in id order (a lock order every node shares). Idempotent: a batch written twice is the same.
 * For keys (the verification recorder) and root keys (their usage recorder).
 */
export async function moveLastUsedForward(db: Db, table: 'keys' | 'root_keys', latest: ReadonlyMap<string, number>): Promise<void> {
  for (const ids of fixedShapeChunks([...latest.keys()].sort(), IN_LIST_CHUNK)) {
    // The CAST gives PostgreSQL the parameter's type (a bare parameter in CASE would be text).
    const at = sql<number>`(case ${sql.ref('id')} ${sql.join(
      ids.map((id) => sql`when ${id} then cast(${latest.get(id)!} as bigint)`),
      sql` `,
    )} end)`;
    await db
      .updateTable(table)
      .set({ last_used_at: at })
      .where('id', 'in', ids)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
      .execute();
  }
}
