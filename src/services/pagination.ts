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
 * One owner's rows (`owner` = `value`: an API's keys, a workspace's roles…) in the list's order, (owner, id), from
 * past `after` (a page's cursor) when given: what every list reads through its (…, owner, id) index.
 *
 * Written as a range on purpose. Given `owner = value ORDER BY id`, PostgreSQL drops the column held equal from the
 * order, and then the primary key (id) gives that order too; its estimate assumes the owner's rows are spread evenly
 * over the ids, so for an owner with many rows it walks the primary key and filters, reading every older row of the
 * other owners before the page's first (an API of 200,000 keys after one of 100,000: 271 ms for a first page instead
 * of 20). As `owner >= value AND owner <= value` the owner stays in the order, which only its index gives; a cursor
 * is the row comparison `(owner, id) > (value, after)`, where that index's range starts. Columns held equal before
 * `owner` (an identity's keys of one API: identity_id, then api_id as the owner) are the index's leading columns.
 */
export function ownedRows<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  owner: string,
  value: string,
  opts: { after?: string; order?: 'asc' | 'desc' } = {},
): SelectQueryBuilder<DB, TB, O> {
  const desc = opts.order === 'desc';
  const [o, id] = [sql.ref(owner), sql.ref('id')];
  const [from, to] = desc ? [sql.raw('<='), sql.raw('>=')] : [sql.raw('>='), sql.raw('<=')];
  const start =
    opts.after === undefined
      ? sql<boolean>`${o} ${from} ${value}`
      : sql<boolean>`(${o}, ${id}) ${sql.raw(desc ? '<' : '>')} (${value}, ${opts.after})`;
  return qb
    .where(start)
    .where(sql<boolean>`${o} ${to} ${value}`)
    .orderBy(o, desc ? 'desc' : 'asc')
    .orderBy(id, desc ? 'desc' : 'asc');
}

/**
 * ownedRows of `owner`, or with `within` (a column held equal inside the owner's rows, e.g. a status) the owner held
 * equal and that column as the range: read through an index (owner, column, id) rather than the owner's rows
 * filtered, which reads every row of the owner the filter rejects before the page fills (all of them when none
 * match).
 */
export function ownedRowsWithin<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  owner: string,
  value: string,
  within: { column: string; value: string | undefined },
  opts: { after?: string; order?: 'asc' | 'desc' } = {},
): SelectQueryBuilder<DB, TB, O> {
  if (within.value === undefined) return ownedRows(qb, owner, value, opts);
  return ownedRows(qb.where(sql<boolean>`${sql.ref(owner)} = ${value}`), within.column, within.value, opts);
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
 * The rows `matching` selects, counted up to TOTAL_CAP + 1 (see TOTAL_CAP). `matching` is the list's first page
 * without its limit (ordered, ownedRows): the count walks the index the list's pages walk, and stops there.
 */
export async function cappedCount<TB extends keyof Database>(
  db: Executor,
  matching: SelectQueryBuilder<Database, TB & TablesWithId, object>,
): Promise<number> {
  const counted = matching
    .select(sql<number>`1`.as('one'))
    .limit(TOTAL_CAP + 1)
    .as('counted');
  const row = await db
    .selectFrom(counted)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
