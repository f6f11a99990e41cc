import { AppError, invalid, type FieldProblem } from '../../domain/errors.ts';
import { IN_LIST_CHUNK, type Db } from '../../store/store.ts';
import { HOUR_MS } from '../verification/verification-recorder.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { requireApi, requireKey } from '../lookups.ts';

// Reads of `key_verifications_hourly`. The SQL only filters and sums hourly rows (the same statement on
// every dialect); days and months are folded from hours here, in UTC.
//
// Windows: counts are stored per hour, so a window [start, end) is widened to whole buckets at both ends.
// Every bucket (hour, or the day or month of the grouping; hour without a time grouping) that overlaps
// [start, end) is counted whole. A window whose ends fall on bucket boundaries is therefore exact: 30
// aligned hours are 30 hourly buckets (31 when both ends fall inside an hour).

export type Granularity = 'hour' | 'day' | 'month';
export type Grouping = Granularity | 'key' | 'identity';

const DAY_MS = 24 * HOUR_MS;
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

const zero = (): OutcomeCounts => ({
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

interface HourlyFilter {
  workspaceId: string;
  from: number;
  to: number;
  apiId?: string;
  keyIds?: string[];
  identityId?: string;
}
interface HourlySum {
  hour?: number;
  key_id?: string;
  identity_id?: string | null;
  outcome: string;
  n: number;
}

/** Sums of hourly counts in [from, to), per outcome and per the requested columns. */
async function sumHourly(db: Db, f: HourlyFilter, by: { hour: boolean; key: boolean; identity: boolean }): Promise<HourlySum[]> {
  const query = (keyIds?: string[]) =>
    db
      .selectFrom('key_verifications_hourly')
      .select((eb) => ['outcome', eb.fn.sum<number | string>('count').as('n')])
      .where('workspace_id', '=', f.workspaceId)
      .where('hour', '>=', f.from)
      .where('hour', '<', f.to)
      .$if(f.apiId !== undefined, (qb) => qb.where('api_id', '=', f.apiId!))
      .$if(keyIds !== undefined, (qb) => qb.where('key_id', 'in', keyIds!))
      .$if(f.identityId !== undefined, (qb) => qb.where('identity_id', '=', f.identityId!))
      .$if(by.hour, (qb) => qb.select('hour').groupBy('hour'))
      .$if(by.key, (qb) => qb.select('key_id').groupBy('key_id'))
      .$if(by.identity, (qb) => qb.select('identity_id').groupBy('identity_id').where('identity_id', 'is not', null))
      .groupBy('outcome')
      .execute();
  const parts: Array<Awaited<ReturnType<typeof query>>> = [];
  if (f.keyIds === undefined) parts.push(await query());
  else for (let i = 0; i < f.keyIds.length; i += IN_LIST_CHUNK) parts.push(await query(f.keyIds.slice(i, i + IN_LIST_CHUNK)));
  return parts.flat().map((r) => ({ ...r, n: Number(r.n) }));
}

interface Group {
  time?: number;
  keyId?: string;
  identityId?: string;
  counts: OutcomeCounts;
}

/** Adds hourly sums into groups keyed by (bucket of `g`, key, identity); an absent dimension is left out. */
function fold(rows: HourlySum[], g: Granularity | undefined, into = new Map<string, Group>()): Map<string, Group> {
  for (const r of rows) {
    const field = FIELD_OF[r.outcome];
    if (field === undefined) continue;
    const time = g && r.hour !== undefined ? floorTo(Number(r.hour), g) : undefined;
    const id = `${time ?? ''}\u0000${r.key_id ?? ''}\u0000${r.identity_id ?? ''}`;
    let group = into.get(id);
    if (!group) {
      group = { time, keyId: r.key_id, identityId: r.identity_id ?? undefined, counts: zero() };
      into.set(id, group);
    }
    group.counts[field] += r.n;
    group.counts.total += r.n;
  }
  return into;
}

// ---------------------------------------------------------------------------------------------------
// keys.getVerifications

export interface KeyVerificationsQuery {
  keyId?: string;
  ownerId?: string;
  start?: number;
  end?: number;
  granularity?: 'hour' | 'day';
}
export interface KeyVerificationBucket {
  time: number;
  success: number;
  rateLimited: number;
  usageExceeded: number;
  forbidden: number;
  disabled: number;
  insufficientPermissions: number;
  expired: number;
  total: number;
}

/**
 * Verifications of one key (`keyId`), or summed over every live key of an identity (`ownerId`, its
 * externalId; `keyId` wins when both are given), per hour or UTC day, ascending. Only buckets with at
 * least one verification are listed. `end` defaults to now, `start` to 24 h before `end`.
 * Requires `api.<apiId>.read_analytics` for the API of every key involved.
 */
export async function getKeyVerifications(
  db: Db,
  caller: Caller,
  q: KeyVerificationsQuery,
  now = Date.now(),
): Promise<{ verifications: KeyVerificationBucket[] }> {
  const end = q.end ?? now;
  const start = q.start ?? end - DAY_MS;
  const problems: FieldProblem[] = [];
  if (q.keyId === undefined && q.ownerId === undefined) problems.push({ path: '/keyId', message: 'keyId or ownerId must be provided' });
  if (start >= end) problems.push({ path: '/start', message: 'must be less than end' });
  if (problems.length) throw invalid(problems);

  let keys: Array<{ id: string; api_id: string }>;
  if (q.keyId !== undefined) {
    keys = [await requireKey(db, caller.workspaceId, q.keyId)];
  } else {
    keys = await db
      .selectFrom('keys')
      .innerJoin('identities', 'identities.id', 'keys.identity_id')
      .innerJoin('apis', 'apis.id', 'keys.api_id')
      .select(['keys.id', 'keys.api_id'])
      .where('keys.workspace_id', '=', caller.workspaceId)
      .where('identities.external_id', '=', q.ownerId!)
      .where('keys.deleted_at', 'is', null)
      .where('apis.deleted_at', 'is', null)
      .orderBy('keys.id')
      .execute();
    if (keys.length === 0) throw new AppError('data/key-not-found', `no keys found for ownerId ${q.ownerId}`);
  }
  requirePermissions(caller, ...[...new Set(keys.map((k) => k.api_id))].sort().map((apiId) => `api.${apiId}.read_analytics`));

  const g = q.granularity ?? 'day';
  const { from, to } = widen(start, end, g);
  const rows = await sumHourly(
    db,
    { workspaceId: caller.workspaceId, from, to, keyIds: keys.map((k) => k.id) },
    { hour: true, key: false, identity: false },
  );
  const groups = [...fold(rows, g).values()].sort((a, b) => a.time! - b.time!);
  return {
    verifications: groups.map(({ time, counts: c }) => ({
      time: time!,
      success: c.valid,
      rateLimited: c.rateLimited,
      usageExceeded: c.usageExceeded,
      forbidden: c.forbidden,
      disabled: c.disabled,
      insufficientPermissions: c.insufficientPermissions,
      expired: c.expired,
      total: c.total,
    })),
  };
}

// ---------------------------------------------------------------------------------------------------
// analytics.getVerifications

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

export interface ApiVerificationsQuery {
  apiId: string;
  start: number;
  end?: number;
  keyId?: string | string[];
  externalId?: string;
  groupBy?: Grouping | Grouping[];
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
 * keys (`keyId`, one or repeated) or of one identity (`externalId`), grouped by at most one time unit
 * (hour, day, month: UTC buckets) and/or by key and/or identity. Without any grouping: one row of totals.
 *
 * Grouped by time alone, the series is complete: every bucket from start to end, zero-filled (at most
 * MAX_BUCKETS). Combined with key or identity, only (bucket, key/identity) pairs with data are listed.
 * Grouped by identity, verifications of keys without an identity (or of a deleted identity) are left out.
 * Rows are ordered by `orderBy` (default `time` when grouped by time) in `order` (default asc), ties by
 * time, then keyId, then identity externalId, ascending; then cut to `limit`.
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
  if (problems.length) throw invalid(problems);

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

/** The query's cross-field problems: an empty window, several time groupings, ordering by time without one, too many buckets. */
function apiQueryProblems(q: ApiVerificationsQuery, end: number, timeGroups: Granularity[]): FieldProblem[] {
  const g: Granularity | undefined = timeGroups[0];
  const problems: FieldProblem[] = [];
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
