import { AppError, invalid, type FieldProblem } from '../../domain/errors.ts';
import type { Db } from '../../store/store.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { requireApi } from '../lookups.ts';
import {
  fold,
  MAX_BUCKETS,
  nextBucket,
  sumHourly,
  widen,
  zero,
  type Granularity,
  type Group,
  type Grouping,
  type OutcomeCounts,
} from './hourly-sums.ts';

export const ORDER_FIELDS = [
  'time',
  'valid',
  'notFound',
  'forbidden',
  'usageExceeded',
  'rateLimited',
  'unauthorized',
  'disabled',
  'insufficientPermissions',
  'expired',
  'total',
] as const;
export type OrderField = (typeof ORDER_FIELDS)[number];

/** What analytics.getVerifications groups by: at most one time unit, key, identity, and one of tag and tags. */
export const GROUPINGS = ['hour', 'day', 'month', 'key', 'identity', 'tag', 'tags'] as const satisfies readonly Grouping[];

/** Why `groupBy` may not hold both `tag` and `tags`. */
export const TAG_AND_TAGS = 'tag and tags cannot be combined: group by one tag (tag) or by the tag set (tags)';

export interface ApiVerificationsQuery {
  apiId: string;
  start: number;
  end?: number;
  keyId?: string | string[];
  externalId?: string;
  groupBy?: Grouping | Grouping[];
  /** Only verifications carrying every one of these tags. */
  tag?: string | string[];
  limit?: number;
  orderBy?: OrderField;
  order?: 'asc' | 'desc';
}
export interface ApiVerificationsRow extends OutcomeCounts {
  time?: number;
  keyId?: string;
  identity?: { id: string; externalId: string };
  tag?: string;
  tags?: string[];
}

const TIME_GROUPS: readonly Grouping[] = ['hour', 'day', 'month'];
const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * Verification counts of an API's keys in [start, end) (`end` defaults to now), optionally only of some
 * keys (`keyId`, one or several), of one identity (`externalId`) or of verifications carrying all of some
 * tags (`tag`), grouped by at most one time unit (hour, day, month: UTC buckets) and/or by key, identity,
 * and tag (a row per single tag) or tags (a row per tag set as recorded). Without any grouping: one row of
 * totals.
 *
 * Grouped by time alone, the series is complete: every bucket from start to end, zero-filled (at most
 * MAX_BUCKETS). Combined with key, identity, tag or tags, only the groups with data are listed.
 * Grouped by identity, verifications of keys without an identity (or of a deleted identity) are left out;
 * grouped by tag, verifications without tags (a verification counts once per distinct tag it carries).
 * Rows are ordered by `orderBy` (default `time` when grouped by time) in `order` (default asc), ties by
 * time, then keyId, then identity externalId, then tag or tags, ascending; then cut to `limit`.
 * Requires `api.<apiId>.read_analytics`.
 */
export async function getApiVerifications(
  db: Db,
  caller: Caller,
  q: ApiVerificationsQuery,
  now = Date.now(),
): Promise<ApiVerificationsRow[]> {
  const end = q.end ?? now;
  const groups = new Set(list(q.groupBy));
  const timeGroups = TIME_GROUPS.filter((t) => groups.has(t)) as Granularity[];
  const g: Granularity | undefined = timeGroups[0];
  const problems = apiQueryProblems(q, end, timeGroups);
  if (problems.length) throw invalid(problems, 'query');

  await requireApi(db, caller.workspaceId, q.apiId);
  requirePermissions(caller, `api.${q.apiId}.read_analytics`);
  const identityId = q.externalId === undefined ? undefined : await identityIdOf(db, caller.workspaceId, q.externalId);

  const byKey = groups.has('key');
  const byIdentity = groups.has('identity');
  const byTags = groups.has('tag') ? 'tag' : groups.has('tags') ? 'tags' : undefined;
  const { from, to } = widen(q.start, end, g ?? 'hour');
  const keyIds = q.keyId === undefined ? undefined : [...new Set(list(q.keyId))];
  const tags = q.tag === undefined ? undefined : [...new Set(list(q.tag))];
  const sums = await sumHourly(
    db,
    { workspaceId: caller.workspaceId, apiId: q.apiId, from, to, keyIds, identityId, tags },
    { hour: !!g, key: byKey, identity: byIdentity, tags: byTags !== undefined },
  );

  const folded = new Map<string, Group>();
  const grouped = byKey || byIdentity || byTags !== undefined;
  if (g && !grouped) {
    // Zero-fill: every bucket of the window exists before the data is added.
    for (let b = from; b < to; b = nextBucket(b, g)) folded.set(`${b}\u0000\u0000`, { time: b, counts: zero() });
  } else if (!g && !grouped) {
    folded.set('\u0000\u0000', { counts: zero() });
  }
  fold(sums, g, folded, byTags);

  const externalIds = byIdentity
    ? await externalIdsOf(db, caller.workspaceId, [...new Set([...folded.values()].map((r) => r.identityId!))])
    : new Map<string, string>();
  const out: ApiVerificationsRow[] = [];
  for (const r of folded.values()) {
    if (byIdentity && !externalIds.has(r.identityId!)) continue;
    out.push({
      ...(r.time !== undefined ? { time: r.time } : {}),
      ...(byKey ? { keyId: r.keyId } : {}),
      ...(byIdentity ? { identity: { id: r.identityId!, externalId: externalIds.get(r.identityId!)! } } : {}),
      ...(byTags === 'tag' ? { tag: r.tag } : byTags === 'tags' ? { tags: r.tags } : {}),
      ...r.counts,
    });
  }
  sortRows(out, q.orderBy ?? (g ? 'time' : undefined), q.order === 'desc' ? -1 : 1);
  return q.limit === undefined ? out : out.slice(0, q.limit);
}

/**
 * The query's problems a schema does not state: an empty window, several time groupings, tag with tags,
 * ordering by time without a time grouping, too many buckets.
 */
function apiQueryProblems(q: ApiVerificationsQuery, end: number, timeGroups: Granularity[]): FieldProblem[] {
  const g: Granularity | undefined = timeGroups[0];
  const problems: FieldProblem[] = [];
  if (q.start >= end) problems.push({ path: '/start', message: 'must be less than end' });
  if (timeGroups.length > 1)
    problems.push({ path: '/groupBy', message: `at most one of hour, day and month (got ${timeGroups.join(', ')})` });
  const groups = list(q.groupBy);
  if (groups.includes('tag') && groups.includes('tags')) problems.push({ path: '/groupBy', message: TAG_AND_TAGS });
  if (q.orderBy === 'time' && !g) problems.push({ path: '/orderBy', message: 'time needs a time grouping (groupBy hour, day or month)' });
  if (g && q.start < end) {
    const { from, to } = widen(q.start, end, g);
    let n = 0;
    for (let b = from; b < to && n <= MAX_BUCKETS; b = nextBucket(b, g)) n++;
    if (n > MAX_BUCKETS)
      problems.push({
        path: '/start',
        message: `the window spans more than ${MAX_BUCKETS} ${g} buckets; narrow it or group by a larger unit`,
      });
  }
  return problems;
}

async function identityIdOf(db: Db, workspaceId: string, externalId: string): Promise<string> {
  const identity = await db
    .selectFrom('identities')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('external_id', '=', externalId)
    .executeTakeFirst();
  if (!identity) throw new AppError('data/identity-not-found', `identity with externalId ${externalId} not found`);
  return identity.id;
}

/** The externalId of each of these identities that still exists. */
async function externalIdsOf(db: Db, workspaceId: string, identityIds: string[]): Promise<Map<string, string>> {
  const externalIds = new Map<string, string>();
  if (identityIds.length === 0) return externalIds;
  const rows = await db
    .selectFrom('identities')
    .select(['id', 'external_id'])
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', identityIds)
    .execute();
  for (const r of rows) externalIds.set(r.id, r.external_id);
  return externalIds;
}

/** By `field` in the given direction, ties by time, then keyId, then identity externalId, then tag or tags, ascending. */
function sortRows(rows: ApiVerificationsRow[], field: OrderField | undefined, sign: 1 | -1): void {
  const cmp = (a: string | number | undefined, b: string | number | undefined) =>
    a === b ? 0 : a === undefined ? -1 : b === undefined ? 1 : a < b ? -1 : 1;
  /** Tag sets item by item, a set before the longer ones it starts. */
  const cmpTags = (a: string[] = [], b: string[] = []) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return cmp(a[i], b[i]);
    return a.length - b.length;
  };
  rows.sort(
    (a, b) =>
      (field ? sign * cmp(a[field], b[field]) : 0) ||
      cmp(a.time, b.time) ||
      cmp(a.keyId, b.keyId) ||
      cmp(a.identity?.externalId, b.identity?.externalId) ||
      cmp(a.tag, b.tag) ||
      cmpTags(a.tags, b.tags),
  );
}
