import { Type } from '@sinclair/typebox';
import { getPermission } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { Permission } from '../../schemas/permissions.ts';

export default function permissionsGetPermission(app: App, deps: Deps) {
  app.get(
    '/v1/permissions.getPermission',
    {
      schema: {
        ...requires('Get a permission', '`rbac.*.read_permission`'),
        querystring: Type.Object({ permissionId: Type.String({ minLength: 1 }) }),
        response: responses(Permission),
      },
    },
    (req) => getPermission(deps.store.db, req.caller, req.query.permissionId),
  );
}
