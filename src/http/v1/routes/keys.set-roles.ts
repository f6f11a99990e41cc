import { Type } from '@sinclair/typebox';
import { setRoles } from '../../../services/keys/key-links.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';

export default function keysSetRoles(app: App, deps: Deps) {
  app.post(
    '/v1/keys.setRoles',
    {
      schema: {
        ...requires(
          'Replace the roles of a key with exactly the listed set (atomic)',
          '`rbac.*.add_role_to_key`; plus `rbac.*.create_role` when an item with `create: true` names a role that does not exist',
        ),
        body: Body({
          keyId: Type.String({ minLength: 1 }),
          roles: Type.Array(
            Type.Object(
              {
                id: Type.Optional(Type.String({ minLength: 1, description: 'An existing role; wins over name.' })),
                name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
                create: Type.Optional(Type.Boolean({ description: 'With name: create the role when it does not exist.' })),
              },
              { additionalProperties: false },
            ),
            { minItems: 1, maxItems: 1000 },
          ),
        }),
        response: responses(
          Type.Array(Type.Object({ id: Type.String(), name: Type.String() }), {
            description: 'Every role now connected to the key, sorted by name.',
          }),
        ),
      },
    },
    (req) => setRoles(deps.store.db, req.caller, req.body.keyId, req.body.roles),
  );
}
