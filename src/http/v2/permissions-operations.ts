import type { App, Deps } from '../types.ts';
import v2PermissionsCreatePermission from './routes/permissions.create-permission.ts';
import v2PermissionsGetPermission from './routes/permissions.get-permission.ts';
import v2PermissionsListPermissions from './routes/permissions.list-permissions.ts';
import v2PermissionsDeletePermission from './routes/permissions.delete-permission.ts';
import v2PermissionsCreateRole from './routes/permissions.create-role.ts';
import v2PermissionsGetRole from './routes/permissions.get-role.ts';
import v2PermissionsListRoles from './routes/permissions.list-roles.ts';
import v2PermissionsDeleteRole from './routes/permissions.delete-role.ts';
import v2PermissionsSetRolePermissions from './routes/permissions.set-role-permissions.ts';

/** The v2 permissions.* operations (one file each under routes/), registered in this order. */
export const PERMISSIONS_V2: Array<(app: App, deps: Deps) => void> = [
  v2PermissionsCreatePermission,
  v2PermissionsGetPermission,
  v2PermissionsListPermissions,
  v2PermissionsDeletePermission,
  v2PermissionsCreateRole,
  v2PermissionsGetRole,
  v2PermissionsListRoles,
  v2PermissionsDeleteRole,
  v2PermissionsSetRolePermissions,
];
