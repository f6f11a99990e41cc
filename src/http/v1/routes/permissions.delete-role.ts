import { Type } from '@sinclair/typebox';
import { deleteRole } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';

export default function permissionsDeleteRole(app: App, deps: Deps) {
  app.post(
    '/v1/permissions.deleteRole',
    {
      schema: {
        ...requires('Delete a role for good; keys that had it lose it and the permissions it granted', '`rbac.*.delete_role`'),
        body: Body({ roleId: Type.String({ minLength: 1 }) }),
        response: responses(Type.Object({})),
      },
    },
    async (req) => {
      await deleteRole(deps.store.db, req.caller, req.body.roleId);
      return {};
    },
  );
}
