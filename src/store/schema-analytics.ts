/**
 * Row types of the analytics tables (schema migration 0011), as Kysely sees them. Times are epoch ms (a roll-up's:
 * its UTC bucket start). `tags`: on SQLite text holding a JSON array of strings, on PostgreSQL text[].
 * `identity_id`, `external_id`: '' when none.
 */
export type TagsColumn = string | string[];

export interface AnalyticsKeyVerificationRow {
  request_id: string;
  time: number;
  workspace_id: string;
  /** The API's id. */
  key_space_id: string;
  identity_id: string;
  external_id: string;
  key_id: string;
  region: string;
  /** The verify code: VALID, RATE_LIMITED, USAGE_EXCEEDED, … */
  outcome: string;
  tags: TagsColumn;
  spent_credits: number;
  /** ms. */
  latency: number;
}
export interface AnalyticsKeyVerificationRollupRow {
  time: number;
  workspace_id: string;
  key_space_id: string;
  identity_id: string;
  external_id: string;
  key_id: string;
  outcome: string;
  tags: TagsColumn;
  count: number;
  spent_credits: number;
  latency_sum: number;
}
/** A coarser form of a verification roll-up (migration 0014): `by_key` without tags, `by_api` per API and outcome. */
export type AnalyticsKeyVerificationByKeyRow = Omit<AnalyticsKeyVerificationRollupRow, 'tags'>;
export type AnalyticsKeyVerificationByApiRow = Omit<AnalyticsKeyVerificationByKeyRow, 'key_id' | 'identity_id' | 'external_id'>;
export interface AnalyticsRatelimitRow {
  request_id: string;
  time: number;
  workspace_id: string;
  namespace_id: string;
  identifier: string;
  /** 0/1. */
  passed: number;
  latency: number;
}
export interface AnalyticsRatelimitRollupRow {
  time: number;
  workspace_id: string;
  namespace_id: string;
  identifier: string;
  passed: number;
  total: number;
}

export interface AnalyticsTables {
  analytics_key_verifications: AnalyticsKeyVerificationRow;
  analytics_key_verifications_per_minute: AnalyticsKeyVerificationRollupRow;
  analytics_key_verifications_per_hour: AnalyticsKeyVerificationRollupRow;
  analytics_key_verifications_per_day: AnalyticsKeyVerificationRollupRow;
  analytics_key_verifications_per_month: AnalyticsKeyVerificationRollupRow;
  analytics_key_verifications_per_minute_by_key: AnalyticsKeyVerificationByKeyRow;
  analytics_key_verifications_per_hour_by_key: AnalyticsKeyVerificationByKeyRow;
  analytics_key_verifications_per_day_by_key: AnalyticsKeyVerificationByKeyRow;
  analytics_key_verifications_per_month_by_key: AnalyticsKeyVerificationByKeyRow;
  analytics_key_verifications_per_minute_by_api: AnalyticsKeyVerificationByApiRow;
  analytics_key_verifications_per_hour_by_api: AnalyticsKeyVerificationByApiRow;
  analytics_key_verifications_per_day_by_api: AnalyticsKeyVerificationByApiRow;
  analytics_key_verifications_per_month_by_api: AnalyticsKeyVerificationByApiRow;
  analytics_ratelimits: AnalyticsRatelimitRow;
  analytics_ratelimits_per_minute: AnalyticsRatelimitRollupRow;
  analytics_ratelimits_per_hour: AnalyticsRatelimitRollupRow;
  analytics_ratelimits_per_day: AnalyticsRatelimitRollupRow;
  analytics_ratelimits_per_month: AnalyticsRatelimitRollupRow;
}
