import { AppError, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { PermissionRow } from '../../store/schema.ts';
import { recordAudit, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { ownedRows, splitPage } from '../pagination.ts';
import { containsText } from '../search.ts';

/** The v1 Permission object. `slug` is what keys are verified against; it is unique in the workspace. */
export interface PermissionView {
  id: string;
  name: string;
  slug: string;
  description?: string;
}

export interface CreatePermissionInput {
  name: string;
  slug?: string;
  description?: string;
}

export const permissionView = (p: Pick<PermissionRow, 'id' | 'name' | 'slug' | 'description'>): PermissionView => ({
  id: p.id,
  name: p.name,
  slug: p.slug,
  description: p.description ?? undefined,
});

const conflict = (slug: string) => new AppError('data/conflict', `Permission with slug "${slug}" already exists in this workspace`);

/** How a request names a role or permission: by id (v1), or by id or name — a permission's slug — (v2; the id wins). */
export type RbacLookup = 'id' | 'id-or-name';

/** A permission of the workspace, by id or (`id-or-name`) by id or slug, or 404. */
export async function requirePermission(
  db: Executor,
  workspaceId: string,
  permission: string,
  lookup: RbacLookup = 'id',
): Promise<PermissionRow> {
  const rows = await db
    .selectFrom('permissions')
    .selectAll()
    .where((eb) => (lookup === 'id' ? eb('id', '=', permission) : eb.or([eb('id', '=', permission), eb('slug', '=', permission)])))
    .where('workspace_id', '=', workspaceId)
    .execute();
  const row = rows.find((r) => r.id === permission) ?? rows[0];
  if (!row) throw notFound('permission', permission);
  return row;
}

/**
 * permissions.createPermission: `slug` defaults to `name`. A slug that already exists in the workspace → 409,
 * also when two creators race (the unique constraint decides). Needs `rbac.*.create_permission`.
 */
export async function createPermission(db: Db, caller: Caller, input: CreatePermissionInput): Promise<{ permissionId: string }> {
  requirePermissions(caller, 'rbac.*.create_permission');
  const slug = input.slug ?? input.name;
  const permissionId = newId('perm');
  const now = Date.now();
  try {
    await db.transaction().execute(async (tx) => {
      const existing = await tx
        .selectFrom('permissions')
        .select('id')
        .where('workspace_id', '=', caller.workspaceId)
        .where('slug', '=', slug)
        .executeTakeFirst();
      if (existing) throw conflict(slug);
      await tx
        .insertInto('permissions')
        .values({
          id: permissionId,
          workspace_id: caller.workspaceId,
          name: input.name,
          slug,
          description: input.description ?? null,
          created_at: now,
          updated_at: now,
        })
        .execute();
      await recordAudit(
        tx,
        [
          callerAudit(
            caller,
            'permission.create',
            { type: 'permission', id: permissionId },
            { diff: { name: input.name, slug, description: input.description ?? null } },
          ),
        ],
        now,
      );
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(slug);
    throw err;
  }
  return { permissionId };
}

/** permissions.getPermission (v2: by id or slug). Needs `rbac.*.read_permission`. */
export async function getPermission(db: Db, caller: Caller, permission: string, lookup: RbacLookup = 'id'): Promise<PermissionView> {
  requirePermissions(caller, 'rbac.*.read_permission');
  return permissionView(await requirePermission(db, caller.workspaceId, permission, lookup));
}

/**
 * permissions.listPermissions: every permission of the workspace ordered by id (creation order), unpaginated,
 * as Unkey v1 answers it. Needs `rbac.*.read_permission`.
 */
export async function listPermissions(db: Db, caller: Caller): Promise<PermissionView[]> {
  requirePermissions(caller, 'rbac.*.read_permission');
  const rows = await ownedRows(db.selectFrom('permissions').selectAll(), 'workspace_id', caller.workspaceId).execute();
  return rows.map(permissionView);
}

/**
 * permissions.deletePermission (v2: by id or slug): removes the permission for good; its connections to keys and roles go with
 * it (foreign-key cascade), in the same transaction as the audit record. Needs `rbac.*.delete_permission`.
 */
export async function deletePermission(db: Db, caller: Caller, permission: string, lookup: RbacLookup = 'id'): Promise<void> {
  requirePermissions(caller, 'rbac.*.delete_permission');
  await transact(db, async (tx, changes) => {
    const row = await requirePermission(tx, caller.workspaceId, permission, lookup);
    const permissionId = row.id;
    changes.workspace(caller.workspaceId);
    const [keys, roles] = await Promise.all([
      tx
        .selectFrom('keys_permissions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('permission_id', '=', permissionId)
        .executeTakeFirstOrThrow(),
      tx
        .selectFrom('roles_permissions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('permission_id', '=', permissionId)
        .executeTakeFirstOrThrow(),
    ]);
    await tx.deleteFrom('permissions').where('id', '=', permissionId).execute();
    const now = Date.now();
    await recordAudit(
      tx,
      [
        callerAudit(
          caller,
          'permission.delete',
          { type: 'permission', id: permissionId },
          { diff: { name: row.name, slug: row.slug, disconnectedKeys: Number(keys.n), disconnectedRoles: Number(roles.n) } },
        ),
      ],
      now,
    );
  });
}

/**
 * permissions.listPermissions of v2: the workspace's permissions ordered by id, `limit` at a time, optionally
 * only those whose id, name, slug or description contains `search` (ignoring case). Needs `rbac.*.read_permission`.
 */
export async function listPermissionsPage(
  db: Db,
  caller: Caller,
  q: { limit: number; cursor?: string; search?: string },
): Promise<{ permissions: PermissionView[]; cursor?: string }> {
  requirePermissions(caller, 'rbac.*.read_permission');
  let query = db.selectFrom('permissions').selectAll();
  if (q.search) query = query.where(containsText(['id', 'name', 'slug', 'description'], q.search));
  const { page, cursor } = splitPage(
    await ownedRows(query, 'workspace_id', caller.workspaceId, { after: q.cursor })
      .limit(q.limit + 1)
      .execute(),
    q.limit,
  );
  return { permissions: page.map(permissionView), cursor };
}

/** Permission objects of these ids, sorted by slug (v2's answer to setRolePermissions). */
export async function permissionViews(db: Executor, ids: string[]): Promise<PermissionView[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('permissions').selectAll().where('id', 'in', ids).orderBy('slug').orderBy('id').execute();
  return rows.map(permissionView);
}
