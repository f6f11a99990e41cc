import type { Db, Executor } from '../../store/store.ts';
import type { Caller } from '../caller.ts';
import { permissionView, type PermissionView } from '../rbac/permissions.ts';
import type { RoleView } from '../rbac/roles.ts';
import { changeKeyLinks, type Mode } from './key-links.ts';

/**
 * Unkey v2's keys.add/remove/set Permissions: the same change as v1's (same rules, permissions, audit), by
 * slug; a slug that does not exist is created (with `rbac.*.create_permission`) except by `remove`, where it
 * is a 404. Answers with every permission attached to the key directly once the change is made, by slug.
 */
export function changeKeyPermissions(db: Db, caller: Caller, mode: Mode, keyId: string, slugs: string[]): Promise<PermissionView[]> {
  const refs = slugs.map((name) => ({ name, create: mode !== 'remove' }));
  return changeKeyLinks(db, caller, 'permission', mode, keyId, refs, (tx) => directPermissions(tx, keyId));
}

/**
 * Unkey v2's keys.add/remove/set Roles: the same change as v1's, by name; a name that does not exist is a 404
 * naming it (v2 never creates roles here). Answers with every role of the key once the change is made, each
 * with its permissions, by name.
 */
export function changeKeyRoles(db: Db, caller: Caller, mode: Mode, keyId: string, names: string[]): Promise<RoleView[]> {
  const refs = names.map((name) => ({ name }));
  return changeKeyLinks(db, caller, 'role', mode, keyId, refs, (tx) => keyRoles(tx, keyId));
}

/** The permissions attached to the key directly, sorted by slug. */
export async function directPermissions(db: Executor, keyId: string): Promise<PermissionView[]> {
  const rows = await db
    .selectFrom('keys_permissions')
    .innerJoin('permissions', 'permissions.id', 'keys_permissions.permission_id')
    .select(['permissions.id', 'permissions.name', 'permissions.slug', 'permissions.description'])
    .where('keys_permissions.key_id', '=', keyId)
    .orderBy('permissions.slug')
    .execute();
  return rows.map(permissionView);
}

/** The key's roles sorted by name, each with its permissions sorted by slug. */
export async function keyRoles(db: Executor, keyId: string): Promise<RoleView[]> {
  const [roles, links] = await Promise.all([
    db
      .selectFrom('keys_roles')
      .innerJoin('roles', 'roles.id', 'keys_roles.role_id')
      .select(['roles.id', 'roles.name', 'roles.description'])
      .where('keys_roles.key_id', '=', keyId)
      .orderBy('roles.name')
      .execute(),
    db
      .selectFrom('keys_roles')
      .innerJoin('roles_permissions', 'roles_permissions.role_id', 'keys_roles.role_id')
      .innerJoin('permissions', 'permissions.id', 'roles_permissions.permission_id')
      .select(['roles_permissions.role_id', 'permissions.id', 'permissions.name', 'permissions.slug', 'permissions.description'])
      .where('keys_roles.key_id', '=', keyId)
      .orderBy('permissions.slug')
      .execute(),
  ]);
  return roles.map((r) => ({
    id: r.id,
    name: r.name,
    description: r.description ?? undefined,
    permissions: links.filter((l) => l.role_id === r.id).map(permissionView),
  }));
}
