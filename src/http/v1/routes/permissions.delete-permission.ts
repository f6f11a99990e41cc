import { Type } from '@sinclair/typebox';
import { deletePermission } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';

export default function permissionsDeletePermission(app: App, deps: Deps) {
  app.post(
    '/v1/permissions.deletePermission',
    {
      schema: {
        ...requires('Delete a permission for good; keys and roles that had it lose it', '`rbac.*.delete_permission`'),
        body: Body({ permissionId: Type.String({ minLength: 1 }) }),
        response: responses(Type.Object({})),
      },
    },
    async (req) => {
      await deletePermission(deps.store.db, req.caller, req.body.permissionId);
      return {};
    },
  );
}
