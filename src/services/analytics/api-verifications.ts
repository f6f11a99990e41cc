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

/** What analytics.getVerifications groups by (v1's `tag` and `tags` are not: tags are not recorded). */
export const GROUPINGS = ['hour', 'day', 'month', 'key', 'identity'] as const satisfies readonly Grouping[];

/** Why a `tag` filter is refused rather than ignored (ignoring it would answer the counts of every verification). */
export const TAG_NOT_RECORDED =
  'is not supported: this version of Keyhold does not record the tags of keys.verifyKey, so verifications cannot be filtered by tag';

export interface ApiVerificationsQuery {
  apiId: string;
  start: number;
  end?: number;
  keyId?: string | string[];
  externalId?: string;
  groupBy?: Grouping | Grouping[];
  /** Refused when present (TAG_NOT_RECORDED). */
  tag?: string | string[];
  limit?: number;
  orderBy?: OrderField;
  order?: 'asc' | 'desc';
}
export interface ApiVerificationsRow extends OutcomeCounts {
  time?: number;
  keyId?: string;
  identity?: { id: string; externalId: string };
}

const TIME_GROUPS: readonly Grouping[] = ['hour', 'day', 'month'];
const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * Verification counts of an API's keys in [start, end) (`end` defaults to now), optionally only of some
 * keys (`keyId`, one or several) or of one identity (`externalId`), grouped by at most one time unit
 * (hour, day, month: UTC buckets) and/or by key and/or identity. Without any grouping: one row of totals.
 *
 * Grouped by time alone, the series is complete: every bucket from start to end, zero-filled (at most
 * MAX_BUCKETS). Combined with key or identity, only (bucket, key/identity) pairs with data are listed.
 * Grouped by identity, verifications of keys without an identity (or of a deleted identity) are left out.
 * Rows are ordered by `orderBy` (default `time` when grouped by time) in `order` (default asc), ties by
 * time, then keyId, then identity externalId, ascending; then cut to `limit`. A `tag` filter is a 400:
 * tags are not recorded.
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
  const { from, to } = widen(q.start, end, g ?? 'hour');
  const keyIds = q.keyId === undefined ? undefined : [...new Set(list(q.keyId))];
  const sums = await sumHourly(
    db,
    { workspaceId: caller.workspaceId, apiId: q.apiId, from, to, keyIds, identityId },
    { hour: !!g, key: byKey, identity: byIdentity },
  );

  const folded = new Map<string, Group>();
  if (g && !byKey && !byIdentity) {
    // Zero-fill: every bucket of the window exists before the data is added.
    for (let b = from; b < to; b = nextBucket(b, g)) folded.set(`${b}\u0000\u0000`, { time: b, counts: zero() });
  } else if (!g && !byKey && !byIdentity) {
    folded.set('\u0000\u0000', { counts: zero() });
  }
  fold(sums, g, folded);

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
      ...r.counts,
    });
  }
  sortRows(out, q.orderBy ?? (g ? 'time' : undefined), q.order === 'desc' ? -1 : 1);
  return q.limit === undefined ? out : out.slice(0, q.limit);
}

/**
 * The query's problems a schema does not state: a tag filter, an empty window, several time groupings,
 * ordering by time without one, too many buckets.
 */
function apiQueryProblems(q: ApiVerificationsQuery, end: number, timeGroups: Granularity[]): FieldProblem[] {
  const g: Granularity | undefined = timeGroups[0];
  const problems: FieldProblem[] = [];
  if (q.tag !== undefined) problems.push({ path: '/tag', message: TAG_NOT_RECORDED });
  if (q.start >= end) problems.push({ path: '/start', message: 'must be less than end' });
  if (timeGroups.length > 1)
    problems.push({ path: '/groupBy', message: `at most one of hour, day and month (got ${timeGroups.join(', ')})` });
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

/** By `field` in the given direction, ties by time, then keyId, then identity externalId, ascending. */
function sortRows(rows: ApiVerificationsRow[], field: OrderField | undefined, sign: 1 | -1): void {
  const cmp = (a: string | number | undefined, b: string | number | undefined) =>
    a === b ? 0 : a === undefined ? -1 : b === undefined ? 1 : a < b ? -1 : 1;
  rows.sort(
    (a, b) =>
      (field ? sign * cmp(a[field], b[field]) : 0) ||
      cmp(a.time, b.time) ||
      cmp(a.keyId, b.keyId) ||
      cmp(a.identity?.externalId, b.identity?.externalId),
  );
}
