import { type CreateTableBuilder, type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: this file never imports application types. Analytics events and their roll-ups.
//
// Raw events, one row per verification (`analytics_key_verifications`) and per rate-limit check
// (`analytics_ratelimits`), written in batches from memory; and their roll-ups per minute, hour, day and month
// (UTC bucket starts, ms; a month's bucket is its first day), upserted (count += …) in the transaction that
// writes the raw rows, never recomputed per query.
//
// - `time` columns: ms since the epoch. `key_space_id`: the API's id (`api_…`; Keyhold has no separate keyspace id).
// - `identity_id`, `external_id`: '' when the key has no identity (never NULL: they are part of the roll-ups'
//   unique key, where NULLs would never conflict).
// - `tags`: SQLite: text, a JSON array of strings exactly as the request gave them ('[]' when none);
//   PostgreSQL: text[] (default '{}'). Tags are part of a roll-up's group, as given (order included).
// - `passed` of raw rate-limit events: integer 0/1 on both dialects.
// - PostgreSQL: the raw tables are PARTITION BY RANGE ("time"), one partition per UTC day named
//   `<table>_pYYYYMMDD`, created ahead by the writer; `<table>_default` takes any row no day partition covers
//   (so an insert never fails), and the writer moves such rows when it creates their day. Pruning drops whole
//   day partitions. No primary key on raw rows (it would have to include "time"; inserts stay cheap).
// - Indexes: raw (workspace_id, time); SQLite raw also (time), for pruning by delete. Roll-ups: the unique
//   group (workspace_id, time, …) and (time), for pruning.
// The old hourly tables (key_verifications_hourly, ratelimit_hourly) are folded into the per-hour/day/month
// roll-ups and dropped by the next migration (0012); keys.getVerifications, analytics.getVerifications,
// ratelimits.getAnalytics and the dashboard read the roll-ups since.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
type Db = Kysely<any>;
// biome-ignore lint/suspicious/noExplicitAny: as above
type Table = CreateTableBuilder<any, any>;

const GRAINS = ['minute', 'hour', 'day', 'month'] as const;

const isPostgres = (db: Db) => db.getExecutor().adapter instanceof PostgresAdapter;

function tagsColumn(t: Table, pg: boolean): Table {
  return pg
    ? t.addColumn('tags', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    : t.addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'));
}

async function createRaw(db: Db, name: string, columns: (t: Table) => Table, pg: boolean): Promise<void> {
  let t = columns(db.schema.createTable(name));
  if (pg) t = t.modifyEnd(sql`partition by range ("time")`);
  await t.execute();
  if (pg) await sql`create table ${sql.table(`${name}_default`)} partition of ${sql.table(name)} default`.execute(db);
  await db.schema.createIndex(`${name}_workspace_time`).on(name).columns(['workspace_id', 'time']).execute();
  if (!pg) await db.schema.createIndex(`${name}_time`).on(name).column('time').execute();
}

export async function up(db: Db): Promise<void> {
  const pg = isPostgres(db);
  const latency = pg ? 'double precision' : 'real';
  await createRaw(
    db,
    'analytics_key_verifications',
    (t) =>
      tagsColumn(
        t
          .addColumn('request_id', 'text', (c) => c.notNull())
          .addColumn('time', 'bigint', (c) => c.notNull())
          .addColumn('workspace_id', 'text', (c) => c.notNull())
          .addColumn('key_space_id', 'text', (c) => c.notNull())
          .addColumn('identity_id', 'text', (c) => c.notNull().defaultTo(''))
          .addColumn('external_id', 'text', (c) => c.notNull().defaultTo(''))
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('region', 'text', (c) => c.notNull())
          .addColumn('outcome', 'text', (c) => c.notNull()),
        pg,
      )
        .addColumn('spent_credits', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('latency', latency, (c) => c.notNull().defaultTo(0)),
    pg,
  );
  await createRaw(
    db,
    'analytics_ratelimits',
    (t) =>
      t
        .addColumn('request_id', 'text', (c) => c.notNull())
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('workspace_id', 'text', (c) => c.notNull())
        .addColumn('namespace_id', 'text', (c) => c.notNull())
        .addColumn('identifier', 'text', (c) => c.notNull())
        .addColumn('passed', 'integer', (c) => c.notNull())
        .addColumn('latency', latency, (c) => c.notNull().defaultTo(0)),
    pg,
  );
  for (const grain of GRAINS) {
    const v = `analytics_key_verifications_per_${grain}`;
    await tagsColumn(
      db.schema
        .createTable(v)
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('workspace_id', 'text', (c) => c.notNull())
        .addColumn('key_space_id', 'text', (c) => c.notNull())
        .addColumn('identity_id', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('external_id', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull()),
      pg,
    )
      .addColumn('count', 'bigint', (c) => c.notNull())
      .addColumn('spent_credits', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('latency_sum', latency, (c) => c.notNull().defaultTo(0))
      .addUniqueConstraint(`${v}_group`, [
        'workspace_id',
        'time',
        'key_space_id',
        'key_id',
        'identity_id',
        'external_id',
        'outcome',
        'tags',
      ])
      .execute();
    await db.schema.createIndex(`${v}_time`).on(v).column('time').execute();

    const r = `analytics_ratelimits_per_${grain}`;
    await db.schema
      .createTable(r)
      .addColumn('time', 'bigint', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('namespace_id', 'text', (c) => c.notNull())
      .addColumn('identifier', 'text', (c) => c.notNull())
      .addColumn('passed', 'bigint', (c) => c.notNull())
      .addColumn('total', 'bigint', (c) => c.notNull())
      .addUniqueConstraint(`${r}_group`, ['workspace_id', 'time', 'namespace_id', 'identifier'])
      .execute();
    await db.schema.createIndex(`${r}_time`).on(r).column('time').execute();
  }
}

export async function down(db: Db): Promise<void> {
  for (const grain of GRAINS) {
    await db.schema.dropTable(`analytics_key_verifications_per_${grain}`).execute();
    await db.schema.dropTable(`analytics_ratelimits_per_${grain}`).execute();
  }
  // Dropping a partitioned table drops its partitions.
  await db.schema.dropTable('analytics_key_verifications').execute();
  await db.schema.dropTable('analytics_ratelimits').execute();
}
