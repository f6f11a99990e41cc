import { invalid, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import type { Db, Executor } from '../../store/store.ts';
import { recordAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Actor, type Caller } from '../caller.ts';
import { requireWorkspace } from '../lookups.ts';
import { isMigrationAlgorithm, MIGRATION_ALGORITHMS, type MigrationAlgorithm } from './hash-algorithms.ts';

/*
 * Key migrations (migrations.enqueueKeys; docs/key-migrations.md): an operator creates a migration for a workspace; the
 * workspace enqueues batches of ≤ 100 keys into it; workers import them. Every enqueued item is a row of
 * `key_migration_items` from the moment the 202 is sent, and ends exactly once as `migrated` (with its
 * key id) or `failed` (with a reason).
 *
 * This module: the migration records (creating one, reading its status). Enqueueing: enqueue-keys.ts; the
 * import job a worker runs, and how each item ends exactly once: migration-import-task.ts.
 */

/** getMigration lists at most this many failures (the first by item index). */
export const MAX_REPORTED_FAILURES = 100;

export type MigrationStatus = 'pending' | 'running' | 'completed' | 'completed_with_failures';

/** A migration as getMigration reports it: status, item counts, the first failures, and when it last changed. */
export interface MigrationView {
  migrationId: string;
  workspaceId: string;
  status: MigrationStatus;
  counts: { enqueued: number; pending: number; migrated: number; failed: number };
  failures: Array<{ index: number; hash: string; reason: string }>;
  updatedAt: number;
}

/**
 * The primary key of an item. Statements on a batch's items name them by it: a query on `(migration_id,
 * item_index IN …, status)` may be planned on the `(migration_id, status)` index, which reads every pending
 * item of the migration (100,000s) instead of the batch's 100.
 */
export const itemId = (migrationId: string, index: number): string => `${migrationId}:${index}`;

/**
 * `mig_…`: created by the operator (CLI, dashboard), for one workspace, naming how its keys were hashed
 * (default `sha256`, Keyhold's own form). An unknown algorithm is a 400 at `/algorithm`.
 */
export async function createMigration(
  db: Db,
  workspaceId: string,
  name: string | undefined,
  actor: Actor,
  algorithm: string = 'sha256',
): Promise<{ migrationId: string }> {
  if (!isMigrationAlgorithm(algorithm))
    throw invalid([{ path: '/algorithm', message: `must be one of ${MIGRATION_ALGORITHMS.join(', ')}` }]);
  await requireWorkspace(db, workspaceId);
  const id = newId('mig');
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('key_migrations')
      .values({ id, workspace_id: workspaceId, name: name ?? null, algorithm, created_at: now, updated_at: now })
      .execute();
    await recordAudit(
      tx,
      [{ workspaceId, event: 'migration.create', actor, target: { type: 'migration', id }, diff: { name: name ?? null, algorithm } }],
      now,
    );
  });
  return { migrationId: id };
}

/** The migration's row; `workspaceId` null: in any workspace. Throws notFound when there is none. */
export async function requireMigration(
  db: Executor,
  migrationId: string,
  workspaceId: string | null,
): Promise<{ id: string; workspace_id: string; updated_at: number; algorithm: MigrationAlgorithm }> {
  const row = await db
    .selectFrom('key_migrations')
    .select(['id', 'workspace_id', 'updated_at', 'algorithm'])
    .where('id', '=', migrationId)
    .$if(workspaceId !== null, (q) => q.where('workspace_id', '=', workspaceId!))
    .executeTakeFirst();
  if (!row) throw notFound('migration', migrationId);
  return { ...row, algorithm: row.algorithm as MigrationAlgorithm };
}

/**
 * Status, counts and the first failures of a migration. `workspaceId` null: any workspace (the operator).
 * Status: `pending` while no item has an outcome (also with no items yet), `running` once some have and
 * some are pending, else `completed` or, when any failed, `completed_with_failures`. `updatedAt`: the last
 * enqueue or item outcome.
 */
export async function getMigration(db: Db, workspaceId: string | null, migrationId: string): Promise<MigrationView> {
  const migration = await requireMigration(db, migrationId, workspaceId);
  const [groups, failures] = await Promise.all([
    db
      .selectFrom('key_migration_items')
      .select((eb) => ['status', eb.fn.countAll<number>().as('n'), eb.fn.max('updated_at').as('last')])
      .where('migration_id', '=', migrationId)
      .groupBy('status')
      .execute(),
    db
      .selectFrom('key_migration_items')
      .select(['item_index', 'hash', 'reason'])
      .where('migration_id', '=', migrationId)
      .where('status', '=', 'failed')
      .orderBy('item_index')
      .limit(MAX_REPORTED_FAILURES)
      .execute(),
  ]);
  const counts = { enqueued: 0, pending: 0, migrated: 0, failed: 0 };
  let updatedAt = Number(migration.updated_at);
  for (const g of groups) {
    const n = Number(g.n);
    counts.enqueued += n;
    if (g.status === 'pending' || g.status === 'migrated' || g.status === 'failed') counts[g.status] += n;
    updatedAt = Math.max(updatedAt, Number(g.last));
  }
  const done = counts.migrated + counts.failed;
  const status: MigrationStatus =
    counts.pending > 0 || counts.enqueued === 0
      ? done > 0
        ? 'running'
        : 'pending'
      : counts.failed > 0
        ? 'completed_with_failures'
        : 'completed';
  return {
    migrationId: migration.id,
    workspaceId: migration.workspace_id,
    status,
    counts,
    failures: failures.map((f) => ({ index: Number(f.item_index), hash: f.hash, reason: f.reason ?? 'failed' })),
    updatedAt,
  };
}

/** migrations.getMigration: needs `api.*.read_key` (a migration may span APIs); another workspace's migration is a 404. */
export async function readMigration(db: Db, caller: Caller, migrationId: string): Promise<MigrationView> {
  requirePermissions(caller, 'api.*.read_key');
  return getMigration(db, caller.workspaceId, migrationId);
}
