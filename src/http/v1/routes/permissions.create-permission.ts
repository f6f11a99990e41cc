import { Type } from '@sinclair/typebox';
import { createPermission } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { Description, Identifier } from '../../schemas/permissions.ts';

export default function permissionsCreatePermission(app: App, deps: Deps) {
  app.post(
    '/v1/permissions.createPermission',
    {
      schema: {
        ...requires('Create a permission', '`rbac.*.create_permission`'),
        body: Body({
          name: Identifier('Letters, digits and `_ . : - *`.'),
          slug: Type.Optional(Identifier('What keys are verified against; unique in the workspace. Defaults to name.')),
          description: Type.Optional(Description),
        }),
        response: responses(Type.Object({ permissionId: Type.String() })),
      },
    },
    (req) => createPermission(deps.store.db, req.caller, req.body),
  );
}
