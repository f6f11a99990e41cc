import { AppError } from '../domain/errors.ts';
import type { Executor } from '../store/store.ts';
import type { ApiRow, KeyRow } from '../store/schema.ts';

// Workspace-scoped lookups: a resource of another workspace is "not found", never "forbidden".

export async function requireWorkspace(db: Executor, workspaceId: string): Promise<void> {
  const ws = await db.selectFrom('workspaces').select('id').where('id', '=', workspaceId).where('deleted_at', 'is', null).executeTakeFirst();
  if (!ws) throw new AppError('data/workspace-not-found', `workspace ${workspaceId} not found`);
}

/** A live (not deleted) API of the workspace, or 404. */
export async function requireApi(db: Executor, workspaceId: string, apiId: string): Promise<ApiRow> {
  const api = await db.selectFrom('apis').selectAll()
    .where('id', '=', apiId).where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!api) throw new AppError('data/api-not-found', `api ${apiId} not found`);
  return api;
}

/** A live (not deleted) key of the workspace, or 404. */
export async function requireKey(db: Executor, workspaceId: string, keyId: string): Promise<KeyRow> {
  const key = await db.selectFrom('keys').selectAll()
    .where('id', '=', keyId).where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!key) throw new AppError('data/key-not-found', `key ${keyId} not found`);
  return key;
}
