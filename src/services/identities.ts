import { newId } from '../domain/ids.ts';
import type { Executor } from '../store/store.ts';

/**
 * The id of the workspace's identity with this externalId, created (environment `default`, no meta)
 * when missing. Safe under concurrency: the insert is `ON CONFLICT DO NOTHING` on (workspace, externalId).
 */
export async function ensureIdentity(db: Executor, workspaceId: string, externalId: string, now = Date.now()): Promise<{ id: string; created: boolean }> {
  const existing = await db.selectFrom('identities').select('id')
    .where('workspace_id', '=', workspaceId).where('external_id', '=', externalId).executeTakeFirst();
  if (existing) return { id: existing.id, created: false };
  const id = newId('id');
  await db.insertInto('identities')
    .values({ id, workspace_id: workspaceId, external_id: externalId, environment: 'default', meta: null, created_at: now, updated_at: now })
    .onConflict((oc) => oc.columns(['workspace_id', 'external_id']).doNothing())
    .execute();
  const row = await db.selectFrom('identities').select('id')
    .where('workspace_id', '=', workspaceId).where('external_id', '=', externalId).executeTakeFirstOrThrow();
  return { id: row.id, created: row.id === id };
}
