import { Type } from '@sinclair/typebox';
import { listPermissions } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { PageQuery, requires, responses } from '../../schemas/common.ts';
import { Permission } from '../../schemas/permissions.ts';

export default function permissionsListPermissions(app: App, deps: Deps) {
  app.get(
    '/v1/permissions.listPermissions',
    {
      schema: {
        ...requires('List the permissions of the workspace, by id, with cursor pagination', '`rbac.*.read_permission`'),
        querystring: PageQuery,
        response: responses(
          Type.Object({
            permissions: Type.Array(Permission),
            total: Type.Integer({ description: 'Number of permissions in the workspace.' }),
            cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
          }),
        ),
      },
    },
    (req) => listPermissions(deps.store.db, req.caller, req.query),
  );
}
