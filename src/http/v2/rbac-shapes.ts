import { Type } from '@sinclair/typebox';
import type { PermissionView } from '../../services/rbac/permissions.ts';
import type { RoleView } from '../../services/rbac/roles.ts';

/**
 * The shapes of Unkey v2's permissions.* operations: Permission and Role objects (an empty description and
 * an empty permission list omitted, never null), permission slugs, and the `search` of the lists.
 */

export const V2Permission = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String({ description: 'What keys are verified against.' }),
  description: Type.Optional(Type.String()),
});

export const V2Role = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  permissions: Type.Optional(Type.Array(V2Permission, { description: 'Sorted by slug.' })),
});

/** A permission slug as v2 accepts it: what keys are verified against. */
export const Slug = Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-zA-Z0-9_:\\-\\.\\*]+$' });

export const Description = Type.String({ maxLength: 512 });

export const Search = Type.String({ maxLength: 256, description: 'Only the items containing this text (ignoring case).' });

export const v2Permission = (p: PermissionView) => ({
  id: p.id,
  name: p.name,
  slug: p.slug,
  ...(p.description ? { description: p.description } : {}),
});

export const v2Role = (r: RoleView) => ({
  id: r.id,
  name: r.name,
  ...(r.description ? { description: r.description } : {}),
  ...(r.permissions.length > 0 ? { permissions: r.permissions.map(v2Permission) } : {}),
});
