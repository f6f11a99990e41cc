import { invalid, notFound } from '../../domain/errors.ts';
import type { Db, Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record-audit.ts';
import type { Actor } from '../caller.ts';
import { transact } from '../changes.ts';
import { emitEvent } from '../webhooks/emit.ts';
import { rootKeyPermissionProblems } from './root-keys.ts';

/**
 * Changes of existing root keys, for the CLI and the dashboard alike. Each is one transaction that records a
 * `root-key` change: every node's root-key cache drops the key (this process at once; the others pushed by
 * PostgreSQL NOTIFY or Redis, the change feed's poll as the safety net), so the change applies from the next
 * request on this node and within a second on the others.
 */

/** The root key's workspace and revocation time, or 404 (also for a key of another workspace than `workspaceId`). */
async function existingRootKey(
  tx: Tx,
  rootKeyId: string,
  workspaceId: string | undefined,
): Promise<{ workspace_id: string; revoked_at: number | null }> {
  const row = await tx.selectFrom('root_keys').select(['workspace_id', 'revoked_at']).where('id', '=', rootKeyId).executeTakeFirst();
  if (!row || (workspaceId !== undefined && row.workspace_id !== workspaceId)) throw notFound('root key', rootKeyId);
  return row;
}

/**
 * Revokes a root key (audited). With `workspaceId` (the dashboard), a key of another workspace is not found,
 * exactly as an unknown one. Revoking twice is harmless: the first time stands.
 */
export async function revokeRootKey(
  db: Db,
  rootKeyId: string,
  actor: Actor,
  workspaceId?: string,
): Promise<{ rootKeyId: string; revokedAt: number }> {
  return transact(db, async (tx, changes) => {
    const row = await existingRootKey(tx, rootKeyId, workspaceId);
    if (row.revoked_at !== null) return { rootKeyId, revokedAt: row.revoked_at };
    const now = Date.now();
    await tx.updateTable('root_keys').set({ revoked_at: now }).where('id', '=', rootKeyId).execute();
    await recordAudit(
      tx,
      [{ workspaceId: row.workspace_id, event: 'root_key.revoke', actor, target: { type: 'root_key', id: rootKeyId } }],
      now,
    );
    await emitEvent(tx, row.workspace_id, 'rootkey.revoked', { rootKeyId }, { now, changes });
    changes.rootKey(rootKeyId);
    return { rootKeyId, revokedAt: now };
  });
}

/**
 * Replaces a root key's permissions (audited, with the old and new lists). A revoked key keeps being refused;
 * its permissions can still be changed (nothing it could do changes). With `workspaceId`, as revokeRootKey.
 */
export async function setRootKeyPermissions(
  db: Db,
  rootKeyId: string,
  permissions: string[],
  actor: Actor,
  workspaceId?: string,
): Promise<{ rootKeyId: string; permissions: string[] }> {
  const problems = rootKeyPermissionProblems(permissions);
  if (problems.length) throw invalid(problems);
  const sorted = [...new Set(permissions)].sort();
  return transact(db, async (tx, changes) => {
    const row = await existingRootKey(tx, rootKeyId, workspaceId);
    const before = await tx.selectFrom('root_keys').select('permissions').where('id', '=', rootKeyId).executeTakeFirstOrThrow();
    const now = Date.now();
    await tx
      .updateTable('root_keys')
      .set({ permissions: JSON.stringify(sorted) })
      .where('id', '=', rootKeyId)
      .execute();
    await recordAudit(
      tx,
      [
        {
          workspaceId: row.workspace_id,
          event: 'root_key.update',
          actor,
          target: { type: 'root_key', id: rootKeyId },
          diff: { permissions: { from: JSON.parse(before.permissions) as string[], to: sorted } },
        },
      ],
      now,
    );
    changes.rootKey(rootKeyId);
    return { rootKeyId, permissions: sorted };
  });
}
