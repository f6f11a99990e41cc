import { Type, type Static } from '@sinclair/typebox';
import { VERIFY_CODES } from '../../domain/verify-codes.ts';
import type { VerifyRequest } from '../../services/verification/verifier.ts';
import type { VerifiedV2 } from '../../services/verification/verify-key-v2.ts';
import { Body, Bounded, Meta, OneOf, VerificationTags } from '../schemas/common.ts';

// keys.verifyKey v2: its body and `data`, and the mapping of the verifier's answer (shared with v1) onto them.

/** A verification is small: larger bodies are a 413, as on v1's keys.verifyKey (64 KiB). */
export const VERIFY_V2_BODY_LIMIT = 64 * 1024;

/** The body of /v2/keys.verifyKey. Bounds are v1's where v2's are narrower, so a key verifiable by v1 is verifiable here. */
export const VerifyKeyV2Body = Body({
  key: Type.String({ minLength: 1, maxLength: 1024, description: 'The key to verify.' }),
  tags: Type.Optional(VerificationTags),
  permissions: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1000,
      description:
        'A permission query the key must satisfy: permission names joined by `AND` / `OR` (any case; AND binds tighter) with parentheses, ' +
        'e.g. `docs.read AND (docs.write OR admin)`. Names match exactly (`*` is a literal character). A syntax error is a 400.',
    }),
  ),
  credits: Type.Optional(
    Type.Object(
      { cost: Bounded('cost', { description: 'Credits this verification spends (0 spends none and passes even at 0 left).' }) },
      { additionalProperties: false, description: 'Default: a key with credits spends 1; a key without credits never spends.' },
    ),
  ),
  ratelimits: Type.Optional(
    Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 255 }),
          cost: Type.Optional(Bounded('cost', { default: 1 })),
          limit: Type.Optional(Bounded('limit')),
          duration: Type.Optional(Bounded('duration', { description: 'Window in milliseconds.' })),
        },
        { additionalProperties: false },
      ),
      {
        maxItems: 20,
        description:
          "Limits to check besides the auto-applied ones: with `limit` and `duration`, an inline limit under that name; otherwise the key's " +
          "or its identity's configured limit of that name (neither → 400).",
      },
    ),
  ),
  migrationId: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description:
        'When the key is not found: look it up among the keys of this migration stored with a foreign hash, rehash it and verify it.',
    }),
  ),
});
export type VerifyKeyV2Input = Static<typeof VerifyKeyV2Body>;

const Limit = {
  name: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer({ description: 'Window in milliseconds.' }),
  autoApply: Type.Boolean(),
};

/** `data` of /v2/keys.verifyKey; empty members are omitted, and a NOT_FOUND answer has only `valid` and `code`. */
export const VerifyKeyV2Data = Type.Object({
  valid: Type.Boolean(),
  code: OneOf(VERIFY_CODES),
  keyId: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  meta: Type.Optional(Meta),
  expires: Type.Optional(Type.Integer()),
  credits: Type.Optional(Type.Integer({ description: 'Credits left after this verification; absent when the key has no credit limit.' })),
  enabled: Type.Optional(Type.Boolean()),
  permissions: Type.Optional(Type.Array(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  identity: Type.Optional(
    Type.Object({
      id: Type.String(),
      externalId: Type.String(),
      meta: Type.Optional(Meta),
      ratelimits: Type.Optional(Type.Array(Type.Object({ id: Type.String(), ...Limit }), { description: "The identity's own limits." })),
    }),
  ),
  ratelimits: Type.Optional(
    Type.Array(
      Type.Object({
        id: Type.String({ description: 'The configured limit; "" for an inline limit.' }),
        ...Limit,
        reset: Type.Integer({ description: 'When the window ends, epoch milliseconds.' }),
        remaining: Type.Integer(),
        exceeded: Type.Boolean(),
      }),
      { description: 'Every limit this verification checked.' },
    ),
  ),
});
type VerifyKeyV2Answer = Static<typeof VerifyKeyV2Data>;

/** The verifier's request for a v2 body whose permission query is already parsed. */
export function verifierRequest(body: VerifyKeyV2Input, query: VerifyRequest['authorization']): VerifyRequest {
  return {
    key: body.key,
    authorization: query,
    remaining: body.credits && { cost: body.credits.cost },
    ratelimits: body.ratelimits,
    tags: body.tags,
  };
}

const nonEmpty = <T extends object>(value: T | undefined): T | undefined =>
  value === undefined || Object.keys(value).length === 0 ? undefined : value;

/** The v2 `data` of a verification the service found and authorized (not NOT_FOUND). */
export function verifyKeyV2Data({ response: r, identityLimits, checkedLimits }: VerifiedV2): VerifyKeyV2Answer {
  return {
    valid: r.valid,
    code: r.code,
    keyId: r.keyId,
    name: r.name || undefined,
    meta: nonEmpty(r.meta),
    expires: r.expires,
    credits: r.remaining,
    enabled: r.enabled,
    permissions: r.permissions?.length ? [...r.permissions] : undefined,
    roles: r.roles?.length ? [...r.roles] : undefined,
    identity: r.identity && {
      id: r.identity.id,
      externalId: r.identity.externalId,
      meta: nonEmpty(r.identity.meta),
      ratelimits: identityLimits.length ? identityLimits : undefined,
    },
    ratelimits: checkedLimits,
  };
}
