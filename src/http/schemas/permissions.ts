import { Type } from '@sinclair/typebox';

/** Letters, digits and `_ . : - *`; 1..512 characters. */
export const Identifier = (description: string) =>
  Type.String({ minLength: 1, maxLength: 512, pattern: '^[a-zA-Z0-9_.:\\-*]+$', description });
export const Description = Type.String({ maxLength: 1024, description: 'Free text, at most 1024 characters.' });

/** The Permission object. */
export const Permission = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String({ description: 'What keys are verified against.' }),
  description: Type.Optional(Type.String()),
});

/** The Role object; its permissions sorted by slug. */
export const Role = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  permissions: Type.Array(Permission, { description: 'Sorted by slug.' }),
});

/** A permission named by `id`, or by `slug` (`name` is its deprecated alias; `slug` wins, `id` wins over both). */
export const PermissionItem = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, description: 'An existing permission; wins over slug and name.' })),
    slug: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Deprecated: the slug.' })),
    create: Type.Optional(Type.Boolean({ description: 'With slug/name: create the permission when it does not exist.' })),
  },
  { additionalProperties: false },
);

/** A permission named by `id` or `slug` (`name` is its deprecated alias), never created. */
export const PermissionRef = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, description: 'An existing permission; wins over slug and name.' })),
    slug: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Deprecated: the slug.' })),
  },
  { additionalProperties: false },
);

/** A role named by `id` (wins) or `name`. */
export const RoleRef = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, description: 'An existing role; wins over name.' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  },
  { additionalProperties: false },
);

/** A role named by `id` (wins) or `name`; `create: true` creates a missing name. */
export const RoleItem = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, description: 'An existing role; wins over name.' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    create: Type.Optional(Type.Boolean({ description: 'With name: create the role when it does not exist.' })),
  },
  { additionalProperties: false },
);
