import { Type } from '@sinclair/typebox';
import type { Mode } from '../../services/keys/key-links.ts';
import { changeKeyPermissions, changeKeyRoles } from '../../services/keys/key-link-sets.ts';
import type { App, Deps } from '../types.ts';
import { Body } from '../schemas/common.ts';
import { ok, v2Requires, v2Responses } from './envelope.ts';
import { PermissionSlugs, RoleNames } from './key-requests.ts';
import { V2Permission, V2Role, v2Permission, v2Role } from './rbac-shapes.ts';
import { ResourceId } from './schemas.ts';

// The six v2 operations on a key's direct permissions and roles (keys.add/remove/set Permissions/Roles): one
// schema and mapping each onto the services v1's operations use, answering with the key's resulting set.

/** keys.<mode>Permissions: `summary` and `permission` document it; `minItems` is 0 only for set. */
export function permissionsRoute(mode: Mode, summary: string, permission: string) {
  return (app: App, deps: Deps) => {
    app.post(
      `/v2/keys.${mode}Permissions`,
      {
        schema: {
          ...v2Requires(summary, permission),
          body: Body({ keyId: ResourceId, permissions: PermissionSlugs(mode === 'set' ? 0 : 1) }),
          response: v2Responses(Type.Array(V2Permission, { description: `The key's direct permissions after the change, by slug.` })),
        },
      },
      async (req) => {
        const result = await changeKeyPermissions(deps.store.db, req.caller, mode, req.body.keyId, req.body.permissions);
        return ok(req.id, result.map(v2Permission));
      },
    );
  };
}

/** keys.<mode>Roles: `summary` and `permission` document it; `minItems` is 0 only for set. */
export function rolesRoute(mode: Mode, summary: string, permission: string) {
  return (app: App, deps: Deps) => {
    app.post(
      `/v2/keys.${mode}Roles`,
      {
        schema: {
          ...v2Requires(summary, permission),
          body: Body({ keyId: ResourceId, roles: RoleNames(mode === 'set' ? 0 : 1) }),
          response: v2Responses(Type.Array(V2Role, { description: "The key's roles after the change, by name, with their permissions." })),
        },
      },
      async (req) => {
        const result = await changeKeyRoles(deps.store.db, req.caller, mode, req.body.keyId, req.body.roles);
        return ok(req.id, result.map(v2Role));
      },
    );
  };
}
