import { Type } from '@sinclair/typebox';
import type { IdentityView } from '../../services/identities/identities.ts';
import { Bounded, Meta } from '../schemas/common.ts';

/**
 * The identity shapes of Unkey v2's identities.* operations: its RatelimitRequest items, the Identity
 * object (empty `meta` and `ratelimits` omitted, never null) and the `identity` member naming one.
 */

/** A rate limit as v2 requests give it. `autoApply` may be left out (false); v2's schema insists on it. */
export const V2RatelimitRequests = Type.Array(
  Type.Object(
    {
      name: Type.String({ minLength: 3, maxLength: 128 }),
      limit: Bounded('limit', { minimum: 1 }),
      duration: Bounded('duration', { description: 'Window in milliseconds.' }),
      autoApply: Type.Optional(
        Type.Boolean({ default: false, description: 'Apply it to every verification of the keys, not only those naming it.' }),
      ),
    },
    { additionalProperties: false },
  ),
  { maxItems: 50 },
);

export const V2Identity = Type.Object({
  id: Type.String(),
  externalId: Type.String(),
  meta: Type.Optional(Meta),
  ratelimits: Type.Optional(
    Type.Array(
      Type.Object({ id: Type.String(), name: Type.String(), limit: Type.Integer(), duration: Type.Integer(), autoApply: Type.Boolean() }),
    ),
  ),
});

/** The `identity` member of get/update/deleteIdentity. */
export const IdentityRef = Type.String({ minLength: 1, description: "The identity's id (`id_…`) or its externalId." });

/** An identity as v2 shows it: `meta` and `ratelimits` only when not empty. */
export const v2Identity = (v: IdentityView) => ({
  id: v.id,
  externalId: v.externalId,
  ...(Object.keys(v.meta).length > 0 ? { meta: v.meta } : {}),
  ...(v.ratelimits.length > 0 ? { ratelimits: v.ratelimits } : {}),
});
