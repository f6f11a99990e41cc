import { Type } from '@sinclair/typebox';
import { createRole } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { Description } from '../../schemas/permissions.ts';

export default function permissionsCreateRole(app: App, deps: Deps) {
  app.post(
    '/v1/permissions.createRole',
    {
      schema: {
        ...requires(
          'Create a role, optionally with permissions (by slug; missing ones are created)',
          '`rbac.*.create_role`; plus `rbac.*.create_permission` when a listed slug does not exist',
        ),
        body: Body({
          name: Type.String({ minLength: 1, maxLength: 512, description: 'Unique in the workspace.' }),
          description: Type.Optional(Description),
          permissions: Type.Optional(
            Type.Array(Type.String({ minLength: 1, maxLength: 512 }), {
              maxItems: 1000,
              description: 'Permission slugs: existing ones are attached, missing ones created.',
            }),
          ),
        }),
        response: responses(Type.Object({ roleId: Type.String() })),
      },
    },
    (req) => createRole(deps.store.db, req.caller, req.body),
  );
}
