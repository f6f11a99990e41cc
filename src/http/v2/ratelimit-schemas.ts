import { Type } from '@sinclair/typebox';
import { MAX_RATELIMIT_NAME } from '../../domain/bounds.ts';
import { Body, Bounded } from '../schemas/common.ts';
import { OverrideIdentifier, RatelimitIdentifier } from '../schemas/ratelimits.ts';

/** v2's one `namespace` member: a namespace's id (`rlns_…`) or its name, as v1's namespaceId or namespaceName. */
export const NamespaceNameOrId = Type.String({
  minLength: 1,
  maxLength: MAX_RATELIMIT_NAME,
  description: 'The namespace’s name or its id (`rlns_…`); the id wins when a namespace is named like another one’s id.',
});

/** The body of ratelimit.limit, and each item of ratelimit.multiLimit's. */
export const V2LimitBody = Body({
  namespace: {
    ...NamespaceNameOrId,
    description: `${NamespaceNameOrId.description} Created on first use (needs \`ratelimit.*.create_namespace\`).`,
  },
  identifier: RatelimitIdentifier,
  limit: Bounded('limit', { minimum: 1, description: 'Max total cost per window.' }),
  duration: Bounded('duration', { description: 'Window length in ms.' }),
  cost: Type.Optional(Bounded('cost', { default: 1, description: '0 reports the state without consuming.' })),
});

const OverrideId = Type.Optional(
  Type.String({ description: 'The override whose limit and duration replaced the request’s, if one matched.' }),
);

/** What ratelimit.limit answers. */
export const V2LimitResult = Type.Object({
  limit: Type.Integer({ description: 'The limit applied (the override’s when one matched).' }),
  remaining: Type.Integer(),
  reset: Type.Integer({ description: 'The end of the current window, epoch ms.' }),
  success: Type.Boolean({ description: 'Whether the request may proceed (a refusal is not an HTTP error).' }),
  overrideId: OverrideId,
});

/** One item of ratelimit.multiLimit's answer, in request order. */
export const V2MultiLimitItem = Type.Object({
  namespace: Type.String({ description: 'As the request named it.' }),
  identifier: Type.String(),
  limit: Type.Integer(),
  remaining: Type.Integer(),
  reset: Type.Integer({ description: 'The end of the current window, epoch ms.' }),
  passed: Type.Boolean({ description: 'Whether this item fit its limit (after the items before it on the same counter).' }),
  overrideId: OverrideId,
});

/** The body naming one override of a namespace. */
export const V2OverrideRef = { namespace: NamespaceNameOrId, identifier: OverrideIdentifier };

/** An override as v2 shows it. */
export const V2Override = Type.Object({
  overrideId: Type.String(),
  identifier: Type.String({ description: 'An identifier, or a pattern where `*` matches any characters.' }),
  limit: Type.Integer(),
  duration: Type.Integer({ description: 'Window length in ms.' }),
});

/** An override row of a service as v2 shows it. */
export const v2Override = (o: { id: string; identifier: string; limit: number; duration: number }) => ({
  overrideId: o.id,
  identifier: o.identifier,
  limit: o.limit,
  duration: o.duration,
});
