import { sql } from 'kysely';
import type { Db } from '../../store/store.ts';
import { DAY_MS } from './hourly-sums.ts';

// PostgreSQL: the raw analytics tables are partitioned by day (schema migration 0011): `<table>_pYYYYMMDD`
// holds [day, day + 1 day) of "time" (UTC), `<table>_default` whatever no day partition covers. The writer
// creates the days it writes and the next one ahead; retention drops whole days.

export const RAW_TABLES = ['analytics_key_verifications', 'analytics_ratelimits'] as const;
export type RawTable = (typeof RAW_TABLES)[number];

const dayName = (table: RawTable, day: number) => `${table}_p${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;
const dayOfName = (name: string): number | undefined => {
  const m = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : undefined;
};

/** The partitions each store is known to have (by its Kysely instance), so a batch costs no catalog read. */
const known = new WeakMap<object, Set<string>>();

/** Concurrent creations of one partition by two nodes: the loser's error, harmless once it exists. */
const RACE = new Set(['42P07', '23505', '40P01']);

/**
 * Creates the day partitions of `table` for the days of `times` and the day after the latest, unless known
 * to exist. Rows of such a day already in the default partition (written while it was missing) move into it.
 */
export async function ensureDayPartitions(db: Db, table: RawTable, times: Iterable<number>): Promise<void> {
  const have = known.get(db) ?? new Set<string>();
  known.set(db, have);
  const days = new Set<number>();
  for (const t of times) days.add(t - (((t % DAY_MS) + DAY_MS) % DAY_MS));
  if (days.size > 0) days.add(Math.max(...days) + DAY_MS);
  for (const day of days) {
    const name = dayName(table, day);
    if (have.has(name)) continue;
    try {
      await createDay(db, table, name, day);
    } catch (err) {
      if (!RACE.has((err as { code?: string }).code ?? '') || !(await exists(db, name))) throw err;
    }
    have.add(name);
  }
}

async function exists(db: Db, name: string): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_class where relname = ${name}
    and relnamespace = current_schema()::regnamespace`.execute(db);
  return Number(rows[0]?.n) > 0;
}

/**
 * Every node's partition creations take this transaction-level advisory lock first, so they run one at a time:
 * two ATTACH PARTITIONs of different days at once deadlock on the parent and the default partition.
 */
const PARTITION_LOCK = 0x6b68_7061; // "khpa"

/** One transaction: an empty table of the parent's shape, the default partition's rows of that day moved in, attached. */
async function createDay(db: Db, table: RawTable, name: string, day: number): Promise<void> {
  if (await exists(db, name)) return;
  const [t, p, d] = [sql.table(table), sql.table(name), sql.table(`${table}_default`)];
  await db.transaction().execute(async (tx) => {
    await sql`select pg_advisory_xact_lock(${sql.lit(PARTITION_LOCK)})`.execute(tx);
    if (await exists(tx, name)) return; // made by another node while this one waited
    await sql`create table ${p} (like ${t} including defaults)`.execute(tx);
    await sql`with moved as (delete from ${d} where "time" >= ${day} and "time" < ${day + DAY_MS} returning *)
      insert into ${p} select * from moved`.execute(tx);
    await sql`alter table ${t} attach partition ${p} for values from (${sql.lit(day)}) to (${sql.lit(day + DAY_MS)})`.execute(tx);
  });
}

/** The day partitions of `table` whose whole day is before `cutoff`, oldest first. */
async function daysBefore(db: Db, table: RawTable, cutoff: number): Promise<Array<{ name: string; rows: number }>> {
  const { rows } = await sql<{ name: string; rows: number }>`select c.relname as name, greatest(c.reltuples, 0)::bigint as rows
    from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = ${table}::regclass`.execute(db);
  return rows
    .map((r) => ({ ...r, day: dayOfName(r.name) }))
    .filter((r): r is { name: string; rows: number; day: number } => r.day !== undefined && r.day + DAY_MS <= cutoff)
    .sort((a, b) => a.day - b.day)
    .map(({ name, rows: n }) => ({ name, rows: Number(n) }));
}

/**
 * Drops the day partitions of `table` wholly before `cutoff`; returns how many rows they held (PostgreSQL's
 * estimate, `reltuples`: counting them would read what is being dropped). The default partition's old rows
 * are deleted by the ordinary retention pass.
 */
export async function dropDaysBefore(db: Db, table: RawTable, cutoff: number): Promise<{ partitions: number; rows: number }> {
  const due = await daysBefore(db, table, cutoff);
  let rows = 0;
  for (const part of due) {
    await sql`drop table if exists ${sql.table(part.name)}`.execute(db);
    known.get(db)?.delete(part.name);
    rows += part.rows;
  }
  return { partitions: due.length, rows };
}
