import { sql } from 'kysely';
import type { Tx } from '../../store/store.ts';
import type { ChangeSet } from '../changes.ts';
import { emitEvent } from '../webhooks/emit.ts';

/**
 * The events of a batch of imported keys, in the transaction that imports them: `keys.imported` (one per
 * batch, not one per key) and, for a migration none of whose items is pending any more, `migration.completed`
 * with its counts. The migration's row is locked first (rewritten unchanged), so of two batches finishing at
 * once the second sees the first's outcome: the last one, and only it, completes the migration.
 */
export async function emitImportEvents(
  tx: Tx,
  workspaceId: string,
  batch: { apiId: string; count: number; migrationId?: string },
  opts: { now: number; changes?: ChangeSet },
): Promise<void> {
  const { apiId, count, migrationId } = batch;
  if (count > 0) await emitEvent(tx, workspaceId, 'keys.imported', { apiId, count, ...(migrationId ? { migrationId } : {}) }, opts);
  if (!migrationId) return;
  await tx.updateTable('key_migrations').set({ name: sql<string | null>`name` }).where('id', '=', migrationId).execute();
  const rows = await tx
    .selectFrom('key_migration_items')
    .select(['status', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('migration_id', '=', migrationId)
    .groupBy('status')
    .execute();
  const counts: Record<string, number> = { migrated: 0, failed: 0 };
  for (const r of rows) counts[r.status] = Number(r.n);
  if (counts.pending) return;
  await emitEvent(
    tx,
    workspaceId,
    'migration.completed',
    { migrationId, counts: { migrated: counts.migrated, failed: counts.failed } },
    opts,
  );
}
