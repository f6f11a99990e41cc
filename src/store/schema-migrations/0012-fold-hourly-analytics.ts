import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: this file never imports application types. One store of analytics: the hourly counts of
// before (key_verifications_hourly, ratelimit_hourly) are added into the per-hour, per-day and per-month roll-ups
// of migration 0011 (tags empty; external_id from the identity when it still exists; no spent credits or
// latency, which were not counted), and the hourly tables are emptied (kept: an older server may still write them). Per-minute roll-ups and raw events of
// that time do not exist: hours cannot be split. Nothing to undo.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
type Db = Kysely<any>;

const DAY_MS = 86_400_000;

/** The SQL of the bucket start of `hour` (ms): itself, its UTC day, or its UTC month's first day. */
function bucket(pg: boolean, grain: 'hour' | 'day' | 'month') {
  if (grain === 'hour') return sql`h.hour`;
  if (grain === 'day') return sql`(h.hour - (h.hour % ${sql.lit(DAY_MS)}))`;
  return pg
    ? sql`cast(extract(epoch from date_trunc('month', to_timestamp(h.hour / 1000.0) at time zone 'UTC')) * 1000 as bigint)`
    : sql`cast(strftime('%s', date(h.hour / 1000, 'unixepoch', 'start of month')) as integer) * 1000`;
}

export async function up(db: Db): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  const noTags = pg ? sql`cast('{}' as text[])` : sql`'[]'`;
  for (const grain of ['hour', 'day', 'month'] as const) {
    const t = bucket(pg, grain);
    await sql`insert into ${sql.table(`analytics_key_verifications_per_${grain}`)}
        (time, workspace_id, key_space_id, identity_id, external_id, key_id, outcome, tags, count, spent_credits, latency_sum)
      select ${t}, h.workspace_id, h.api_id, coalesce(h.identity_id, ''), coalesce(i.external_id, ''), h.key_id, h.outcome,
        ${noTags}, sum(h.count), 0, 0
      from key_verifications_hourly h left join identities i on i.id = h.identity_id
      group by ${t}, h.workspace_id, h.api_id, coalesce(h.identity_id, ''), coalesce(i.external_id, ''), h.key_id, h.outcome
      on conflict (workspace_id, time, key_space_id, key_id, identity_id, external_id, outcome, tags)
      do update set count = ${sql.table(`analytics_key_verifications_per_${grain}`)}.count + excluded.count`.execute(db);
    await sql`insert into ${sql.table(`analytics_ratelimits_per_${grain}`)} (time, workspace_id, namespace_id, identifier, passed, total)
      select ${t}, h.workspace_id, h.namespace_id, h.identifier, sum(h.passed), sum(h.passed + h.denied)
      from ratelimit_hourly h
      group by ${t}, h.workspace_id, h.namespace_id, h.identifier
      on conflict (workspace_id, time, namespace_id, identifier)
      do update set passed = ${sql.table(`analytics_ratelimits_per_${grain}`)}.passed + excluded.passed,
        total = ${sql.table(`analytics_ratelimits_per_${grain}`)}.total + excluded.total`.execute(db);
  }
  // Moved, not dropped: an older server still running during an upgrade keeps writing these tables (migrations
  // only add: docs/production.md, "Upgrades"); a later release drops them once no server writes them.
  await db.deleteFrom('key_verifications_hourly').execute();
  await db.deleteFrom('ratelimit_hourly').execute();
}

export async function down(_db: Db): Promise<void> {
  // The hourly tables are still there (up() emptied them); the counts it moved into the roll-ups stay there.
}
