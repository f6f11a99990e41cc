import { Type } from '@sinclair/typebox';
import { Meta, Bounded } from './common.ts';

/** The identity rate limits of identities.createIdentity and updateIdentity: named, shared by the identity's keys. */
export const IdentityRatelimits = Type.Array(
  Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 256 }),
      limit: Bounded('limit', { minimum: 1 }),
      duration: Bounded('duration', { description: 'Window in milliseconds.' }),
    },
    { additionalProperties: false },
  ),
  { maxItems: 100 },
);

export const IdentityView = Type.Object({
  id: Type.String(),
  externalId: Type.String(),
  environment: Type.String(),
  meta: Meta,
  ratelimits: Type.Array(Type.Object({ name: Type.String(), limit: Type.Integer(), duration: Type.Integer() })),
});
