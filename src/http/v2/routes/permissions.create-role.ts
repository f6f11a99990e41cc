import { Type } from '@sinclair/typebox';
import { createRole } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { Description, Slug } from '../rbac-shapes.ts';

export default function v2PermissionsCreateRole(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.createRole',
    {
      schema: {
        ...v2Requires(
          'Create a role, optionally with permissions (by slug; missing ones are created)',
          '`rbac.*.create_role`; plus `rbac.*.create_permission` when a listed slug does not exist',
        ),
        body: Body({
          name: Type.String({ minLength: 1, maxLength: 128, description: 'Unique in the workspace.' }),
          description: Type.Optional(Description),
          permissions: Type.Optional(
            Type.Array(Slug, { maxItems: 1000, description: 'Permission slugs: existing ones are attached, missing ones created.' }),
          ),
        }),
        response: v2Responses(Type.Object({ roleId: Type.String() })),
      },
    },
    async (req) => {
      const { name, description, permissions } = req.body;
      const { roleId } = await createRole(deps.store.db, req.caller, { name, description: description || undefined, permissions });
      return ok(req.id, { roleId });
    },
  );
}
