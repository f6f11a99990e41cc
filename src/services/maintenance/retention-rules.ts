import { sql, type RawBuilder } from 'kysely';
import type { RetentionConfig } from '../../config/retention.ts';
import type { Database } from '../../store/schema.ts';
import type { Grain } from '../analytics/rollups.ts';
import { VERIFICATION_FORMS } from '../analytics/rollup-forms.ts';

/** What the retention pass removes, one name per kind of row (`keyhold maintenance prune` prints these). */
export type PruneKind =
  | 'verification_events'
  | 'verifications_per_minute'
  | 'verifications'
  | 'verifications_per_day'
  | 'verifications_per_month'
  | 'ratelimit_events'
  | 'ratelimits_per_minute'
  | 'ratelimit_analytics'
  | 'ratelimits_per_day'
  | 'ratelimits_per_month'
  | 'audit_logs'
  | 'deleted_keys'
  | 'deleted_apis'
  | 'failed_jobs'
  | 'migration_items'
  | 'migrations'
  | 'webhook_deliveries'
  | 'webhook_events'
  | 'usage_reports'
  | 'dashboard_links'
  | 'dashboard_sessions';

const DAY_MS = 86_400_000;

/**
 * One kind of row that retention removes: its table, how long it is kept (ms; 0: forever) and which rows are
 * due at a cutoff (rows older than the cutoff, in the kind's own sense of "older").
 */
export interface RetentionRule {
  kind: PruneKind;
  table: keyof Database;
  /** The primary key of a table stored WITHOUT ROWID on SQLite, which its rows are deleted by. */
  primaryKey?: readonly string[];
  keepMs(retention: RetentionConfig): number;
  due(cutoff: number): RawBuilder<unknown>;
}

const days = (n: number) => n * DAY_MS;

/** An analytics table's rule: rows whose bucket (or event) time is before the cutoff. */
const analyticsRule = (kind: PruneKind, table: keyof Database, keepDays: (r: RetentionConfig) => number): RetentionRule[] => [
  { kind, table, keepMs: (r) => days(keepDays(r)), due: (cutoff) => sql`"time" < ${cutoff}` },
];

/** A verification roll-up's rules: the roll-up and its coarser forms (rollup-forms.ts, WITHOUT ROWID), one kind. */
const verificationRollupRules = (kind: PruneKind, grain: Grain, keepDays: (r: RetentionConfig) => number): RetentionRule[] => [
  ...analyticsRule(kind, `analytics_key_verifications_per_${grain}`, keepDays),
  ...Object.entries(VERIFICATION_FORMS).flatMap(([form, group]) =>
    analyticsRule(kind, `analytics_key_verifications_per_${grain}_${form}` as keyof Database, keepDays).map((rule) => ({
      ...rule,
      primaryKey: group,
    })),
  ),
];

/**
 * A key migration is finished and old when it was last changed (created, or keys enqueued) before the cutoff,
 * none of its items is pending, and no key still waits under its hash algorithm (its first verification
 * needs the migration to rehash it). Each test is an index lookup (items by migration and status, keys by
 * pending migration), so a batch costs the same however many items a migration has; items are imported
 * minutes after they are enqueued, so their own times say nothing the migration's does not.
 */
const finishedMigration = (cutoff: number) => sql`select m.id from key_migrations m
  where m.updated_at < ${cutoff}
    and not exists (select 1 from key_migration_items i where i.migration_id = m.id and i.status = 'pending')
    and not exists (select 1 from keys k where k.pending_migration_id = m.id)`;

/**
 * Every kind, in the order a pass removes them: a deleted key before its API (an API is removed only once
 * none of its keys is left, so a removal never cascades to a live key), a migration's items before the
 * migration. Removing a key cascades to its roles, permissions, rate limits and encrypted copy (foreign
 * keys); its hourly analytics stay until their own retention.
 */
export const RETENTION_RULES: readonly RetentionRule[] = [
  // Analytics: raw events and roll-ups, each by its own retention (on PostgreSQL the raw tables' whole days are
  // dropped as partitions first: prune.ts). `verifications` and `ratelimit_analytics` are the per-hour roll-ups.
  ...analyticsRule('verification_events', 'analytics_key_verifications', (r) => r.analyticsRawDays),
  ...verificationRollupRules('verifications_per_minute', 'minute', (r) => r.analyticsMinuteDays),
  ...verificationRollupRules('verifications', 'hour', (r) => r.analyticsDays),
  ...verificationRollupRules('verifications_per_day', 'day', (r) => r.analyticsDayDays),
  ...verificationRollupRules('verifications_per_month', 'month', (r) => r.analyticsDayDays),
  ...analyticsRule('ratelimit_events', 'analytics_ratelimits', (r) => r.analyticsRawDays),
  ...analyticsRule('ratelimits_per_minute', 'analytics_ratelimits_per_minute', (r) => r.analyticsMinuteDays),
  ...analyticsRule('ratelimit_analytics', 'analytics_ratelimits_per_hour', (r) => r.analyticsDays),
  ...analyticsRule('ratelimits_per_day', 'analytics_ratelimits_per_day', (r) => r.analyticsDayDays),
  ...analyticsRule('ratelimits_per_month', 'analytics_ratelimits_per_month', (r) => r.analyticsDayDays),
  {
    kind: 'audit_logs',
    table: 'audit_logs',
    keepMs: (r) => days(r.auditDays),
    due: (cutoff) => sql`created_at < ${cutoff}`,
  },
  {
    kind: 'deleted_keys',
    table: 'keys',
    keepMs: (r) => days(r.deletedDays),
    due: (cutoff) => sql`deleted_at is not null and deleted_at < ${cutoff}`,
  },
  {
    kind: 'deleted_apis',
    table: 'apis',
    keepMs: (r) => days(r.deletedDays),
    due: (cutoff) => sql`deleted_at is not null and deleted_at < ${cutoff} and not exists (select 1 from keys k where k.api_id = apis.id)`,
  },
  {
    kind: 'failed_jobs',
    table: 'jobs',
    keepMs: (r) => days(r.finishedDays),
    due: (cutoff) => sql`status = 'failed' and updated_at < ${cutoff}`,
  },
  {
    kind: 'migration_items',
    table: 'key_migration_items',
    keepMs: (r) => days(r.finishedDays),
    due: (cutoff) => sql`migration_id in (${finishedMigration(cutoff)})`,
  },
  {
    kind: 'migrations',
    table: 'key_migrations',
    keepMs: (r) => days(r.finishedDays),
    due: (cutoff) =>
      sql`id in (${finishedMigration(cutoff)}) and not exists (select 1 from key_migration_items i where i.migration_id = key_migrations.id)`,
  },
  // A webhook delivery that is over (delivered, or failed for good), then an event none of whose deliveries is left.
  {
    kind: 'webhook_deliveries',
    table: 'webhook_deliveries',
    keepMs: (r) => days(r.finishedDays),
    due: (cutoff) => sql`status in ('delivered', 'failed') and updated_at < ${cutoff}`,
  },
  {
    kind: 'webhook_events',
    table: 'webhook_events',
    keepMs: (r) => days(r.finishedDays),
    due: (cutoff) => sql`created_at < ${cutoff} and not exists (select 1 from webhook_deliveries d where d.event_id = webhook_events.id)`,
  },
  // A usage report that is over (delivered, or failed for good): the export's cursor, not its reports, says what was reported.
  {
    kind: 'usage_reports',
    table: 'usage_reports',
    keepMs: (r) => days(r.finishedDays),
    due: (cutoff) => sql`status in ('delivered', 'failed') and updated_at < ${cutoff}`,
  },
  // Sign-in links and sessions are of no use once expired; a day's grace keeps them for a look after the fact.
  { kind: 'dashboard_links', table: 'dashboard_links', keepMs: () => DAY_MS, due: (cutoff) => sql`expires_at < ${cutoff}` },
  { kind: 'dashboard_sessions', table: 'dashboard_sessions', keepMs: () => DAY_MS, due: (cutoff) => sql`expires_at < ${cutoff}` },
];
