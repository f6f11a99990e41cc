import { Type } from '@sinclair/typebox';
import { addRoles } from '../../../services/keys/key-links.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas.ts';
import { NamedList } from './keys.add-permissions.ts';

/** A role named by `id` (wins) or `name`. */
export const RoleRef = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, description: 'An existing role; wins over name.' })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
}, { additionalProperties: false });

/** A role named by `id` (wins) or `name`; `create: true` creates a missing name. */
export const RoleItem = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, description: 'An existing role; wins over name.' })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  create: Type.Optional(Type.Boolean({ description: 'With name: create the role when it does not exist.' })),
}, { additionalProperties: false });

export default function keysAddRoles(app: App, deps: Deps) {
  app.post('/v1/keys.addRoles', {
    schema: {
      ...requires('Connect roles to a key; ones already connected stay (atomic)',
        '`rbac.*.add_role_to_key`; plus `rbac.*.create_role` when an item with `create: true` names a role that does not exist'),
      body: Body({
        keyId: Type.String({ minLength: 1 }),
        roles: Type.Array(RoleItem, { minItems: 1, maxItems: 1000 }),
      }),
      response: responses(NamedList('The requested roles, sorted by name.')),
    },
  }, (req) => addRoles(deps.store.db, req.caller, req.body.keyId, req.body.roles));
}
