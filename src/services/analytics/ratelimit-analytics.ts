import { sql } from 'kysely';
import { invalid, type FieldProblem } from '../../domain/errors.ts';
import type { Db } from '../../store/store.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { requireNamespace } from '../ratelimits/namespaces.ts';
import { DAY_MS, floorTo, MAX_BUCKETS, widen } from './hourly-sums.ts';
import { HOUR_MS } from '../verification/verification-recorder.ts';

// ratelimits.getAnalytics: reads of the per-hour roll-up `analytics_ratelimits_per_hour` (written by the RatelimitRecorder). As for the
// verification analytics (hourly-sums.ts), the SQL only filters and sums hourly rows; days are folded from
// hours here, in UTC, and a window is widened to whole buckets at both ends.

export const RATELIMIT_GROUPINGS = ['hour', 'day', 'identifier'] as const;
export type RatelimitGrouping = (typeof RATELIMIT_GROUPINGS)[number];
/** Most identifiers one answer grouped by identifier lists (`limit`), and how many when `limit` is absent. */
export const MAX_IDENTIFIERS = 1000;
export const DEFAULT_IDENTIFIERS = 100;

export interface RatelimitAnalyticsQuery {
  namespaceId?: string;
  namespaceName?: string;
  identifier?: string;
  start: number;
  end?: number;
  groupBy?: RatelimitGrouping;
  limit?: number;
}
export interface RatelimitAnalyticsItem {
  time?: number;
  identifier?: string;
  passed: number;
  denied: number;
  total: number;
}

/**
 * Decisions of ratelimits.limit in one namespace (`namespaceId`, or `namespaceName`) in [start, end)
 * (`end` defaults to now), optionally of one identifier (exact match):
 * - `groupBy` `hour` (default) or `day` (UTC): one item per bucket with at least one decision, ascending by
 *   time; the window may span at most MAX_BUCKETS buckets, so at most that many items.
 * - `groupBy` `identifier`: one item per identifier with decisions in the window (whole hours), the most
 *   decisions first (ties by identifier), at most `limit` (default DEFAULT_IDENTIFIERS, at most MAX_IDENTIFIERS).
 * Requires `ratelimit.<namespaceId>.read_namespace`; another workspace's namespace is not found.
 */
export async function getRatelimitAnalytics(
  db: Db,
  caller: Caller,
  q: RatelimitAnalyticsQuery,
  now = Date.now(),
): Promise<{ analytics: RatelimitAnalyticsItem[] }> {
  const end = q.end ?? now;
  const groupBy = q.groupBy ?? 'hour';
  const problems = queryProblems(q, end, groupBy);
  if (problems.length) throw invalid(problems, 'query');

  const ns = await requireNamespace(db, caller.workspaceId, { namespaceId: q.namespaceId, namespaceName: q.namespaceName }, 'query');
  requirePermissions(caller, `ratelimit.${ns.id}.read_namespace`);

  const filter = { workspaceId: caller.workspaceId, namespaceId: ns.id, identifier: q.identifier };
  if (groupBy === 'identifier') {
    const { from, to } = widen(q.start, end, 'hour');
    const rows = await sumByIdentifier(db, { ...filter, from, to }, q.limit ?? DEFAULT_IDENTIFIERS);
    return { analytics: rows.map((r) => ({ identifier: r.identifier, ...counts(r) })) };
  }
  const { from, to } = widen(q.start, end, groupBy);
  const buckets = new Map<number, RatelimitAnalyticsItem>();
  for (const r of await sumByHour(db, { ...filter, from, to })) {
    const time = floorTo(Number(r.hour), groupBy);
    const item = buckets.get(time) ?? { time, passed: 0, denied: 0, total: 0 };
    item.passed += Number(r.passed);
    item.total += Number(r.total);
    item.denied = item.total - item.passed;
    buckets.set(time, item);
  }
  return { analytics: [...buckets.values()].sort((a, b) => a.time! - b.time!) };
}

/** The query's cross-field problems: an empty window, a window of too many buckets, `limit` without identifiers. */
function queryProblems(q: RatelimitAnalyticsQuery, end: number, groupBy: RatelimitGrouping): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (q.start >= end) problems.push({ path: '/start', message: 'must be less than end' });
  else if (groupBy !== 'identifier') {
    const { from, to } = widen(q.start, end, groupBy);
    if ((to - from) / (groupBy === 'hour' ? HOUR_MS : DAY_MS) > MAX_BUCKETS)
      problems.push({
        path: '/start',
        message: `the window spans more than ${MAX_BUCKETS} ${groupBy} buckets; narrow it or group by a larger unit`,
      });
  }
  if (q.limit !== undefined && groupBy !== 'identifier') problems.push({ path: '/limit', message: 'applies only to groupBy identifier' });
  return problems;
}

interface HourlyFilter {
  workspaceId: string;
  namespaceId: string;
  identifier?: string;
  from: number;
  to: number;
}

const counts = (r: { passed: number | string; total: number | string }) => {
  const passed = Number(r.passed);
  const total = Number(r.total);
  return { passed, denied: total - passed, total };
};

/** The per-hour roll-up rows of the namespace in [from, to) (of one identifier, if given), filtered. */
const hourly = (db: Db, f: HourlyFilter) =>
  db
    .selectFrom('analytics_ratelimits_per_hour')
    .select((eb) => [eb.fn.sum<number | string>('passed').as('passed'), eb.fn.sum<number | string>('total').as('total')])
    .where('workspace_id', '=', f.workspaceId)
    .where('namespace_id', '=', f.namespaceId)
    .where('time', '>=', f.from)
    .where('time', '<', f.to)
    .$if(f.identifier !== undefined, (qb) => qb.where('identifier', '=', f.identifier!));

/** Passed and denied per hour with decisions. */
const sumByHour = (db: Db, f: HourlyFilter) =>
  hourly(db, f)
    .select('time as hour')
    .groupBy('time')
    .execute()
    .then((rs) => rs.map((r) => ({ ...r, hour: Number(r.hour) })));

/**
 * Passed and denied per identifier, the `limit` identifiers with the most decisions. Ties are cut by
 * identifier in the database's order, then ordered here by UTF-16 code units, the same on every dialect.
 */
async function sumByIdentifier(db: Db, f: HourlyFilter, limit: number) {
  const rows = await hourly(db, f)
    .select('identifier')
    .groupBy('identifier')
    .orderBy(sql`sum(total)`, 'desc')
    .orderBy('identifier')
    .limit(limit)
    .execute();
  const total = (r: (typeof rows)[number]) => Number(r.total);
  return rows.sort((a, b) => total(b) - total(a) || (a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : 0));
}
