import { Type } from '@sinclair/typebox';
import { createPermission } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { Description, Slug } from '../rbac-shapes.ts';

export default function v2PermissionsCreatePermission(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.createPermission',
    {
      schema: {
        ...v2Requires('Create a permission', '`rbac.*.create_permission`'),
        body: Body({
          name: Type.String({ minLength: 1, maxLength: 512 }),
          slug: Slug,
          description: Type.Optional(Description),
        }),
        response: v2Responses(Type.Object({ permissionId: Type.String() })),
      },
    },
    async (req) => {
      const { name, slug, description } = req.body;
      // v2 stores an empty description as none.
      const { permissionId } = await createPermission(deps.store.db, req.caller, { name, slug, description: description || undefined });
      return ok(req.id, { permissionId });
    },
  );
}
