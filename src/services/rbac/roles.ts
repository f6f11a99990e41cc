import { AppError, invalid, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { RoleRow } from '../../store/schema.ts';
import { selectIn } from '../../store/bulk-statements.ts';
import { recordAudit, type AuditEntry, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { permissionView, permissionViews, type PermissionView, type RbacLookup } from './permissions.ts';
import { resolveOrCreate, type Named } from './find-or-create-by-name.ts';
import { permissionNames, permissionReference, referenceProblems, resolveReferences, type PermissionItem } from './resolve-references.ts';
import { transact } from '../changes.ts';
import { ownedRows, splitPage } from '../pagination.ts';
import { containsText } from '../search.ts';

/** The Role object: its permissions sorted by slug. */
export interface RoleView {
  id: string;
  name: string;
  description?: string;
  permissions: PermissionView[];
}
export interface CreateRoleInput {
  name: string;
  description?: string;
  permissions?: string[];
}

const conflict = (name: string) => new AppError('data/conflict', `Role with name "${name}" already exists in this workspace`);

/** A role of the workspace, by id or (`id-or-name`) by id or name, or 404. */
export async function requireRole(db: Executor, workspaceId: string, role: string, lookup: RbacLookup = 'id'): Promise<RoleRow> {
  const rows = await db
    .selectFrom('roles')
    .selectAll()
    .where((eb) => (lookup === 'id' ? eb('id', '=', role) : eb.or([eb('id', '=', role), eb('name', '=', role)])))
    .where('workspace_id', '=', workspaceId)
    .execute();
  const row = rows.find((r) => r.id === role) ?? rows[0];
  if (!row) throw notFound('role', role);
  return row;
}

/**
 * Role objects for role rows, with their permissions sorted by slug: one query per 500 roles (IN_LIST_CHUNK), or,
 * when the rows are every role of the workspace `everyRoleOf` (v1's listRoles), one query for all of them: a
 * statement per 500 roles would read the permissions once for each (a hash join over the whole table each time).
 */
async function roleViews(db: Executor, rows: RoleRow[], everyRoleOf?: string): Promise<RoleView[]> {
  const links = db
    .selectFrom('roles_permissions')
    .innerJoin('permissions', 'permissions.id', 'roles_permissions.permission_id')
    .select(['roles_permissions.role_id', 'permissions.id', 'permissions.name', 'permissions.slug', 'permissions.description'])
    .orderBy('permissions.slug');
  const linked =
    everyRoleOf === undefined
      ? await selectIn(
          rows.map((r) => r.id),
          (roleIds) => links.where('roles_permissions.role_id', 'in', roleIds).execute(),
        )
      : await links
          .where('roles_permissions.role_id', 'in', (eb) =>
            eb.selectFrom('roles').select('roles.id').where('roles.workspace_id', '=', everyRoleOf),
          )
          .execute();
  const byRole = new Map<string, PermissionView[]>();
  for (const l of linked) {
    const list = byRole.get(l.role_id);
    if (list) list.push(permissionView(l));
    else byRole.set(l.role_id, [permissionView(l)]);
  }
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    description: r.description ?? undefined,
    permissions: byRole.get(r.id) ?? [],
  }));
}

const connectAudit = (caller: Caller, roleId: string, event: string, p: Named): AuditEntry =>
  callerAudit(caller, event, { type: 'role', id: roleId }, { diff: { permissionId: p.id, permission: p.name } });

/**
 * permissions.createRole: a role named uniquely in the workspace (409 otherwise, also when two creators
 * race), optionally with permissions given by slug: existing ones are attached, missing ones are created.
 * Needs `rbac.*.create_role`, plus `rbac.*.create_permission` when a listed slug does not exist.
 */
export async function createRole(db: Db, caller: Caller, input: CreateRoleInput): Promise<{ roleId: string }> {
  requirePermissions(caller, 'rbac.*.create_role');
  const roleId = newId('role');
  const now = Date.now();
  try {
    await db.transaction().execute(async (tx) => {
      const existing = await tx
        .selectFrom('roles')
        .select('id')
        .where('workspace_id', '=', caller.workspaceId)
        .where('name', '=', input.name)
        .executeTakeFirst();
      if (existing) throw conflict(input.name);
      await tx
        .insertInto('roles')
        .values({
          id: roleId,
          workspace_id: caller.workspaceId,
          name: input.name,
          description: input.description ?? null,
          created_at: now,
          updated_at: now,
        })
        .execute();
      const permissions = await resolveOrCreate(tx, caller, 'permission', input.permissions ?? [], now);
      if (permissions.length) {
        await tx
          .insertInto('roles_permissions')
          .values(permissions.map((p) => ({ role_id: roleId, permission_id: p.id, workspace_id: caller.workspaceId, created_at: now })))
          .execute();
      }
      await recordAudit(
        tx,
        [
          callerAudit(
            caller,
            'role.create',
            { type: 'role', id: roleId },
            { diff: { name: input.name, description: input.description ?? null } },
          ),
          ...permissions.map((p) => connectAudit(caller, roleId, 'authorization.connect_permission_and_role', p)),
        ],
        now,
      );
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(input.name);
    throw err;
  }
  return { roleId };
}

/** permissions.getRole (v2: by id or name). Needs `rbac.*.read_role`. */
export async function getRole(db: Db, caller: Caller, role: string, lookup: RbacLookup = 'id'): Promise<RoleView> {
  requirePermissions(caller, 'rbac.*.read_role');
  const [view] = await roleViews(db, [await requireRole(db, caller.workspaceId, role, lookup)]);
  return view;
}

/**
 * permissions.listRoles: every role of the workspace (with its permissions) ordered by id (creation order),
 * unpaginated, as Unkey v1 answers it. Needs `rbac.*.read_role`.
 */
export async function listRoles(db: Db, caller: Caller): Promise<RoleView[]> {
  requirePermissions(caller, 'rbac.*.read_role');
  const rows = await ownedRows(db.selectFrom('roles').selectAll(), 'workspace_id', caller.workspaceId).execute();
  return roleViews(db, rows, caller.workspaceId);
}

/**
 * permissions.listRoles of v2: the workspace's roles (with their permissions) ordered by id, `limit` at a
 * time, optionally only those whose id, name or description contains `search` (ignoring case). Needs `rbac.*.read_role`.
 */
export async function listRolesPage(
  db: Db,
  caller: Caller,
  q: { limit: number; cursor?: string; search?: string },
): Promise<{ roles: RoleView[]; cursor?: string }> {
  requirePermissions(caller, 'rbac.*.read_role');
  let query = db.selectFrom('roles').selectAll();
  if (q.search) query = query.where(containsText(['id', 'name', 'description'], q.search));
  const { page, cursor } = splitPage(
    await ownedRows(query, 'workspace_id', caller.workspaceId, { after: q.cursor })
      .limit(q.limit + 1)
      .execute(),
    q.limit,
  );
  return { roles: await roleViews(db, page), cursor };
}

/**
 * permissions.deleteRole (v2: by id or name): removes the role for good; its connections to keys and permissions go with it
 * (foreign-key cascade), in the same transaction as the audit record. Needs `rbac.*.delete_role`.
 */
export async function deleteRole(db: Db, caller: Caller, role: string, lookup: RbacLookup = 'id'): Promise<void> {
  requirePermissions(caller, 'rbac.*.delete_role');
  await transact(db, async (tx, changes) => {
    const row = await requireRole(tx, caller.workspaceId, role, lookup);
    const roleId = row.id;
    changes.workspace(caller.workspaceId);
    const keys = await tx
      .selectFrom('keys_roles')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('role_id', '=', roleId)
      .executeTakeFirstOrThrow();
    await tx.deleteFrom('roles').where('id', '=', roleId).execute();
    const now = Date.now();
    await recordAudit(
      tx,
      [callerAudit(caller, 'role.delete', { type: 'role', id: roleId }, { diff: { name: row.name, disconnectedKeys: Number(keys.n) } })],
      now,
    );
  });
}

/**
 * permissions.setRolePermissions: the role's permissions become exactly the listed set (an empty list
 * clears them), in one transaction. Items: `{id}` or `{slug | name (deprecated), create?}`; unknown ids
 * or slugs → 404 listing each. Concurrent changes to one role are serialized by writing the role row
 * first. Returns the role's permissions `{id, name}` sorted by name. Needs `rbac.*.create_role` (it edits
 * the role's definition), plus `rbac.*.create_permission` to create missing slugs.
 */
export function setRolePermissions(db: Db, caller: Caller, roleId: string, items: PermissionItem[]): Promise<Named[]> {
  return replaceRoleDefinition(db, caller, roleId, items, permissionNames);
}

/** setRolePermissions answering v2's way: the role's Permission objects, sorted by slug. */
export function setRolePermissionViews(db: Db, caller: Caller, roleId: string, items: PermissionItem[]): Promise<PermissionView[]> {
  return replaceRoleDefinition(db, caller, roleId, items, permissionViews);
}

async function replaceRoleDefinition<T>(
  db: Db,
  caller: Caller,
  roleId: string,
  items: PermissionItem[],
  answer: (tx: Executor, permissionIds: string[]) => Promise<T[]>,
): Promise<T[]> {
  const refs = items.map(permissionReference);
  const problems = referenceProblems(refs, '/permissions', 'must have id, slug or name');
  if (problems.length) throw invalid(problems);
  requirePermissions(caller, 'rbac.*.create_role');

  return transact(db, async (tx, changes) => {
    await requireRole(tx, caller.workspaceId, roleId);
    changes.workspace(caller.workspaceId);
    const now = Date.now();
    await tx.updateTable('roles').set({ updated_at: now }).where('id', '=', roleId).execute();

    const listed = await resolveReferences(tx, caller, 'permission', refs, now);
    await replaceRolePermissions(tx, caller, roleId, listed, now);
    return answer(
      tx,
      listed.map((p) => p.id),
    );
  });
}

/** Makes the role's permissions exactly `listed`: removes the others, adds the missing, audits the difference. */
async function replaceRolePermissions(tx: Executor, caller: Caller, roleId: string, listed: Named[], now: number): Promise<void> {
  const current = await tx
    .selectFrom('roles_permissions')
    .innerJoin('permissions', 'permissions.id', 'roles_permissions.permission_id')
    .select(['permissions.id', 'permissions.slug as name'])
    .where('roles_permissions.role_id', '=', roleId)
    .execute();
  const isListed = new Set(listed.map((p) => p.id));
  const isCurrent = new Set(current.map((p) => p.id));
  const toAdd = listed.filter((p) => !isCurrent.has(p.id));
  const toRemove = current.filter((p) => !isListed.has(p.id));
  if (toRemove.length) {
    await tx
      .deleteFrom('roles_permissions')
      .where('role_id', '=', roleId)
      .where(
        'permission_id',
        'in',
        toRemove.map((p) => p.id),
      )
      .execute();
  }
  if (toAdd.length) {
    await tx
      .insertInto('roles_permissions')
      .values(toAdd.map((p) => ({ role_id: roleId, permission_id: p.id, workspace_id: caller.workspaceId, created_at: now })))
      .execute();
  }
  if (toAdd.length || toRemove.length) {
    await recordAudit(
      tx,
      [
        callerAudit(
          caller,
          'role.update',
          { type: 'role', id: roleId },
          { diff: { addedPermissions: toAdd.map((p) => p.name), removedPermissions: toRemove.map((p) => p.name) } },
        ),
        ...toRemove.map((p) => connectAudit(caller, roleId, 'authorization.disconnect_permission_and_role', p)),
        ...toAdd.map((p) => connectAudit(caller, roleId, 'authorization.connect_permission_and_role', p)),
      ],
      now,
    );
  }
}
