import { Type } from '@sinclair/typebox';
import { setRolePermissions } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { Body, NamedList, requires, responses } from '../../schemas/common.ts';
import { PermissionItem } from '../../schemas/permissions.ts';

export default function permissionsSetRolePermissions(app: App, deps: Deps) {
  app.post(
    '/v1/permissions.setRolePermissions',
    {
      schema: {
        ...requires(
          'Replace the permissions of a role with exactly the listed set (atomic; an empty list clears them)',
          "`rbac.*.create_role` (it edits the role's definition); plus `rbac.*.create_permission` when an item with `create: true` names a slug that does not exist",
        ),
        body: Body({
          roleId: Type.String({ minLength: 1 }),
          permissions: Type.Array(PermissionItem, { maxItems: 1000 }),
        }),
        response: responses(NamedList('Every permission of the role now, sorted by name.')),
      },
    },
    (req) => setRolePermissions(deps.store.db, req.caller, req.body.roleId, req.body.permissions),
  );
}
