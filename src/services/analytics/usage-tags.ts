import { PostgresAdapter, sql } from 'kysely';
import type { Db } from '../../store/store.ts';

/** The roll-ups the dashboard's usage summary reads (schema migration 0011). */
export type SummaryTable =
  | 'analytics_key_verifications_per_minute'
  | 'analytics_key_verifications_per_hour'
  | 'analytics_key_verifications_per_day';

/** Which roll-up rows a summary counts: one workspace, [from, to), and one API, key or identity. */
export interface SummaryFilter {
  table: SummaryTable;
  workspaceId: string;
  from: number;
  to: number;
  column: 'key_space_id' | 'key_id' | 'identity_id';
  value: string;
}

/**
 * The `limit` tags carried by the most verifications among the filter's roll-up rows, most first (ties by tag):
 * each row adds its count to every distinct tag it holds, so a tag given twice in one request counts once.
 * Tags are an array per row, unnested by each store's own means (PostgreSQL's text[], SQLite's JSON text); the
 * difference is this one statement, as `hasAllTags` in hourly-sums.ts.
 */
export async function sumByTag(db: Db, f: SummaryFilter, limit: number): Promise<Array<{ tag: string; count: number }>> {
  const table = sql.table(f.table);
  const where = sql`r.workspace_id = ${f.workspaceId} and r.time >= ${f.from} and r.time < ${f.to} and ${sql.ref(`r.${f.column}`)} = ${f.value}`;
  const query =
    db.getExecutor().adapter instanceof PostgresAdapter
      ? sql<{ tag: string; n: number | string }>`select t.tag, sum(r.count) as n
          from ${table} r cross join lateral unnest(r.tags) with ordinality as t(tag, i)
          where ${where} and array_position(r.tags, t.tag) = t.i
          group by t.tag order by n desc, t.tag limit ${limit}`
      : sql<{ tag: string; n: number | string }>`select j.value as tag, sum(r.count) as n
          from ${table} r, json_each(r.tags) j
          where ${where} and j.key = (select min(k.key) from json_each(r.tags) k where k.value = j.value)
          group by j.value order by n desc, j.value limit ${limit}`;
  const { rows } = await query.execute(db);
  return rows.map((r) => ({ tag: String(r.tag), count: Number(r.n) }));
}
