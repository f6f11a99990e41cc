import { Type } from '@sinclair/typebox';
import { createPermission } from '../../../services/rbac/permissions.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas.ts';

/** Letters, digits and `_ . : - *`; 1..512 characters. */
export const Identifier = (description: string) => Type.String({ minLength: 1, maxLength: 512, pattern: '^[a-zA-Z0-9_.:\\-*]+$', description });
export const Description = Type.String({ maxLength: 1024, description: 'Free text, at most 1024 characters.' });

export default function permissionsCreatePermission(app: App, deps: Deps) {
  app.post('/v1/permissions.createPermission', {
    schema: {
      ...requires('Create a permission', '`rbac.*.create_permission`'),
      body: Body({
        name: Identifier('Letters, digits and `_ . : - *`.'),
        slug: Type.Optional(Identifier('What keys are verified against; unique in the workspace. Defaults to name.')),
        description: Type.Optional(Description),
      }),
      response: responses(Type.Object({ permissionId: Type.String() })),
    },
  }, (req) => createPermission(deps.store.db, req.caller, req.body));
}
