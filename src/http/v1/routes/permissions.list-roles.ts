import { Type } from '@sinclair/typebox';
import { listRoles } from '../../../services/rbac/roles.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { Role } from '../../schemas/permissions.ts';

export default function permissionsListRoles(app: App, deps: Deps) {
  app.get(
    '/v1/permissions.listRoles',
    {
      schema: {
        ...requires('List every role of the workspace, by id: a bare array, unpaginated (as Unkey v1)', '`rbac.*.read_role`'),
        response: responses(Type.Array(Role, { description: 'Every role of the workspace, ordered by id (creation order).' })),
      },
    },
    (req) => listRoles(deps.store.db, req.caller),
  );
}
