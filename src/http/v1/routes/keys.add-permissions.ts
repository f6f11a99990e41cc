import { Type } from '@sinclair/typebox';
import { addPermissions } from '../../../services/keys/key-links.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas.ts';

/** A permission named by `id`, or by `slug` (`name` is its deprecated alias; `slug` wins, `id` wins over both). */
export const PermissionItem = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, description: 'An existing permission; wins over slug and name.' })),
  slug: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Deprecated: the slug.' })),
  create: Type.Optional(Type.Boolean({ description: 'With slug/name: create the permission when it does not exist.' })),
}, { additionalProperties: false });

/** A permission named by `id` or `slug` (`name` is its deprecated alias), never created. */
export const PermissionRef = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, description: 'An existing permission; wins over slug and name.' })),
  slug: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Deprecated: the slug.' })),
}, { additionalProperties: false });

/** `{id, name}` items sorted by name. */
export const NamedList = (description: string) => Type.Array(Type.Object({ id: Type.String(), name: Type.String() }), { description });

export default function keysAddPermissions(app: App, deps: Deps) {
  app.post('/v1/keys.addPermissions', {
    schema: {
      ...requires('Connect permissions to a key directly; ones already connected stay (atomic)',
        '`rbac.*.add_permission_to_key`; plus `rbac.*.create_permission` when an item with `create: true` names a slug that does not exist'),
      body: Body({
        keyId: Type.String({ minLength: 1 }),
        permissions: Type.Array(PermissionItem, { minItems: 1, maxItems: 1000 }),
      }),
      response: responses(NamedList('The requested permissions, sorted by name.')),
    },
  }, (req) => addPermissions(deps.store.db, req.caller, req.body.keyId, req.body.permissions));
}
