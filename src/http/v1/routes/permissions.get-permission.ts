import { Type } from '@sinclair/typebox';
import { getPermission } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas.ts';

/** The Permission object. */
export const Permission = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String({ description: 'What keys are verified against.' }),
  description: Type.Optional(Type.String()),
});

export default function permissionsGetPermission(app: App, deps: Deps) {
  app.get('/v1/permissions.getPermission', {
    schema: {
      ...requires('Get a permission', '`rbac.*.read_permission`'),
      querystring: Type.Object({ permissionId: Type.String({ minLength: 1 }) }),
      response: responses(Permission),
    },
  }, (req) => getPermission(deps.store.db, req.caller, req.query.permissionId));
}
