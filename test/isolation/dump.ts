import { sql } from 'kysely';
import type { World } from '../helpers/harness.ts';

/**
 * Every stored row that belongs to one workspace, table by table, as sorted JSON lines: compare two dumps to
 * show that nothing of the workspace changed. A row belongs to it when its `workspace_id` is the workspace
 * (or, for `workspaces`, its `id`), when it is an item of one of its migrations, or when it is a change-feed
 * entry about one of its resources. Tables found in the database, so a new table is dumped too; PostgreSQL's
 * partitions are read through their parent (a day's partition appears when that day's first event is written).
 */
export type Dump = Record<string, string[]>;

async function columnsByTable(w: World): Promise<Map<string, string[]>> {
  const rows =
    w.store.caps.dialect === 'sqlite'
      ? await sql<{ t: string; c: string }>`select m.name as t, p.name as c from sqlite_master m join pragma_table_info(m.name) p
          where m.type = 'table' and m.name not like 'sqlite_%'`.execute(w.store.db)
      : await sql<{ t: string; c: string }>`select table_name as t, column_name as c from information_schema.columns
          where table_schema = current_schema()
            and table_name not in (select relname from pg_class where relispartition)`.execute(w.store.db);
  const out = new Map<string, string[]>();
  for (const r of rows.rows) out.set(r.t, [...(out.get(r.t) ?? []), r.c]);
  return out;
}

const lines = (rows: object[]) =>
  rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b))))).sort();

export async function dumpWorkspace(w: World, workspaceId: string): Promise<Dump> {
  const db = w.store.db;
  const dump: Dump = {};
  const select = async (query: ReturnType<typeof sql>) => lines((await query.execute(db)).rows as object[]);
  for (const [table, columns] of await columnsByTable(w)) {
    if (columns.includes('workspace_id'))
      dump[table] = await select(sql`select * from ${sql.id(table)} where workspace_id = ${workspaceId}`);
    else if (table === 'workspaces') dump[table] = await select(sql`select * from workspaces where id = ${workspaceId}`);
    else if (columns.includes('migration_id'))
      dump[table] = await select(
        sql`select * from ${sql.id(table)} where migration_id in (select id from key_migrations where workspace_id = ${workspaceId})`,
      );
  }
  // Change-feed entries about the workspace's resources (the feed has no workspace column).
  const ids = Object.values(dump)
    .flat()
    .map((l) => JSON.parse(l).id)
    .filter((id): id is string => typeof id === 'string');
  dump.change_feed = ids.length ? await select(sql`select * from change_feed where ref in (${sql.join(ids)})`) : [];
  return dump;
}
