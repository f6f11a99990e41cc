import { Type } from '@sinclair/typebox';
import { Body, Meta, OneOf, Bounded, VerificationTags } from './common.ts';
import { VERIFY_CODES } from '../../domain/verify-codes.ts';

/** A role or permission name as given to keys.createKey and migrations: 1..512 characters. */
export const LinkName = Type.String({ minLength: 1, maxLength: 512 });

export const Refill = Type.Object(
  {
    interval: OneOf(['daily', 'monthly'] as const),
    amount: Bounded('count', { minimum: 1 }),
    refillDay: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 31, description: "Monthly only; default 1. Past the month's end, the last day." }),
    ),
  },
  { additionalProperties: false },
);

/** A key's own rate limit, stored as its limit named `default`; `duration` or its alias `refillInterval` is required (a cross-field rule). */
export const Ratelimit = Type.Object(
  {
    type: Type.Optional(OneOf(['fast', 'consistent'] as const)),
    async: Type.Optional(Type.Boolean({ description: 'Deprecated: true means type fast.' })),
    limit: Bounded('limit', { minimum: 1 }),
    duration: Type.Optional(Bounded('duration', { description: 'Window in milliseconds.' })),
    refillRate: Type.Optional(Bounded('limit', { minimum: 1, description: 'Deprecated.' })),
    refillInterval: Type.Optional(Bounded('duration', { description: 'Deprecated alias of duration.' })),
  },
  { additionalProperties: false },
);

/** A key as keys.getKey and apis.listKeys return it (never its hash; `plaintext` only when decrypted). */
export const KeyView = Type.Object({
  id: Type.String(),
  start: Type.String(),
  apiId: Type.String(),
  workspaceId: Type.String(),
  name: Type.Optional(Type.String()),
  ownerId: Type.Optional(Type.String({ description: "Deprecated: the identity's externalId." })),
  externalId: Type.Optional(Type.String()),
  meta: Type.Optional(Meta),
  createdAt: Type.Integer(),
  updatedAt: Type.Integer(),
  lastUsedAt: Type.Optional(Type.Integer()),
  expires: Type.Optional(Type.Integer()),
  remaining: Type.Optional(Type.Integer()),
  refill: Type.Optional(
    Type.Object({
      interval: Type.Union([Type.Literal('daily'), Type.Literal('monthly')]),
      amount: Type.Integer(),
      refillDay: Type.Optional(Type.Integer()),
      lastRefillAt: Type.Optional(Type.Integer()),
    }),
  ),
  ratelimit: Type.Optional(
    Type.Object({
      async: Type.Boolean(),
      type: Type.Union([Type.Literal('fast'), Type.Literal('consistent')]),
      limit: Type.Integer(),
      duration: Type.Integer(),
      refillRate: Type.Integer(),
      refillInterval: Type.Integer(),
    }),
  ),
  roles: Type.Array(Type.String()),
  permissions: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  environment: Type.Optional(Type.String()),
  identity: Type.Optional(Type.Object({ id: Type.String(), externalId: Type.String(), meta: Meta })),
  plaintext: Type.Optional(Type.String()),
});

/** A verification outcome. */
const Code = OneOf(VERIFY_CODES);

/** The request body of keys.verifyKey (also compiled by the lane, http/lane-operations.ts). */
export const VerifyKeyBody = Body({
  key: Type.String({ minLength: 1, maxLength: 1024 }),
  apiId: Type.Optional(Type.String({ minLength: 1, description: 'The key must belong to this API (else FORBIDDEN).' })),
  authorization: Type.Optional(
    Type.Object(
      {
        permissions: Type.Unknown({ description: 'A permission, or {and: [...]} / {or: [...]} of queries, nested.' }),
      },
      { additionalProperties: false },
    ),
  ),
  remaining: Type.Optional(Type.Object({ cost: Type.Optional(Bounded('cost', { default: 1 })) }, { additionalProperties: false })),
  ratelimits: Type.Optional(
    Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1 }),
          cost: Type.Optional(Bounded('cost', { default: 1 })),
          limit: Type.Optional(Bounded('limit')),
          duration: Type.Optional(Bounded('duration', { description: 'Window in milliseconds.' })),
        },
        { additionalProperties: false },
      ),
      { maxItems: 20 },
    ),
  ),
  tags: Type.Optional(VerificationTags),
});

/** The 200 body of keys.verifyKey. */
export const VerifyKeyResult = Type.Object({
  valid: Type.Boolean(),
  code: Code,
  keyId: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  ownerId: Type.Optional(Type.String({ description: "Deprecated: the identity's externalId." })),
  externalId: Type.Optional(Type.String()),
  meta: Type.Optional(Meta),
  expires: Type.Optional(Type.Integer()),
  remaining: Type.Optional(Type.Integer({ description: 'Credits left after this call.' })),
  ratelimit: Type.Optional(Type.Object({ limit: Type.Integer(), remaining: Type.Integer(), reset: Type.Integer() })),
  enabled: Type.Optional(Type.Boolean()),
  permissions: Type.Optional(Type.Array(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  environment: Type.Optional(Type.String()),
  identity: Type.Optional(Type.Object({ id: Type.String(), externalId: Type.String(), meta: Meta })),
  requestId: Type.String(),
});
