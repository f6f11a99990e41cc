import { Type } from '@sinclair/typebox';
import { getRole } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { V2Role, v2Role } from '../rbac-shapes.ts';

export default function v2PermissionsGetRole(app: App, deps: Deps) {
  app.post(
    '/v2/permissions.getRole',
    {
      schema: {
        ...v2Requires('Get a role (by id or name) with its permissions', '`rbac.*.read_role`'),
        body: Body({ role: Type.String({ minLength: 1, maxLength: 128, description: "The role's id (`role_…`) or its name." }) }),
        response: v2Responses(V2Role),
      },
    },
    async (req) => ok(req.id, v2Role(await getRole(deps.store.db, req.caller, req.body.role, 'id-or-name'))),
  );
}
