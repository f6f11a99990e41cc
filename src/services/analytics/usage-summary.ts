import { notFound } from '../../domain/errors.ts';
import type { Db } from '../../store/store.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { requireApi, requireKey } from '../lookups.ts';
import { HOUR_MS, RECORDED_CODES, type RecordedCode } from '../verification/verification-recorder.ts';
import { bucketOf, MINUTE_MS } from './rollups.ts';
import { sumByTag, type SummaryFilter, type SummaryTable } from './usage-tags.ts';
import type { VerificationForm } from './rollup-forms.ts';

// The dashboard's usage summary: verifications over a recent range by outcome, the top keys, identities and tags,
// and credits spent, read from the roll-ups (never the raw events): per minute for the last hour, per hour for the
// last 24 hours and 7 days, per day for the last 30 days.

type SummaryGrain = 'minute' | 'hour' | 'day';

const STEP: Record<SummaryGrain, number> = { minute: MINUTE_MS, hour: HOUR_MS, day: 24 * HOUR_MS };

/** The ranges a summary covers: the roll-up it reads and how many buckets of it (the last one is the current one). */
export const USAGE_RANGES = {
  '1h': { grain: 'minute', buckets: 60 },
  '24h': { grain: 'hour', buckets: 24 },
  '7d': { grain: 'hour', buckets: 168 },
  '30d': { grain: 'day', buckets: 30 },
} as const satisfies Record<string, { grain: SummaryGrain; buckets: number }>;
export type UsageRange = keyof typeof USAGE_RANGES;

/** The range a text names (a page's `?range=`), the last 24 hours when it names none. */
export const usageRangeOf = (value: string | undefined): UsageRange =>
  value !== undefined && Object.hasOwn(USAGE_RANGES, value) ? (value as UsageRange) : '24h';

/** Whose verifications: an API's, a key's or an identity's (across the workspace's APIs). */
export type UsageScope = { apiId: string } | { keyId: string } | { identityId: string };

/** How many keys, identities and tags the summary ranks. */
export const TOP = 10;

export type OutcomeCounts = Record<RecordedCode, number>;
export interface UsageBucket {
  /** The bucket's UTC start, ms. */
  time: number;
  outcomes: OutcomeCounts;
  total: number;
  spentCredits: number;
}
/** Verifications of one key or identity in the range: all of them, the valid ones, and the credits they spent. */
export interface UsageRank {
  count: number;
  valid: number;
  spentCredits: number;
}
export interface UsageSummary {
  range: UsageRange;
  grain: SummaryGrain;
  /** [from, to): the first bucket's start and the end of the last (current) one. */
  from: number;
  to: number;
  /** Every bucket of the range, oldest first, zero-filled. */
  buckets: UsageBucket[];
  outcomes: OutcomeCounts;
  total: number;
  spentCredits: number;
  /** Most verifications first, ties by id; `live`: the key (identity) is still there. */
  topKeys: Array<UsageRank & { keyId: string; name: string | null; start: string | null; live: boolean }>;
  topIdentities: Array<UsageRank & { identityId: string; externalId: string; live: boolean }>;
  topTags: Array<{ tag: string; count: number }>;
}

const noOutcomes = (): OutcomeCounts => Object.fromEntries(RECORDED_CODES.map((c) => [c, 0])) as OutcomeCounts;

/**
 * The usage summary of an API, a key or an identity of the caller's workspace over `range` ending now. Another
 * workspace's API, key or identity is a 404. Requires `api.<apiId>.read_analytics` for an API or a key (its
 * API's), `api.*.read_analytics` for an identity (its keys may belong to any API).
 */
export async function usageSummary(db: Db, caller: Caller, scope: UsageScope, range: UsageRange, now = Date.now()): Promise<UsageSummary> {
  const { grain, buckets: n } = USAGE_RANGES[range];
  const step = STEP[grain];
  const last = bucketOf(now, grain);
  const f: SummaryFilter = {
    table: `analytics_key_verifications_per_${grain}` as SummaryTable,
    workspaceId: caller.workspaceId,
    from: last - (n - 1) * step,
    to: last + step,
    ...(await scopeColumn(db, caller, scope)),
  };
  const [series, topKeys, topIdentities, topTags] = await Promise.all([
    sumSeries(db, f),
    rankKeys(db, f),
    rankIdentities(db, f),
    sumByTag(db, f, TOP),
  ]);
  const buckets: UsageBucket[] = Array.from({ length: n }, (_, i) => ({
    time: f.from + i * step,
    outcomes: noOutcomes(),
    total: 0,
    spentCredits: 0,
  }));
  const outcomes = noOutcomes();
  for (const row of series) {
    const bucket = buckets[Math.round((row.time - f.from) / step)];
    if (bucket === undefined || !(row.outcome in outcomes)) continue;
    bucket.outcomes[row.outcome as RecordedCode] += row.count;
    bucket.total += row.count;
    bucket.spentCredits += row.spentCredits;
    outcomes[row.outcome as RecordedCode] += row.count;
  }
  const total = buckets.reduce((sum, b) => sum + b.total, 0);
  const spentCredits = buckets.reduce((sum, b) => sum + b.spentCredits, 0);
  return { range, grain, from: f.from, to: f.to, buckets, outcomes, total, spentCredits, topKeys, topIdentities, topTags };
}

/** The roll-up column and value the scope names, once the scope is found in the caller's workspace and may be read. */
async function scopeColumn(db: Db, caller: Caller, scope: UsageScope): Promise<Pick<SummaryFilter, 'column' | 'value'>> {
  if ('apiId' in scope) {
    await requireApi(db, caller.workspaceId, scope.apiId);
    requirePermissions(caller, `api.${scope.apiId}.read_analytics`);
    return { column: 'key_space_id', value: scope.apiId };
  }
  if ('keyId' in scope) {
    const key = await requireKey(db, caller.workspaceId, scope.keyId);
    requirePermissions(caller, `api.${key.api_id}.read_analytics`);
    return { column: 'key_id', value: key.id };
  }
  const identity = await db
    .selectFrom('identities')
    .select('id')
    .where('workspace_id', '=', caller.workspaceId)
    .where('id', '=', scope.identityId)
    .executeTakeFirst();
  if (!identity) throw notFound('identity', scope.identityId);
  requirePermissions(caller, 'api.*.read_analytics');
  return { column: 'identity_id', value: identity.id };
}

/**
 * The filter's rows of the roll-up's coarser form `form` (rollup-forms.ts; the same sums without tags, or per API
 * and outcome only): the workspace always, the range, and the scope's column.
 */
const rows = (db: Db, f: SummaryFilter, form: VerificationForm) =>
  db
    .selectFrom(`${f.table}_${form}` as 'analytics_key_verifications_per_hour_by_key')
    .where('workspace_id', '=', f.workspaceId)
    .where('time', '>=', f.from)
    .where('time', '<', f.to)
    .where(f.column, '=', f.value);

async function sumSeries(db: Db, f: SummaryFilter): Promise<Array<{ time: number; outcome: string; count: number; spentCredits: number }>> {
  const found = await rows(db, f, f.column === 'key_space_id' ? 'by_api' : 'by_key')
    .select((eb) => ['time', 'outcome', eb.fn.sum<number | string>('count').as('n'), eb.fn.sum<number | string>('spent_credits').as('c')])
    .groupBy(['time', 'outcome'])
    .execute();
  return found.map((r) => ({ time: Number(r.time), outcome: r.outcome, count: Number(r.n), spentCredits: Number(r.c) }));
}

/** count, valid and spentCredits summed per `column`, the TOP rows with most verifications (ties by id). */
async function rank(db: Db, f: SummaryFilter, column: 'key_id' | 'identity_id'): Promise<Array<UsageRank & { id: string }>> {
  const found = await rows(db, f, 'by_key')
    .$if(column === 'identity_id', (qb) => qb.where('identity_id', '!=', ''))
    .select((eb) => [
      eb.ref(column).as('id'),
      eb.fn.sum<number | string>('count').as('n'),
      eb.fn.sum<number | string>(eb.case().when('outcome', '=', 'VALID').then(eb.ref('count')).else(0).end()).as('valid'),
      eb.fn.sum<number | string>('spent_credits').as('c'),
    ])
    .groupBy(column)
    .orderBy('n', 'desc')
    .orderBy(column)
    .limit(TOP)
    .execute();
  return found.map((r) => ({ id: r.id, count: Number(r.n), valid: Number(r.valid), spentCredits: Number(r.c) }));
}

async function rankKeys(db: Db, f: SummaryFilter): Promise<UsageSummary['topKeys']> {
  const ranked = await rank(db, f, 'key_id');
  if (ranked.length === 0) return [];
  const keys = await db
    .selectFrom('keys')
    .select(['id', 'name', 'start', 'deleted_at'])
    .where('workspace_id', '=', f.workspaceId)
    .where(
      'id',
      'in',
      ranked.map((r) => r.id),
    )
    .execute();
  const byId = new Map(keys.map((k) => [k.id, k]));
  return ranked.map(({ id, ...counts }) => {
    const key = byId.get(id);
    return { keyId: id, name: key?.name ?? null, start: key?.start ?? null, live: key !== undefined && key.deleted_at === null, ...counts };
  });
}

/** Identities by their current externalId; one deleted since keeps the externalId its verifications recorded. */
async function rankIdentities(db: Db, f: SummaryFilter): Promise<UsageSummary['topIdentities']> {
  const ranked = await rank(db, f, 'identity_id');
  if (ranked.length === 0) return [];
  const ids = ranked.map((r) => r.id);
  const [identities, recorded] = await Promise.all([
    db.selectFrom('identities').select(['id', 'external_id']).where('workspace_id', '=', f.workspaceId).where('id', 'in', ids).execute(),
    rows(db, f, 'by_key')
      .select((eb) => ['identity_id', eb.fn.max('external_id').as('external_id')])
      .where('identity_id', 'in', ids)
      .groupBy('identity_id')
      .execute(),
  ]);
  const current = new Map(identities.map((i) => [i.id, i.external_id]));
  const past = new Map(recorded.map((r) => [r.identity_id, r.external_id]));
  return ranked.map(({ id, ...counts }) => ({
    identityId: id,
    externalId: current.get(id) ?? past.get(id) ?? '',
    live: current.has(id),
    ...counts,
  }));
}
