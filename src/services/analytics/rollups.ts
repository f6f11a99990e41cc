import type { Database } from '../../store/schema.ts';
import type { Executor } from '../../store/store.ts';
import { recurringInserts } from '../../store/bulk-statements.ts';
import { floorTo } from './hourly-sums.ts';

// The roll-ups of the analytics events (schema migration 0011): per minute, hour, day and month (UTC bucket
// starts in ms; a month's is its first day), upserted by the batch that writes the raw events.

export const GRAINS = ['minute', 'hour', 'day', 'month'] as const;
export type Grain = (typeof GRAINS)[number];
export const MINUTE_MS = 60_000;

/** The start of `t`'s bucket of `grain`, UTC. */
export function bucketOf(t: number, grain: Grain): number {
  return grain === 'minute' ? t - (((t % MINUTE_MS) + MINUTE_MS) % MINUTE_MS) : floorTo(t, grain);
}

/** Tags as the `tags` columns hold them: PostgreSQL text[]; SQLite a JSON array of strings. */
export function storedTags(tags: readonly string[], dialect: 'sqlite' | 'postgres'): string {
  // PostgreSQL: an array literal, since the store's parameters serialize JS arrays as JSON.
  return dialect === 'postgres' ? `{${tags.map((t) => `"${t.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}` : JSON.stringify(tags);
}

/** Tags as read back from a `tags` column of either dialect. */
export function readTags(value: unknown): string[] {
  if (Array.isArray(value)) return value as string[];
  if (typeof value === 'string' && value.startsWith('[')) return JSON.parse(value) as string[];
  return [];
}

/**
 * Most rows per upsert statement on SQLite. 256: the shapes of every roll-up table (256, 128, then below 4 KiB of
 * SQL) and the raw rows' (insertRecurringRows) stay prepared in SQLite's cache of large statements
 * (sqlite-connection.ts); with 1,000 they were more than it holds, and each flush prepared some of them anew.
 */
const UPSERT_ROWS = 256;

/**
 * `INSERT … ON CONFLICT (group) DO UPDATE SET s = table.s + excluded.s` for each summed column `s`, of `rows`
 * (all with the same members in the same order), in statements whose texts are compiled once (recurringInserts).
 * The caller orders the rows (the same order on every node, so that concurrent flushes lock rows alike).
 */
export async function upsertRollups<T extends keyof Database>(
  tx: Executor,
  table: T,
  rows: ReadonlyArray<Database[T]>,
  group: ReadonlyArray<keyof Database[T] & string>,
  summed: ReadonlyArray<keyof Database[T] & string>,
): Promise<void> {
  await recurringInserts(tx, table, rows, UPSERT_ROWS, 'upsert', (insert) =>
    insert.onConflict((oc) =>
      // biome-ignore lint/suspicious/noExplicitAny: Kysely cannot type a conflict target of a table chosen by a type parameter
      (oc.columns(group as any) as any).doUpdateSet(
        // biome-ignore lint/suspicious/noExplicitAny: as above
        Object.fromEntries(summed.map((c) => [c, (eb: any) => eb(`${table}.${c}`, '+', eb.ref(`excluded.${c}`))])),
      ),
    ),
  );
}

/** Adds `row` into `into` under `id`, summing `summed` when a row of that id is there already. */
export function addRow<R extends object>(into: Map<string, R>, id: string, row: R, summed: ReadonlyArray<keyof R>): void {
  const had = into.get(id);
  if (had === undefined) {
    into.set(id, row);
    return;
  }
  for (const c of summed) (had[c] as number) += row[c] as number;
}

/** The rows of `rows` ordered by id (UTF-16 code units), for a lock order every node shares. */
export function byId<R>(rows: Map<string, R>): R[] {
  return [...rows.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((id) => rows.get(id)!);
}

/** `rows` summed per group of `group`'s columns (`summed` added up), ordered by group (byId). */
export function coarsen<R extends object, K extends keyof R & string, S extends keyof R>(
  rows: readonly R[],
  group: readonly K[],
  summed: readonly S[],
): Array<Pick<R, K | S>> {
  const into = new Map<string, Pick<R, K | S>>();
  for (const row of rows) {
    const copy = {} as Pick<R, K | S>;
    for (const c of group) copy[c] = row[c];
    for (const c of summed) copy[c] = row[c];
    addRow(into, group.map((c) => String(row[c])).join('\u0000'), copy, summed);
  }
  return byId(into);
}
