import { notFound } from '../../domain/errors.ts';
import type { Db } from '../../store/store.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { splitPage } from '../pagination.ts';
import { getMigration, type MigrationView } from './migration-records.ts';

/*
 * Reading a workspace's migrations for the dashboard: the list of them, one migration's own record, and its
 * items that ended (failed with a reason, or migrated into a key), page by page. Status and counts come from
 * getMigration (migration-records.ts), the one place that derives them.
 */

/** A migration as the dashboard lists it: its record, and getMigration's status and counts. */
export interface MigrationSummary {
  migrationId: string;
  name: string | null;
  createdAt: number;
  status: MigrationView['status'];
  counts: MigrationView['counts'];
  updatedAt: number;
}

/** The record of one migration of the caller's workspace (404 for any other). */
export interface MigrationRecord {
  migrationId: string;
  name: string | null;
  createdAt: number;
}

/** An item that ended: its index, its hash, and the key it became or why it failed. */
export interface EndedItem {
  index: number;
  hash: string;
  keyId: string | null;
  reason: string | null;
}

// As migrations.getMigration: a migration may span the workspace's APIs, so reading one needs `api.*.read_key`.
const READ = 'api.*.read_key';

/** The workspace's migrations, newest first (ids sort by creation time), `limit` at a time. */
export async function listMigrations(
  db: Db,
  caller: Caller,
  q: { limit: number; cursor?: string },
): Promise<{ migrations: MigrationSummary[]; cursor?: string }> {
  requirePermissions(caller, READ);
  const rows = await db
    .selectFrom('key_migrations')
    .select(['id', 'name', 'created_at'])
    .where('workspace_id', '=', caller.workspaceId)
    .$if(q.cursor !== undefined, (qb) => qb.where('id', '<', q.cursor!))
    .orderBy('id', 'desc')
    .limit(q.limit + 1)
    .execute();
  const { page, cursor } = splitPage(rows, q.limit);
  const views = await Promise.all(page.map((r) => getMigration(db, caller.workspaceId, r.id)));
  return {
    migrations: page.map((r, i) => ({
      migrationId: r.id,
      name: r.name,
      createdAt: Number(r.created_at),
      status: views[i].status,
      counts: views[i].counts,
      updatedAt: views[i].updatedAt,
    })),
    cursor,
  };
}

/** The migration's own record; another workspace's migration is not found. */
export async function migrationRecord(db: Db, caller: Caller, migrationId: string): Promise<MigrationRecord> {
  requirePermissions(caller, READ);
  const row = await db
    .selectFrom('key_migrations')
    .select(['id', 'name', 'created_at'])
    .where('id', '=', migrationId)
    .where('workspace_id', '=', caller.workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound('migration', migrationId);
  return { migrationId: row.id, name: row.name, createdAt: Number(row.created_at) };
}

/**
 * The migration's items that ended as `status`, by item index, `limit` after the index `after`; `next` is
 * the index to continue after when more remain. Another workspace's migration is not found.
 */
export async function listEndedItems(
  db: Db,
  caller: Caller,
  migrationId: string,
  q: { status: 'failed' | 'migrated'; limit: number; after?: number },
): Promise<{ items: EndedItem[]; next?: number }> {
  await migrationRecord(db, caller, migrationId);
  const rows = await db
    .selectFrom('key_migration_items')
    .select(['item_index', 'hash', 'key_id', 'reason'])
    .where('migration_id', '=', migrationId)
    .where('status', '=', q.status)
    .$if(q.after !== undefined, (qb) => qb.where('item_index', '>', q.after!))
    .orderBy('item_index')
    .limit(q.limit + 1)
    .execute();
  const items = rows.slice(0, q.limit).map((r) => ({ index: Number(r.item_index), hash: r.hash, keyId: r.key_id, reason: r.reason }));
  return { items, next: rows.length > q.limit ? items[items.length - 1].index : undefined };
}
