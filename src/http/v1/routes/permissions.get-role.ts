import { Type } from '@sinclair/typebox';
import { getRole } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { Role } from '../../schemas/permissions.ts';

export default function permissionsGetRole(app: App, deps: Deps) {
  app.get(
    '/v1/permissions.getRole',
    {
      schema: {
        ...requires('Get a role with its permissions', '`rbac.*.read_role`'),
        querystring: Type.Object({ roleId: Type.String({ minLength: 1 }) }),
        response: responses(Role),
      },
    },
    (req) => getRole(deps.store.db, req.caller, req.query.roleId),
  );
}
