import { Type } from '@sinclair/typebox';
import { removeRoles } from '../../../services/keys/key-links.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { RoleRef } from '../../schemas/permissions.ts';

export default function keysRemoveRoles(app: App, deps: Deps) {
  app.post(
    '/v1/keys.removeRoles',
    {
      schema: {
        ...requires('Disconnect every listed role from a key (atomic)', '`rbac.*.remove_role_from_key`'),
        body: Body({
          keyId: Type.String({ minLength: 1 }),
          roles: Type.Array(RoleRef, { minItems: 1, maxItems: 1000 }),
        }),
        response: responses(Type.Object({})),
      },
    },
    async (req) => {
      await removeRoles(deps.store.db, req.caller, req.body.keyId, req.body.roles);
      return {};
    },
  );
}
