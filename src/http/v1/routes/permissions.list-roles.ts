import { Type } from '@sinclair/typebox';
import { listRoles } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { PageQuery, requires, responses } from '../../schemas/common.ts';
import { Role } from '../../schemas/permissions.ts';

export default function permissionsListRoles(app: App, deps: Deps) {
  app.get(
    '/v1/permissions.listRoles',
    {
      schema: {
        ...requires('List the roles of the workspace, by id, with cursor pagination', '`rbac.*.read_role`'),
        querystring: PageQuery,
        response: responses(
          Type.Object({
            roles: Type.Array(Role),
            total: Type.Integer({ description: 'Number of roles in the workspace.' }),
            cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
          }),
        ),
      },
    },
    (req) => listRoles(deps.store.db, req.caller, req.query),
  );
}
