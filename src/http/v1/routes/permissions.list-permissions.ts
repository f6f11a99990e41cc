import { Type } from '@sinclair/typebox';
import { listPermissions } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas.ts';
import { Permission } from './permissions.get-permission.ts';

/** `limit` (1..100, default 100) and the `cursor` of the previous page. */
export const PageQuery = Type.Object({
  // Optional in the document (clients may omit it); the validator fills in the default.
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })),
  cursor: Type.Optional(Type.String({ minLength: 1, description: 'The `cursor` of the previous page.' })),
});

export default function permissionsListPermissions(app: App, deps: Deps) {
  app.get('/v1/permissions.listPermissions', {
    schema: {
      ...requires('List the permissions of the workspace, by id, with cursor pagination', '`rbac.*.read_permission`'),
      querystring: PageQuery,
      response: responses(Type.Object({
        permissions: Type.Array(Permission),
        total: Type.Integer({ description: 'Number of permissions in the workspace.' }),
        cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
      })),
    },
  }, (req) => listPermissions(deps.store.db, req.caller, req.query));
}
