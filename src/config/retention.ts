/** The retention settings (part of loadConfig, and alone for `keyhold maintenance prune`). */
import { ConfigError, wholeNumberFrom } from './shapes.ts';

/** Days each kind of data is kept (0: forever) and the background prune pass's interval (0: no background pass). */
export interface RetentionConfig {
  /** KEYHOLD_ANALYTICS_RETENTION_DAYS: per-hour roll-ups of verifications and rate-limit checks. */
  analyticsDays: number;
  /** KEYHOLD_ANALYTICS_RAW_RETENTION_DAYS: raw verification and rate-limit events. */
  analyticsRawDays: number;
  /** KEYHOLD_ANALYTICS_MINUTE_RETENTION_DAYS: per-minute roll-ups. */
  analyticsMinuteDays: number;
  /** KEYHOLD_ANALYTICS_DAY_RETENTION_DAYS: per-day and per-month roll-ups. */
  analyticsDayDays: number;
  /** KEYHOLD_AUDIT_RETENTION_DAYS: audit log records. */
  auditDays: number;
  /** KEYHOLD_DELETED_RETENTION_DAYS: soft-deleted keys and APIs (and what hangs off them), counted from their deletion. */
  deletedDays: number;
  /** KEYHOLD_FINISHED_RETENTION_DAYS: failed jobs and finished key migrations with their items, counted from their end. */
  finishedDays: number;
  /** KEYHOLD_PRUNE_INTERVAL_MINUTES: minutes between background passes. */
  pruneIntervalMinutes: number;
}

const MAX_RETENTION_DAYS = 36_500;

/** The KEYHOLD_*_RETENTION_DAYS and KEYHOLD_PRUNE_INTERVAL_MINUTES settings; each invalid one adds a line to `problems`. */
export function retentionFrom(env: NodeJS.ProcessEnv, problems: string[]): RetentionConfig {
  const days = (name: string, fallback: number, what: string) =>
    wholeNumberFrom(env, name, fallback, { min: 0, max: MAX_RETENTION_DAYS }, `the days ${what} are kept (0: forever)`, problems);
  return {
    analyticsDays: days('KEYHOLD_ANALYTICS_RETENTION_DAYS', 90, 'per-hour analytics roll-ups'),
    analyticsRawDays: days('KEYHOLD_ANALYTICS_RAW_RETENTION_DAYS', 30, 'raw analytics events'),
    analyticsMinuteDays: days('KEYHOLD_ANALYTICS_MINUTE_RETENTION_DAYS', 7, 'per-minute analytics roll-ups'),
    analyticsDayDays: days('KEYHOLD_ANALYTICS_DAY_RETENTION_DAYS', 730, 'per-day and per-month analytics roll-ups'),
    auditDays: days('KEYHOLD_AUDIT_RETENTION_DAYS', 365, 'audit log records'),
    deletedDays: days('KEYHOLD_DELETED_RETENTION_DAYS', 30, 'deleted keys and APIs'),
    finishedDays: days('KEYHOLD_FINISHED_RETENTION_DAYS', 30, 'failed jobs and finished key migrations'),
    pruneIntervalMinutes: wholeNumberFrom(
      env,
      'KEYHOLD_PRUNE_INTERVAL_MINUTES',
      60,
      { min: 0, max: 10_080 },
      'the minutes between background prune passes (0: none; run `keyhold maintenance prune` instead)',
      problems,
    ),
  };
}

/** The retention settings alone, for the CLI (`keyhold maintenance prune`). */
export function loadRetentionConfig(env: NodeJS.ProcessEnv = process.env): RetentionConfig {
  const problems: string[] = [];
  const retention = retentionFrom(env, problems);
  if (problems.length) throw new ConfigError(problems);
  return retention;
}
