import { sql, type SelectQueryBuilder } from 'kysely';
import type { Database } from '../store/schema.ts';
import type { Executor } from '../store/store.ts';

/** Page size of list operations when the caller gives no `limit`. */
export const DEFAULT_PAGE_SIZE = 100;

/**
 * Cursor pagination by id: fetch `limit + 1` rows after the cursor, then split them here into the page and
 * the cursor of the next page, which is present only when another page exists.
 */
export function splitPage<T extends { id: string }>(rows: T[], limit: number): { page: T[]; cursor?: string } {
  const page = rows.slice(0, limit);
  return { page, cursor: rows.length > limit ? page[page.length - 1].id : undefined };
}

/**
 * The most a list's `total` counts: a total is exact up to it, and `TOTAL_CAP + 1` when more rows match ("more
 * than 10,000"). Counting stops at that row, so a page costs the same whether an API holds 10,001 keys or ten
 * million (docs/performance.md, "Query plans").
 */
export const TOTAL_CAP = 10_000;

/** The tables whose rows a list pages through by their `id`. */
type TablesWithId = { [T in keyof Database]: Database[T] extends { id: string } ? T : never }[keyof Database];

/**
 * The rows `matching` selects, counted up to TOTAL_CAP + 1 (see TOTAL_CAP), in the list's order (by id): the count
 * walks the index the list's pages walk, and stops there.
 */
export async function cappedCount<TB extends keyof Database>(
  db: Executor,
  matching: SelectQueryBuilder<Database, TB & TablesWithId, object>,
): Promise<number> {
  const counted = matching
    .select(sql<number>`1`.as('one'))
    .orderBy(sql.ref('id'))
    .limit(TOTAL_CAP + 1)
    .as('counted');
  const row = await db
    .selectFrom(counted)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
