import { invalid } from '../../domain/errors.ts';
import { isStorableText } from '../../domain/bounds.ts';
import { newId } from '../../domain/ids.ts';
import type { Db } from '../../store/store.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { recordAudit } from '../audit/record-audit.ts';
import type { Actor } from '../caller.ts';
import { insertRootKey } from './root-keys.ts';
import { splitPage } from '../pagination.ts';

export async function createWorkspace(db: Db, name: string, actor: Actor): Promise<{ workspaceId: string }> {
  if (name.trim().length === 0 || name.length > 256) throw invalid([{ path: '/name', message: 'a workspace name is 1 to 256 characters' }]);
  if (!isStorableText(name)) throw invalid([{ path: '/name', message: 'must not hold a NUL character or a lone surrogate' }]);
  const id = newId('ws');
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('workspaces').values({ id, name, created_at: now, deleted_at: null }).execute();
    await recordAudit(tx, [{ workspaceId: id, event: 'workspace.create', actor, target: { type: 'workspace', id }, diff: { name } }], now);
  });
  return { workspaceId: id };
}

export interface WorkspaceInfo {
  workspaceId: string;
  name: string;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** Every live (not deleted) workspace, oldest first (ids are time-sortable). */
export async function listWorkspaces(db: Db): Promise<WorkspaceInfo[]> {
  return (await workspacePage(db, { limit: Number.MAX_SAFE_INTEGER })).workspaces;
}

/** Live workspaces, oldest first, `limit` at a time; `cursor` is returned when more remain (the operator's dashboard). */
export async function workspacePage(
  db: Db,
  q: { limit: number; cursor?: string },
): Promise<{ workspaces: WorkspaceInfo[]; cursor?: string }> {
  let query = db.selectFrom('workspaces').select(['id', 'name', 'created_at']).where('deleted_at', 'is', null);
  if (q.cursor) query = query.where('id', '>', q.cursor);
  const rows = await query
    .orderBy('id')
    .$if(q.limit < Number.MAX_SAFE_INTEGER, (qb) => qb.limit(q.limit + 1))
    .execute();
  const { page, cursor } = splitPage(rows, q.limit);
  return { workspaces: page.map((r) => ({ workspaceId: r.id, name: r.name, createdAt: r.created_at })), cursor };
}

export interface BootstrapResult {
  workspaceId: string;
  rootKeyId: string;
  rootKey: string;
  generated: boolean;
}

/**
 * On an empty database, creates the first workspace and a `*` root key (the given one, or a new one).
 * Exactly one process wins when several start at once: the `bootstrap` settings row is the guard.
 * Returns null when the database was already bootstrapped.
 *
 * `handOver` is given the result before it commits: when it throws (the key cannot be handed to the operator),
 * nothing is created and the next start tries again, instead of leaving a workspace whose only key is lost.
 */
export async function bootstrap(
  db: Db,
  givenRootKey: string | undefined,
  handOver: (result: BootstrapResult) => void = () => {},
): Promise<BootstrapResult | null> {
  const done = await db.selectFrom('settings').select('name').where('name', '=', 'bootstrap').executeTakeFirst();
  if (done) return null;
  try {
    return await db.transaction().execute(async (tx) => {
      const now = Date.now();
      await tx
        .insertInto('settings')
        .values({ name: 'bootstrap', value: String(now), updated_at: now })
        .execute();
      const existing = await tx.selectFrom('workspaces').select('id').limit(1).executeTakeFirst();
      if (existing) return null;
      const workspaceId = newId('ws');
      const actor: Actor = { type: 'operator', id: 'bootstrap' };
      await tx.insertInto('workspaces').values({ id: workspaceId, name: 'default', created_at: now, deleted_at: null }).execute();
      const { rootKeyId, rootKey } = await insertRootKey(
        tx,
        { workspaceId, permissions: ['*'], name: 'bootstrap', rootKey: givenRootKey },
        actor,
        now,
      );
      await recordAudit(
        tx,
        [{ workspaceId, event: 'workspace.create', actor, target: { type: 'workspace', id: workspaceId }, diff: { name: 'default' } }],
        now,
      );
      const result = { workspaceId, rootKeyId, rootKey, generated: givenRootKey === undefined };
      handOver(result);
      return result;
    });
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}
