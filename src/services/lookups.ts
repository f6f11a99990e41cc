import { notFound } from '../domain/errors.ts';
import type { Executor } from '../store/store.ts';
import type { ApiRow, KeyRow } from '../store/schema.ts';

// Workspace-scoped lookups: a resource of another workspace is "not found", never "forbidden".

export async function requireWorkspace(db: Executor, workspaceId: string): Promise<void> {
  const ws = await db
    .selectFrom('workspaces')
    .select('id')
    .where('id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!ws) throw notFound('workspace', workspaceId);
}

/** A live (not deleted) API of the workspace, if there is one. */
export const findApi = (db: Executor, workspaceId: string, apiId: string): Promise<ApiRow | undefined> =>
  db
    .selectFrom('apis')
    .selectAll()
    .where('id', '=', apiId)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();

/** A live (not deleted) API of the workspace, or 404. */
export async function requireApi(db: Executor, workspaceId: string, apiId: string): Promise<ApiRow> {
  const api = await findApi(db, workspaceId, apiId);
  if (!api) throw notFound('api', apiId);
  return api;
}

/**
 * Live keys: a key is live when neither it nor its API is deleted. Checking the API here (rather than
 * relying only on deleteApi marking every key) also covers a key created while its API was being deleted.
 */
export const liveKeys = (db: Executor) =>
  db
    .selectFrom('keys')
    .innerJoin('apis', 'apis.id', 'keys.api_id')
    .selectAll('keys')
    .where('keys.deleted_at', 'is', null)
    .where('apis.deleted_at', 'is', null);

/** A live key of the workspace, or 404. */
export async function requireKey(db: Executor, workspaceId: string, keyId: string): Promise<KeyRow> {
  const key = await liveKeys(db).where('keys.id', '=', keyId).where('keys.workspace_id', '=', workspaceId).executeTakeFirst();
  if (!key) throw notFound('key', keyId);
  return key;
}
