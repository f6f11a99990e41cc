import { getPermission } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { Slug, V2Permission, v2Permission } from '../rbac-shapes.ts';

export default function v2PermissionsGetPermission(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.getPermission',
    {
      schema: {
        ...v2Requires('Get a permission by id or slug', '`rbac.*.read_permission`'),
        body: Body({ permission: { ...Slug, description: "The permission's id (`perm_…`) or its slug." } }),
        response: v2Responses(V2Permission),
      },
    },
    async (req) => ok(req.id, v2Permission(await getPermission(deps.store.db, req.caller, req.body.permission, 'id-or-name'))),
  );
}
