import type { Kysely } from 'kysely';

// Frozen in time: this file never imports application types or constants.
//
// Before requests had bounds, a key could be written with numbers no later read could handle: 2^53 + 1 in
// `remaining` or `expires` (SQLite then fails every read of the row), 1e300 in a rate limit (every
// verification of the key failed), values past BIGINT on PostgreSQL. Requests can no longer carry them
// (README: HTTP conventions, bounds); this brings rows written before into the same bounds, so such keys can
// be read, listed, updated, deleted and verified again. Nothing to undo: the old values were unusable.

const MAX_TIMESTAMP = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
const MAX_COUNT = 9_007_199_254_740_991; // 2^53 − 1
const MAX_LIMIT = 1_000_000_000_000;
const MIN_DURATION = 1_000;
const MAX_DURATION = 31_622_400_000; // 366 days

const COLUMNS: Array<[table: string, column: string, min: number, max: number]> = [
  ['keys', 'expires_at', 0, MAX_TIMESTAMP],
  ['keys', 'remaining', 0, MAX_COUNT],
  ['keys', 'refill_amount', 1, MAX_COUNT],
  ['root_keys', 'expires_at', 0, MAX_TIMESTAMP],
  ['ratelimits', 'limit', 0, MAX_LIMIT],
  ['ratelimits', 'duration', MIN_DURATION, MAX_DURATION],
];

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  for (const [table, column, min, max] of COLUMNS) {
    await db
      .updateTable(table)
      .set({ [column]: max })
      .where(column, '>', max)
      .execute();
    await db
      .updateTable(table)
      .set({ [column]: min })
      .where(column, '<', min)
      .execute();
  }
}

export async function down(): Promise<void> {}
