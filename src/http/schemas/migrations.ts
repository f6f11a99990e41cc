import { Type } from '@sinclair/typebox';
import { Meta, OneOf, Bounded } from './common.ts';
import { LinkName, Refill } from './keys.ts';
import { HASH_VARIANTS } from '../../services/migrations/hash-algorithms.ts';

/** The createKeys form of a key's rate limit, stored as its auto-applied limit `default`: `limit` requests per `refillInterval` ms. */
export const MigrationRatelimit = Type.Object(
  {
    type: Type.Optional(OneOf(['fast', 'consistent'] as const)),
    async: Type.Optional(Type.Boolean({ description: 'Deprecated: true means type fast.' })),
    limit: Bounded('limit', { minimum: 1 }),
    refillRate: Type.Optional(
      Bounded('limit', { minimum: 1, description: 'Deprecated; accepted and ignored (the window holds `limit` requests).' }),
    ),
    refillInterval: Bounded('duration', { description: 'Window in milliseconds.' }),
  },
  { additionalProperties: false },
);

/** An item of migrations.createKeys: one key, by its hash or its plaintext. */
export const ImportItem = Type.Object(
  {
    apiId: Type.String({ minLength: 1 }),
    prefix: Type.Optional(Type.String({ maxLength: 8, description: 'The plaintext must start with `<prefix>_`.' })),
    name: Type.Optional(Type.String({ maxLength: 256 })),
    plaintext: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'The whole key; stored only hashed and encrypted. Give exactly one of plaintext and hash.',
      }),
    ),
    hash: Type.Optional(
      Type.Object(
        {
          value: Type.String({
            description:
              'The hash in the form of `variant`: `sha256_base64` standard base64 (with padding) of the SHA-256 of the whole key; `sha256_hex` its 64 hex digits; `sha256_base64url` its base64url; `github.com/seamapi/prefixed-api-key` the 64 hex digits of the SHA-256 of the long token of `<prefix>_<short>_<long>`.',
          }),
          variant: OneOf(HASH_VARIANTS),
        },
        {
          additionalProperties: false,
          description:
            "How the key was hashed. `sha256_base64` is Keyhold's own form. In a migration (enqueueKeys), another variant must be the migration's algorithm: the key keeps that hash until its first verification naming the migration rewrites it. Without one (createKeys), `sha256_hex` and `sha256_base64url` are converted at once and the seam variant is refused.",
        },
      ),
    ),
    start: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'Default: prefix + `_` + 4 characters of a plaintext (its first 4 without a prefix); for a hash, prefix + `_`, or "".',
      }),
    ),
    ownerId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Deprecated: use externalId.' })),
    externalId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    meta: Type.Optional(Meta),
    roles: Type.Optional(Type.Array(LinkName, { maxItems: 1000, description: 'Role names; each must exist.' })),
    permissions: Type.Optional(Type.Array(LinkName, { maxItems: 1000, description: 'Permission slugs; each must exist.' })),
    expires: Type.Optional(Bounded('timestamp', { description: 'Epoch milliseconds.' })),
    remaining: Type.Optional(Bounded('count', { minimum: 1 })),
    refill: Type.Optional(Refill),
    ratelimit: Type.Optional(MigrationRatelimit),
    enabled: Type.Optional(Type.Boolean()),
    environment: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);

/** The enqueueKeys form of a key's rate limit: `limit` requests per `duration` ms, stored as its auto-applied limit `default`. */
export const EnqueueRatelimit = Type.Object(
  {
    type: Type.Optional(OneOf(['fast', 'consistent'] as const)),
    async: Type.Optional(Type.Boolean({ description: 'Deprecated: true means type fast.' })),
    limit: Bounded('limit', { minimum: 1 }),
    duration: Bounded('duration', { description: 'Window in milliseconds.' }),
  },
  { additionalProperties: false },
);

const { apiId: _apiId, externalId: _externalId, ratelimit: _ratelimit, ...shared } = ImportItem.properties;
/** An item of migrations.enqueueKeys: as createKeys', with the API given once for the request and the duration form of rate limit. */
export const EnqueueItem = Type.Object(
  {
    ...shared,
    ratelimit: Type.Optional(EnqueueRatelimit),
    // Declared, so that they are reported as not allowed rather than silently dropped with other undeclared members.
    apiId: Type.Optional(Type.Never({ description: 'Not allowed: give apiId once, at the top level.' })),
    externalId: Type.Optional(Type.Never({ description: 'Not allowed here.' })),
  },
  { additionalProperties: false },
);
