import { Type } from '@sinclair/typebox';
import { listPermissions } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { Permission } from '../../schemas/permissions.ts';

export default function permissionsListPermissions(app: App, deps: Deps) {
  app.get(
    '/v1/permissions.listPermissions',
    {
      schema: {
        ...requires('List every permission of the workspace, by id: a bare array, unpaginated (as Unkey v1)', '`rbac.*.read_permission`'),
        response: responses(Type.Array(Permission, { description: 'Every permission of the workspace, ordered by id (creation order).' })),
      },
    },
    (req) => listPermissions(deps.store.db, req.caller),
  );
}
