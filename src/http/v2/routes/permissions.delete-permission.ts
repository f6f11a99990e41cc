import { Type } from '@sinclair/typebox';
import { deletePermission } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { Slug } from '../rbac-shapes.ts';

export default function v2PermissionsDeletePermission(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.deletePermission',
    {
      schema: {
        ...v2Requires('Delete a permission (by id or slug) for good; keys and roles that had it lose it', '`rbac.*.delete_permission`'),
        body: Body({ permission: { ...Slug, description: "The permission's id (`perm_…`) or its slug." } }),
        response: v2Responses(Type.Object({})),
      },
    },
    async (req) => {
      await deletePermission(deps.store.db, req.caller, req.body.permission, 'id-or-name');
      return ok(req.id, {});
    },
  );
}
