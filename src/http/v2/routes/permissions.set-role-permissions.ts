import { Type } from '@sinclair/typebox';
import { setRolePermissionViews } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { Slug, V2Permission, v2Permission } from '../rbac-shapes.ts';

export default function v2PermissionsSetRolePermissions(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.setRolePermissions',
    {
      schema: {
        ...v2Requires(
          'Replace the permissions of a role with exactly the listed slugs (atomic; missing ones are created; `[]` clears them)',
          "`rbac.*.create_role` (it edits the role's definition); plus `rbac.*.create_permission` when a listed slug does not exist",
        ),
        body: Body({
          roleId: Type.String({ minLength: 3, maxLength: 255, pattern: '^[a-zA-Z0-9_-]+$' }),
          permissions: Type.Array(Slug, { maxItems: 1000 }),
        }),
        response: v2Responses(Type.Array(V2Permission, { description: 'Every permission of the role now, sorted by slug.' })),
      },
    },
    async (req) => {
      const items = req.body.permissions.map((slug) => ({ slug, create: true }));
      const permissions = await setRolePermissionViews(deps.store.db, req.caller, req.body.roleId, items);
      return ok(req.id, permissions.map(v2Permission));
    },
  );
}
