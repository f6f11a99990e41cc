import { Type } from '@sinclair/typebox';
import { addRoles } from '../../../services/keys/key-links.ts';
import type { App, Deps } from '../../types.ts';
import { Body, NamedList, requires, responses } from '../../schemas/common.ts';
import { RoleItem } from '../../schemas/permissions.ts';

export default function keysAddRoles(app: App, deps: Deps) {
  app.post(
    '/v1/keys.addRoles',
    {
      schema: {
        ...requires(
          'Connect roles to a key; ones already connected stay (atomic)',
          '`rbac.*.add_role_to_key`; plus `rbac.*.create_role` when an item with `create: true` names a role that does not exist',
        ),
        body: Body({
          keyId: Type.String({ minLength: 1 }),
          roles: Type.Array(RoleItem, { minItems: 1, maxItems: 1000 }),
        }),
        response: responses(NamedList('The requested roles, sorted by name.')),
      },
    },
    (req) => addRoles(deps.store.db, req.caller, req.body.keyId, req.body.roles),
  );
}
