import { PostgresAdapter, sql } from 'kysely';
import type { Db } from '../../store/store.ts';
import { IN_LIST_CHUNK } from '../../store/statement-limits.ts';
import { readTags } from './rollups.ts';

// Reads of the per-hour roll-up of verifications (`analytics_key_verifications_per_hour`). The SQL only filters and sums hourly rows (the same statement on
// every dialect); days and months are folded from hours here, in UTC.
//
// Windows: counts are stored per hour, so a window [start, end) is widened to whole buckets at both ends.
// Every bucket (hour, or the day or month of the grouping; hour without a time grouping) that overlaps
// [start, end) is counted whole. A window whose ends fall on bucket boundaries is therefore exact: 30
// aligned hours are 30 hourly buckets (31 when both ends fall inside an hour).

export type Granularity = 'hour' | 'day' | 'month';
export type Grouping = Granularity | 'key' | 'identity' | 'tag' | 'tags';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
/** Most buckets one time-grouped series may span (10 000 hours is about 14 months). */
export const MAX_BUCKETS = 10_000;
export function floorTo(t: number, g: Granularity): number {
  if (g === 'hour') return t - (((t % HOUR_MS) + HOUR_MS) % HOUR_MS);
  if (g === 'day') return t - (((t % DAY_MS) + DAY_MS) % DAY_MS);
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

export function nextBucket(b: number, g: Granularity): number {
  if (g === 'hour') return b + HOUR_MS;
  if (g === 'day') return b + DAY_MS;
  const d = new Date(b);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** The whole buckets [from, to) that cover every bucket overlapping [start, end) (start < end). */
export function widen(start: number, end: number, g: Granularity): { from: number; to: number } {
  return { from: floorTo(start, g), to: nextBucket(floorTo(end - 1, g), g) };
}

/** Counts per outcome code, under the v1 analytics names. `notFound` and `unauthorized` are always 0: such verifications have no key. */
export interface OutcomeCounts {
  valid: number;
  notFound: number;
  forbidden: number;
  usageExceeded: number;
  rateLimited: number;
  unauthorized: number;
  disabled: number;
  insufficientPermissions: number;
  expired: number;
  total: number;
}

const FIELD_OF: Readonly<Record<string, keyof OutcomeCounts>> = {
  VALID: 'valid',
  FORBIDDEN: 'forbidden',
  USAGE_EXCEEDED: 'usageExceeded',
  RATE_LIMITED: 'rateLimited',
  DISABLED: 'disabled',
  INSUFFICIENT_PERMISSIONS: 'insufficientPermissions',
  EXPIRED: 'expired',
};

export const zero = (): OutcomeCounts => ({
  valid: 0,
  notFound: 0,
  forbidden: 0,
  usageExceeded: 0,
  rateLimited: 0,
  unauthorized: 0,
  disabled: 0,
  insufficientPermissions: 0,
  expired: 0,
  total: 0,
});

export interface HourlyFilter {
  workspaceId: string;
  from: number;
  to: number;
  apiId?: string;
  keyIds?: string[];
  identityId?: string;
  /** Rows whose tags include all of these. */
  tags?: readonly string[];
}
export interface HourlySum {
  hour?: number;
  key_id?: string;
  identity_id?: string | null;
  tags?: string[];
  outcome: string;
  n: number;
}

/** Rows whose tags include every one of `tags` (v1's `tag` filter). */
function hasAllTags(db: Db, tags: readonly string[]) {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? sql<boolean>`tags @> ${sql.val(tags as string[])}::text[]`
    : sql<boolean>`(select count(distinct j.value) from json_each(tags) j where j.value in (${sql.join(tags.map((t) => sql.val(t)))})) = ${new Set(tags).size}`;
}

/** Sums of hourly counts in [from, to), per outcome and per the requested columns. */
export async function sumHourly(
  db: Db,
  f: HourlyFilter,
  by: { hour: boolean; key: boolean; identity: boolean; tags?: boolean },
): Promise<HourlySum[]> {
  // Without tags, the roll-up's `by_key` form has the same sums in fewer rows and, on PostgreSQL, an index by key:
  // one key's hours read that key's rows instead of every key's rows of the range (a key's page at 10,000,000 keys).
  const table =
    f.tags === undefined && by.tags !== true ? 'analytics_key_verifications_per_hour_by_key' : 'analytics_key_verifications_per_hour';
  const query = (keyIds?: string[]) =>
    db
      .selectFrom(table as 'analytics_key_verifications_per_hour')
      .select((eb) => ['outcome', eb.fn.sum<number | string>('count').as('n')])
      .where('workspace_id', '=', f.workspaceId)
      .where('time', '>=', f.from)
      .where('time', '<', f.to)
      .$if(f.apiId !== undefined, (qb) => qb.where('key_space_id', '=', f.apiId!))
      .$if(keyIds !== undefined, (qb) => qb.where('key_id', 'in', keyIds!))
      .$if(f.identityId !== undefined, (qb) => qb.where('identity_id', '=', f.identityId!))
      .$if(f.tags !== undefined, (qb) => qb.where(hasAllTags(db, f.tags!)))
      .$if(by.hour, (qb) => qb.select('time as hour').groupBy('time'))
      .$if(by.key, (qb) => qb.select('key_id').groupBy('key_id'))
      .$if(by.identity, (qb) => qb.select('identity_id').groupBy('identity_id').where('identity_id', '!=', ''))
      .$if(by.tags === true, (qb) => qb.select('tags').groupBy('tags'))
      .groupBy('outcome')
      .execute();
  const parts: Array<Awaited<ReturnType<typeof query>>> = [];
  if (f.keyIds === undefined) parts.push(await query());
  else for (let i = 0; i < f.keyIds.length; i += IN_LIST_CHUNK) parts.push(await query(f.keyIds.slice(i, i + IN_LIST_CHUNK)));
  return parts.flat().map((r) => {
    const row = r as typeof r & { hour?: number | string; identity_id?: string; tags?: unknown };
    return {
      ...row,
      ...(row.hour !== undefined ? { hour: Number(row.hour) } : {}),
      ...(row.identity_id !== undefined ? { identity_id: row.identity_id || null } : {}),
      ...(row.tags !== undefined ? { tags: readTags(row.tags) } : {}),
      n: Number(r.n),
    } as HourlySum;
  });
}

export interface Group {
  time?: number;
  keyId?: string;
  identityId?: string;
  /** Grouped by `tag`: one tag of the verifications counted. */
  tag?: string;
  /** Grouped by `tags`: the tags of the verifications counted, exactly as recorded. */
  tags?: string[];
  counts: OutcomeCounts;
}

/**
 * Adds hourly sums into groups keyed by (bucket of `g`, key, identity, and with `byTags` the tag set or each
 * tag); an absent dimension is left out. By `tag`, a row counts once for each distinct tag it carries (a row
 * without tags counts for none); by `tags`, once for its tag set as recorded (order included; `[]` is a set).
 */
export function fold(
  rows: HourlySum[],
  g: Granularity | undefined,
  into = new Map<string, Group>(),
  byTags?: 'tag' | 'tags',
): Map<string, Group> {
  const add = (id: string, r: HourlySum, field: keyof OutcomeCounts, time: number | undefined, tagged: Partial<Group>) => {
    let group = into.get(id);
    if (!group) {
      group = { time, keyId: r.key_id, identityId: r.identity_id ?? undefined, ...tagged, counts: zero() };
      into.set(id, group);
    }
    group.counts[field] += r.n;
    group.counts.total += r.n;
  };
  for (const r of rows) {
    const field = FIELD_OF[r.outcome];
    if (field === undefined) continue;
    const time = g && r.hour !== undefined ? floorTo(Number(r.hour), g) : undefined;
    const id = `${time ?? ''}\u0000${r.key_id ?? ''}\u0000${r.identity_id ?? ''}`;
    if (byTags === 'tag') for (const tag of new Set(r.tags ?? [])) add(`${id}\u0000${tag}`, r, field, time, { tag });
    else if (byTags === 'tags') add(`${id}\u0000${JSON.stringify(r.tags ?? [])}`, r, field, time, { tags: r.tags ?? [] });
    else add(id, r, field, time, {});
  }
  return into;
}

// ---------------------------------------------------------------------------------------------------
// keys.getVerifications
