import { VERIFICATION_FORMS } from '../rollup-forms.ts';

/**
 * The public side of analytics queries: the tables a query may name (Unkey v2's names), their columns with
 * ClickHouse's types, the physical table behind each and how long it keeps rows.
 */

/** A value's type as the compiler tracks it (ClickHouse's, simplified). DateTime and Date values are ms since the epoch. */
export type ValueType = 'int' | 'float' | 'string' | 'bool' | 'datetime' | 'date' | 'array' | 'interval' | 'null' | 'any';

/** Which family of tables a query reads: analytics.getVerifications' or analytics.getRatelimits'. */
export type AnalyticsSource = 'verifications' | 'ratelimits';

export interface PublicColumn {
  /** The column of the physical table it reads. */
  physical: string;
  type: ValueType;
}

export interface PublicTable {
  name: string;
  source: AnalyticsSource;
  physical: string;
  /** How far back the table keeps rows (its retention); a query's range may not start earlier. */
  retentionDays: number;
  columns: Record<string, PublicColumn>;
  /** A roll-up's summed columns (public names): what its coarser forms add up. */
  summed?: ReadonlySet<string>;
  /** A roll-up's coarser forms, coarsest first: each one's table and the physical columns it has (compile-projection.ts). */
  forms?: ReadonlyArray<{ physical: string; columns: ReadonlySet<string> }>;
}

const col = (physical: string, type: ValueType): PublicColumn => ({ physical, type });
const str = (physical: string): PublicColumn => col(physical, 'string');

/** `api_id`/`apiId` name the key space (an API's id is its key space id here), `externalId` the external id. */
const VERIFICATION_IDS: Record<string, PublicColumn> = {
  workspace_id: str('workspace_id'),
  key_space_id: str('key_space_id'),
  api_id: str('key_space_id'),
  apiId: str('key_space_id'),
  identity_id: str('identity_id'),
  external_id: str('external_id'),
  externalId: str('external_id'),
  key_id: str('key_id'),
  outcome: str('outcome'),
  tags: col('tags', 'array'),
  spent_credits: col('spent_credits', 'int'),
};

const RATELIMIT_IDS: Record<string, PublicColumn> = {
  workspace_id: str('workspace_id'),
  namespace_id: str('namespace_id'),
  identifier: str('identifier'),
};

/** Retention in days per granularity (docs/analytics.md). */
export const RETENTION_DAYS = { raw: 30, minute: 7, hour: 90, day: 730, month: 730 } as const;
type Grain = keyof typeof RETENTION_DAYS;
const ROLLUPS = ['minute', 'hour', 'day', 'month'] as const;
const rollupTime = (grain: Grain): PublicColumn => col('time', grain === 'day' || grain === 'month' ? 'date' : 'datetime');

function verificationTables(): PublicTable[] {
  const raw: PublicTable = {
    name: 'key_verifications_v1',
    source: 'verifications',
    physical: 'analytics_key_verifications',
    retentionDays: RETENTION_DAYS.raw,
    columns: {
      request_id: str('request_id'),
      time: col('time', 'int'),
      ...VERIFICATION_IDS,
      region: str('region'),
      latency: col('latency', 'float'),
    },
  };
  return [
    raw,
    ...ROLLUPS.map((grain) => ({
      name: `key_verifications_per_${grain}_v1`,
      source: 'verifications' as const,
      physical: `analytics_key_verifications_per_${grain}`,
      retentionDays: RETENTION_DAYS[grain],
      columns: { time: rollupTime(grain), ...VERIFICATION_IDS, count: col('count', 'int'), latency_sum: col('latency_sum', 'float') },
      summed: new Set(['count', 'spent_credits', 'latency_sum']),
      forms: (['by_api', 'by_key'] as const).map((form) => ({
        physical: `analytics_key_verifications_per_${grain}_${form}`,
        columns: new Set<string>([...VERIFICATION_FORMS[form], 'count', 'spent_credits', 'latency_sum']),
      })),
    })),
  ];
}

function ratelimitTables(): PublicTable[] {
  const raw: PublicTable = {
    name: 'ratelimits_v1',
    source: 'ratelimits',
    physical: 'analytics_ratelimits',
    retentionDays: RETENTION_DAYS.raw,
    columns: {
      request_id: str('request_id'),
      time: col('time', 'int'),
      ...RATELIMIT_IDS,
      passed: col('passed', 'bool'),
      latency: col('latency', 'float'),
    },
  };
  return [
    raw,
    ...ROLLUPS.map((grain) => ({
      name: `ratelimits_per_${grain}_v1`,
      source: 'ratelimits' as const,
      physical: `analytics_ratelimits_per_${grain}`,
      retentionDays: RETENTION_DAYS[grain],
      columns: { time: rollupTime(grain), ...RATELIMIT_IDS, passed: col('passed', 'int'), total: col('total', 'int') },
    })),
  ];
}

/** Every public table by name. */
export const PUBLIC_TABLES: ReadonlyMap<string, PublicTable> = new Map(
  [...verificationTables(), ...ratelimitTables()].map((t) => [t.name, t]),
);

/** The column the caller's scope restricts (API or namespace permissions) for each source. */
export const SCOPE_COLUMN: Record<AnalyticsSource, string> = { verifications: 'key_space_id', ratelimits: 'namespace_id' };

/**
 * Unkey's allow-list (go/pkg/clickhouse/query-parser/validation.go), by lower-case name → ClickHouse's spelling.
 * Matching is case-insensitive, as there.
 */
export const ALLOWED_FUNCTIONS: ReadonlyMap<string, string> = new Map(
  [
    ...['count', 'sum', 'avg', 'min', 'max', 'any', 'groupArray', 'groupUniqArray', 'uniq', 'uniqExact', 'quantile'],
    ...['now', 'now64', 'today', 'toDate', 'toDateTime', 'toDateTime64', 'date_trunc', 'formatDateTime'],
    ...['toStartOfMinute', 'toStartOfHour', 'toStartOfDay', 'toStartOfWeek', 'toStartOfMonth', 'toStartOfQuarter', 'toStartOfYear'],
    ...['fromUnixTimestamp64Milli', 'toUnixTimestamp64Milli'],
    ...['Millisecond', 'Second', 'Minute', 'Hour', 'Day', 'Week', 'Month', 'Quarter', 'Year'].map((u) => `toInterval${u}`),
    ...['lower', 'upper', 'substring', 'concat', 'length', 'trim', 'startsWith', 'endsWith'],
    ...['round', 'floor', 'ceil', 'abs', 'if', 'sumIf', 'countIf', 'coalesce'],
    ...['toString', 'toInt32', 'toInt64', 'toFloat64', 'has', 'hasAny', 'hasAll', 'arrayJoin', 'arrayFilter'],
  ].map((name) => [name.toLowerCase(), name]),
);

/** The aggregate functions among them (a SELECT with one groups its rows). */
export const AGGREGATES: ReadonlySet<string> = new Set([
  'count',
  'sum',
  'avg',
  'min',
  'max',
  'any',
  'groupArray',
  'groupUniqArray',
  'uniq',
  'uniqExact',
  'quantile',
  'sumIf',
  'countIf',
]);
