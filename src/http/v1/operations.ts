import type { App, Deps } from '../types.ts';
import liveness from './routes/liveness.ts';
import readiness from './routes/readiness.ts';
import apisCreateApi from './routes/apis.create-api.ts';
import apisGetApi from './routes/apis.get-api.ts';
import apisListKeys from './routes/apis.list-keys.ts';
import apisDeleteApi from './routes/apis.delete-api.ts';
import apisDeleteKeys from './routes/apis.delete-keys.ts';
import keysCreateKey from './routes/keys.create-key.ts';
import keysGetKey from './routes/keys.get-key.ts';
import keysDeleteKey from './routes/keys.delete-key.ts';
import keysWhoami from './routes/keys.whoami.ts';
import keysUpdateKey from './routes/keys.update-key.ts';
import keysUpdateRemaining from './routes/keys.update-remaining.ts';
import keysVerifyKey from './routes/keys.verify-key.ts';
import keysSetRoles from './routes/keys.set-roles.ts';
import keysAddPermissions from './routes/keys.add-permissions.ts';
import keysRemovePermissions from './routes/keys.remove-permissions.ts';
import keysSetPermissions from './routes/keys.set-permissions.ts';
import keysAddRoles from './routes/keys.add-roles.ts';
import keysRemoveRoles from './routes/keys.remove-roles.ts';
import permissionsCreateRole from './routes/permissions.create-role.ts';
import permissionsGetRole from './routes/permissions.get-role.ts';
import permissionsListRoles from './routes/permissions.list-roles.ts';
import permissionsDeleteRole from './routes/permissions.delete-role.ts';
import permissionsSetRolePermissions from './routes/permissions.set-role-permissions.ts';
import permissionsCreatePermission from './routes/permissions.create-permission.ts';
import permissionsGetPermission from './routes/permissions.get-permission.ts';
import permissionsListPermissions from './routes/permissions.list-permissions.ts';
import permissionsDeletePermission from './routes/permissions.delete-permission.ts';
import identitiesCreateIdentity from './routes/identities.create-identity.ts';
import identitiesGetIdentity from './routes/identities.get-identity.ts';
import identitiesListIdentities from './routes/identities.list-identities.ts';
import identitiesUpdateIdentity from './routes/identities.update-identity.ts';
import identitiesDeleteIdentity from './routes/identities.delete-identity.ts';
import auditListLogs from './routes/audit.list-logs.ts';
import keysGetVerifications from './routes/keys.get-verifications.ts';
import analyticsGetVerifications from './routes/analytics.get-verifications.ts';
import ratelimitsGetAnalytics from './routes/ratelimits.get-analytics.ts';
import migrationsCreateKeys from './routes/migrations.create-keys.ts';
import migrationsEnqueueKeys from './routes/migrations.enqueue-keys.ts';
import migrationsGetMigration from './routes/migrations.get-migration.ts';
import ratelimitsLimit from './routes/ratelimits.limit.ts';
import ratelimitsListNamespaces from './routes/ratelimits.list-namespaces.ts';
import ratelimitsGetNamespace from './routes/ratelimits.get-namespace.ts';
import ratelimitsDeleteNamespace from './routes/ratelimits.delete-namespace.ts';
import ratelimitsSetOverride from './routes/ratelimits.set-override.ts';
import ratelimitsGetOverride from './routes/ratelimits.get-override.ts';
import ratelimitsListOverrides from './routes/ratelimits.list-overrides.ts';
import ratelimitsDeleteOverride from './routes/ratelimits.delete-override.ts';
import webhooksCreateEndpoint from './routes/webhooks.create-endpoint.ts';
import webhooksListEndpoints from './routes/webhooks.list-endpoints.ts';
import webhooksUpdateEndpoint from './routes/webhooks.update-endpoint.ts';
import webhooksDeleteEndpoint from './routes/webhooks.delete-endpoint.ts';
import webhooksRotateSecret from './routes/webhooks.rotate-secret.ts';
import webhooksListDeliveries from './routes/webhooks.list-deliveries.ts';
import webhooksRetryDelivery from './routes/webhooks.retry-delivery.ts';
import webhooksSendTestEvent from './routes/webhooks.send-test-event.ts';
import usageCreateExport from './routes/usage.create-export.ts';
import usageListExports from './routes/usage.list-exports.ts';
import usageGetExport from './routes/usage.get-export.ts';
import usageUpdateExport from './routes/usage.update-export.ts';
import usageDeleteExport from './routes/usage.delete-export.ts';
import usageListReports from './routes/usage.list-reports.ts';

/** Every operation, registered in this order. */
export const ROUTES: Array<(app: App, deps: Deps) => void> = [
  liveness,
  readiness,
  keysVerifyKey,
  apisCreateApi,
  apisGetApi,
  apisListKeys,
  apisDeleteApi,
  apisDeleteKeys,
  keysCreateKey,
  keysGetKey,
  keysDeleteKey,
  keysWhoami,
  keysSetRoles,
  keysUpdateKey,
  keysUpdateRemaining,
  keysAddPermissions,
  keysRemovePermissions,
  keysSetPermissions,
  keysAddRoles,
  keysRemoveRoles,
  permissionsCreateRole,
  permissionsGetRole,
  permissionsListRoles,
  permissionsDeleteRole,
  permissionsSetRolePermissions,
  permissionsCreatePermission,
  permissionsGetPermission,
  permissionsListPermissions,
  permissionsDeletePermission,
  identitiesCreateIdentity,
  identitiesGetIdentity,
  identitiesListIdentities,
  identitiesUpdateIdentity,
  identitiesDeleteIdentity,
  auditListLogs,
  keysGetVerifications,
  analyticsGetVerifications,
  ratelimitsGetAnalytics,
  migrationsCreateKeys,
  migrationsEnqueueKeys,
  migrationsGetMigration,
  ratelimitsLimit,
  ratelimitsListNamespaces,
  ratelimitsGetNamespace,
  ratelimitsDeleteNamespace,
  ratelimitsSetOverride,
  ratelimitsGetOverride,
  ratelimitsListOverrides,
  ratelimitsDeleteOverride,
  webhooksCreateEndpoint,
  webhooksListEndpoints,
  webhooksUpdateEndpoint,
  webhooksDeleteEndpoint,
  webhooksRotateSecret,
  webhooksListDeliveries,
  webhooksRetryDelivery,
  webhooksSendTestEvent,
  usageCreateExport,
  usageListExports,
  usageGetExport,
  usageUpdateExport,
  usageDeleteExport,
  usageListReports,
];
