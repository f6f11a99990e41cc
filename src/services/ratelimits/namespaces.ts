import { invalid, notFound, type FieldProblem } from '../../domain/errors.ts';
import { isObject } from '../../domain/json.ts';
import { newId } from '../../domain/ids.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { RatelimitNamespaceRow } from '../../store/schema.ts';
import { callerAudit, recordAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { cappedCount, DEFAULT_PAGE_SIZE, ownedRows, splitPage } from '../pagination.ts';

/** A namespace named by id or by name (v1 accepts either; the id wins when both are given). */
export interface NamespaceRef {
  namespaceId?: string;
  namespaceName?: string;
}

export interface NamespaceView {
  id: string;
  name: string;
  createdAt: number;
}

export interface NamespacePage {
  namespaces: NamespaceView[];
  /** The workspace's namespaces, counted up to TOTAL_CAP + 1 ("more than TOTAL_CAP"). */
  total: number;
  cursor?: string;
}

export const namespaceView = (row: RatelimitNamespaceRow): NamespaceView => ({ id: row.id, name: row.name, createdAt: row.created_at });

/** The body rule of every request that names a namespace: it names one, by id or by name. */
export function namespaceRefProblems(input: unknown): FieldProblem[] {
  if (isObject(input) && (input.namespaceId !== undefined || input.namespaceName !== undefined)) return [];
  return [{ path: '/namespaceId', message: 'either namespaceId or namespaceName is required' }];
}

/** The namespace a request names, in the caller's workspace: 400 when it names none, 404 when it does not exist there. */
export async function requireNamespace(
  db: Executor,
  workspaceId: string,
  ref: NamespaceRef,
  where: 'body' | 'query' = 'body',
): Promise<RatelimitNamespaceRow> {
  const problems = namespaceRefProblems(ref);
  if (problems.length) throw invalid(problems, where);
  const base = db.selectFrom('ratelimit_namespaces').selectAll().where('workspace_id', '=', workspaceId);
  const row = await (ref.namespaceId !== undefined
    ? base.where('id', '=', ref.namespaceId)
    : base.where('name', '=', ref.namespaceName!)
  ).executeTakeFirst();
  if (!row) throw notFound('namespace', ref.namespaceId ?? ref.namespaceName!);
  return row;
}

/**
 * How an operation finds the namespace it names in the caller's workspace (404 when it does not exist
 * there): v1's `{namespaceId | namespaceName}` (`namespaceByRef`) or v2's one `namespace` member holding
 * either (`namespaceByNameOrId`). The services take a locator so both versions share every other rule.
 */
export type NamespaceLocator = (db: Executor, workspaceId: string) => Promise<RatelimitNamespaceRow>;

export const namespaceByRef =
  (ref: NamespaceRef, where: 'body' | 'query' = 'body'): NamespaceLocator =>
  (db, workspaceId) =>
    requireNamespace(db, workspaceId, ref, where);

export const namespaceByNameOrId =
  (value: string): NamespaceLocator =>
  async (db, workspaceId) => {
    const row = await findNamespaceByNameOrId(db, workspaceId, value);
    if (!row) throw notFound('namespace', value);
    return row;
  };

/**
 * The namespace of the workspace whose id or name is `value`, if any. The id wins: a namespace named like
 * another one's id cannot hide it.
 */
export async function findNamespaceByNameOrId(
  db: Executor,
  workspaceId: string,
  value: string,
): Promise<RatelimitNamespaceRow | undefined> {
  const rows = await db
    .selectFrom('ratelimit_namespaces')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('id', '=', value), eb('name', '=', value)]))
    .execute();
  return rows.find((r) => r.id === value) ?? rows[0];
}

/** The namespace of this id in the workspace, if any. */
export const findNamespaceById = (db: Executor, workspaceId: string, id: string): Promise<RatelimitNamespaceRow | undefined> =>
  db.selectFrom('ratelimit_namespaces').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

/** The namespace of this name in the workspace, if any. */
export const findNamespaceByName = (db: Executor, workspaceId: string, name: string): Promise<RatelimitNamespaceRow | undefined> =>
  db.selectFrom('ratelimit_namespaces').selectAll().where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst();

/**
 * Creates the namespace `name` unless it exists (two nodes creating it at once end with one namespace, and
 * one audit record). The caller's permissions were checked by the caller of this function.
 */
export async function createNamespace(db: Db, caller: Caller, name: string): Promise<void> {
  const now = Date.now();
  await transact(db, async (tx) => {
    const id = newId('rlns');
    const created = await tx
      .insertInto('ratelimit_namespaces')
      .values({ id, workspace_id: caller.workspaceId, name, created_at: now, updated_at: now })
      .onConflict((oc) => oc.columns(['workspace_id', 'name']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (created)
      await recordAudit(
        tx,
        [callerAudit(caller, 'ratelimitNamespace.create', { type: 'ratelimitNamespace', id }, { diff: { name } })],
        now,
      );
  });
}

/** ratelimits.getNamespace: needs `ratelimit.<namespaceId>.read_namespace`. */
export async function getNamespace(db: Db, caller: Caller, ref: NamespaceRef): Promise<NamespaceView> {
  const row = await requireNamespace(db, caller.workspaceId, ref, 'query');
  requirePermissions(caller, `ratelimit.${row.id}.read_namespace`);
  return namespaceView(row);
}

/** ratelimits.listNamespaces: the workspace's namespaces by id, with cursor pagination; needs `ratelimit.*.read_namespace`. */
export async function listNamespaces(db: Db, caller: Caller, q: { limit?: number; cursor?: string }): Promise<NamespacePage> {
  requirePermissions(caller, 'ratelimit.*.read_namespace');
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  const base = db.selectFrom('ratelimit_namespaces');
  const [rows, total] = await Promise.all([
    ownedRows(base, 'workspace_id', caller.workspaceId, { after: q.cursor })
      .selectAll()
      .limit(limit + 1)
      .execute(),
    cappedCount(db, ownedRows(base, 'workspace_id', caller.workspaceId)),
  ]);
  const { page, cursor } = splitPage(rows, limit);
  return { namespaces: page.map(namespaceView), total, cursor };
}

/**
 * ratelimits.deleteNamespace: removes the namespace and its overrides for good (its counters are keyed by
 * its id, so a namespace later created with the same name starts from zero). Needs
 * `ratelimit.<namespaceId>.delete_namespace`.
 */
export async function deleteNamespace(db: Db, caller: Caller, ref: NamespaceRef): Promise<void> {
  await transact(db, async (tx, changes) => {
    const row = await requireNamespace(tx, caller.workspaceId, ref);
    requirePermissions(caller, `ratelimit.${row.id}.delete_namespace`);
    const overrides = await tx.deleteFrom('ratelimit_overrides').where('namespace_id', '=', row.id).executeTakeFirst();
    // A concurrent delete that committed first (its row lock makes this one wait) leaves nothing to delete:
    // this one is then a 404, not a second deletion with a second audit record.
    const deleted = await tx.deleteFrom('ratelimit_namespaces').where('id', '=', row.id).executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw notFound('namespace', ref.namespaceId ?? ref.namespaceName!);
    changes.namespace(row.id);
    await recordAudit(tx, [
      callerAudit(
        caller,
        'ratelimitNamespace.delete',
        { type: 'ratelimitNamespace', id: row.id },
        { diff: { name: row.name, overridesDeleted: Number(overrides.numDeletedRows) } },
      ),
    ]);
  });
}
