import { Type } from '@sinclair/typebox';
import { MAX_RATELIMIT_NAME } from '../../domain/bounds.ts';
import { Body, Bounded, Meta } from './common.ts';

export const NamespaceName = Type.String({ minLength: 1, maxLength: MAX_RATELIMIT_NAME, description: 'Unique in the workspace.' });
export const RatelimitIdentifier = Type.String({
  minLength: 1,
  maxLength: MAX_RATELIMIT_NAME,
  description: 'Who is limited: a user id, an IP address…',
});

/** A namespace named by id or by name (one of them is required; the id wins when both are given). */
export const NamespaceRefProps = {
  namespaceId: Type.Optional(Type.String({ minLength: 1, description: 'Either this or namespaceName.' })),
  namespaceName: Type.Optional(NamespaceName),
};

export const Namespace = Type.Object({ id: Type.String(), name: Type.String(), createdAt: Type.Integer() });

export const Override = Type.Object({
  id: Type.String(),
  identifier: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer(),
  async: Type.Optional(Type.Boolean({ description: 'Absent: each ratelimits.limit request decides.' })),
});

export const OverrideIdentifier = Type.String({
  minLength: 1,
  maxLength: MAX_RATELIMIT_NAME,
  description:
    'An identifier, or a pattern where `*` matches any characters: an exact override wins over patterns, then the pattern with the most literal characters.',
});

export const LimitBody = Body({
  namespace: Type.Optional({
    ...NamespaceName,
    default: 'default',
    description: 'Created on first use (needs `ratelimit.*.create_namespace`).',
  }),
  identifier: RatelimitIdentifier,
  limit: Bounded('limit', { description: 'Max total cost per window.' }),
  duration: Bounded('duration', { description: 'Window length in ms.' }),
  cost: Type.Optional(Bounded('cost', { default: 1, description: '0 reports the state without consuming.' })),
  async: Type.Optional(
    Type.Boolean({ default: false, description: 'true: decided on this node, synced in the background; false: exact on every node.' }),
  ),
  meta: Type.Optional(Meta),
  resources: Type.Optional(
    Type.Array(
      Type.Object({
        type: Type.String({ maxLength: 255 }),
        id: Type.String({ maxLength: 255 }),
        name: Type.Optional(Type.String({ maxLength: 255 })),
        meta: Type.Optional(Meta),
      }),
      { maxItems: 100, description: 'Accepted for compatibility with v1 clients; not stored.' },
    ),
  ),
});

export const LimitResult = Type.Object({
  success: Type.Boolean(),
  limit: Type.Integer(),
  remaining: Type.Integer(),
  reset: Type.Integer({ description: 'The end of the current window, epoch ms.' }),
});
