import { Type } from '@sinclair/typebox';
import { listRoles } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas.ts';
import { PageQuery } from './permissions.list-permissions.ts';
import { Role } from './permissions.get-role.ts';

export default function permissionsListRoles(app: App, deps: Deps) {
  app.get('/v1/permissions.listRoles', {
    schema: {
      ...requires('List the roles of the workspace, by id, with cursor pagination', '`rbac.*.read_role`'),
      querystring: PageQuery,
      response: responses(Type.Object({
        roles: Type.Array(Role),
        total: Type.Integer({ description: 'Number of roles in the workspace.' }),
        cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
      })),
    },
  }, (req) => listRoles(deps.store.db, req.caller, req.query));
}
