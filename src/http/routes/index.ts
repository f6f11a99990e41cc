import type { App, Deps } from '../types.ts';
import liveness from './liveness.ts';
import apisCreateApi from './apis.create-api.ts';
import apisGetApi from './apis.get-api.ts';
import apisListKeys from './apis.list-keys.ts';
import apisDeleteApi from './apis.delete-api.ts';
import keysCreateKey from './keys.create-key.ts';
import keysGetKey from './keys.get-key.ts';
import keysDeleteKey from './keys.delete-key.ts';
import keysWhoami from './keys.whoami.ts';
import keysUpdateKey from './keys.update-key.ts';
import keysUpdateRemaining from './keys.update-remaining.ts';
import keysVerifyKey from './keys.verify-key.ts';
import keysSetRoles from './keys.set-roles.ts';
import keysAddPermissions from './keys.add-permissions.ts';
import keysRemovePermissions from './keys.remove-permissions.ts';
import keysSetPermissions from './keys.set-permissions.ts';
import keysAddRoles from './keys.add-roles.ts';
import keysRemoveRoles from './keys.remove-roles.ts';
import permissionsCreateRole from './permissions.create-role.ts';
import permissionsGetRole from './permissions.get-role.ts';
import permissionsListRoles from './permissions.list-roles.ts';
import permissionsDeleteRole from './permissions.delete-role.ts';
import permissionsSetRolePermissions from './permissions.set-role-permissions.ts';
import permissionsCreatePermission from './permissions.create-permission.ts';
import permissionsGetPermission from './permissions.get-permission.ts';
import permissionsListPermissions from './permissions.list-permissions.ts';
import permissionsDeletePermission from './permissions.delete-permission.ts';
import identitiesCreateIdentity from './identities.create-identity.ts';
import identitiesGetIdentity from './identities.get-identity.ts';
import identitiesListIdentities from './identities.list-identities.ts';
import identitiesUpdateIdentity from './identities.update-identity.ts';
import identitiesDeleteIdentity from './identities.delete-identity.ts';
import auditListLogs from './audit.list-logs.ts';
import keysGetVerifications from './keys.get-verifications.ts';
import analyticsGetVerifications from './analytics.get-verifications.ts';
import migrationsCreateKeys from './migrations.create-keys.ts';
import migrationsEnqueueKeys from './migrations.enqueue-keys.ts';
import migrationsGetMigration from './migrations.get-migration.ts';

/** Every operation, registered in this order. */
export const ROUTES: Array<(app: App, deps: Deps) => void> = [
  liveness, keysVerifyKey,
  apisCreateApi, apisGetApi, apisListKeys, apisDeleteApi,
  keysCreateKey, keysGetKey, keysDeleteKey, keysWhoami, keysSetRoles,
  keysUpdateKey, keysUpdateRemaining,
  keysAddPermissions, keysRemovePermissions, keysSetPermissions, keysAddRoles, keysRemoveRoles,
  permissionsCreateRole, permissionsGetRole, permissionsListRoles, permissionsDeleteRole, permissionsSetRolePermissions,
  permissionsCreatePermission, permissionsGetPermission, permissionsListPermissions, permissionsDeletePermission,
  identitiesCreateIdentity, identitiesGetIdentity, identitiesListIdentities, identitiesUpdateIdentity, identitiesDeleteIdentity,
  auditListLogs,
  keysGetVerifications, analyticsGetVerifications,
  migrationsCreateKeys,
  migrationsEnqueueKeys, migrationsGetMigration,
];
