import { Type } from '@sinclair/typebox';
import { deleteRole } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';

export default function v2PermissionsDeleteRole(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.deleteRole',
    {
      schema: {
        ...v2Requires('Delete a role (by id or name) for good; keys that had it lose it', '`rbac.*.delete_role`'),
        body: Body({ role: Type.String({ minLength: 1, maxLength: 128, description: "The role's id (`role_…`) or its name." }) }),
        response: v2Responses(Type.Object({})),
      },
    },
    async (req) => {
      await deleteRole(deps.store.db, req.caller, req.body.role, 'id-or-name');
      return ok(req.id, {});
    },
  );
}
