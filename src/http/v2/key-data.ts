import { Type, type Static } from '@sinclair/typebox';
import type { KeyView, LimitView } from '../../services/keys/key-view.ts';
import type { CreditsAfter } from '../../services/keys/update-remaining.ts';
import { Meta, Nullable, OneOf } from '../schemas/common.ts';

// A key in Unkey v2's terms (keys.getKey, keys.whoami, apis.listKeys, and the keys keys.verifyKey and
// keys.rerollKey describe), mapped from the KeyView both versions read. v2 omits every empty member (its
// clients reject null for optional members): no name, an empty meta, no roles, … are absent, never null.

/** A configured rate limit of a key or identity. */
export const V2Ratelimit = Type.Object({
  id: Type.String(),
  name: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer({ description: 'Window in milliseconds.' }),
  autoApply: Type.Boolean({ description: 'Applied to every verification, not only when a verification names it.' }),
});

/** A refill schedule: `refillDay` only for monthly refills. */
export const V2Refill = Type.Object({
  interval: OneOf(['daily', 'monthly'] as const),
  amount: Type.Integer(),
  refillDay: Type.Optional(Type.Integer({ minimum: 1, maximum: 31 })),
});

/** A key's credits (KeyCreditsData): `remaining` null means unlimited. */
export const KeyCreditsData = Type.Object({
  remaining: Nullable(Type.Integer({ description: 'Credits left; null: unlimited.' })),
  refill: Type.Optional(V2Refill),
});
export type KeyCreditsData = Static<typeof KeyCreditsData>;

/** Unkey v2's KeyResponseData. */
export const KeyResponseData = Type.Object({
  keyId: Type.String(),
  start: Type.String(),
  enabled: Type.Boolean(),
  createdAt: Type.Integer({ description: 'Epoch milliseconds.' }),
  name: Type.Optional(Type.String()),
  meta: Type.Optional(Meta),
  updatedAt: Type.Optional(Type.Integer()),
  lastUsedAt: Type.Optional(Type.Integer()),
  expires: Type.Optional(Type.Integer()),
  credits: Type.Optional(KeyCreditsData),
  permissions: Type.Optional(Type.Array(Type.String(), { description: 'Slugs of the permissions held directly or through a role.' })),
  roles: Type.Optional(Type.Array(Type.String(), { description: 'Role names.' })),
  ratelimits: Type.Optional(Type.Array(V2Ratelimit, { description: "The key's own rate limits." })),
  identity: Type.Optional(
    Type.Object({
      id: Type.String(),
      externalId: Type.String(),
      meta: Type.Optional(Meta),
      ratelimits: Type.Optional(Type.Array(V2Ratelimit, { description: "The identity's rate limits." })),
    }),
  ),
  plaintext: Type.Optional(Type.String({ description: 'Only with `decrypt: true`, for a key stored encrypted.' })),
});
export type KeyResponseData = Static<typeof KeyResponseData>;

const hasMembers = (o: Record<string, unknown> | undefined): o is Record<string, unknown> => !!o && Object.keys(o).length > 0;
const nonEmpty = <T>(xs: T[] | undefined): xs is T[] => !!xs && xs.length > 0;
const limits = (ls: LimitView[]) => ls.map(({ id, name, limit, duration, autoApply }) => ({ id, name, limit, duration, autoApply }));

/** A key's credits in v2's shape, from its remaining count (null or absent: unlimited) and refill schedule. */
export function creditsData(remaining: number | null | undefined, refill: CreditsAfter['refill'] | KeyView['refill']): KeyCreditsData {
  return {
    remaining: remaining ?? null,
    ...(refill
      ? {
          refill: {
            interval: refill.interval,
            amount: refill.amount,
            ...(refill.interval === 'monthly' && refill.refillDay !== undefined ? { refillDay: refill.refillDay } : {}),
          },
        }
      : {}),
  };
}

/** The KeyResponseData of a key: every empty member left out (`credits` only for a key with a credit count). */
export function keyData(view: KeyView): KeyResponseData {
  const identity = view.identity;
  return {
    keyId: view.id,
    start: view.start,
    enabled: view.enabled,
    createdAt: view.createdAt,
    ...(view.name ? { name: view.name } : {}),
    ...(hasMembers(view.meta) ? { meta: view.meta } : {}),
    ...(view.updatedAt ? { updatedAt: view.updatedAt } : {}),
    ...(view.lastUsedAt ? { lastUsedAt: view.lastUsedAt } : {}),
    ...(view.expires !== undefined ? { expires: view.expires } : {}),
    ...(view.remaining !== undefined ? { credits: creditsData(view.remaining, view.refill) } : {}),
    ...(nonEmpty(view.permissions) ? { permissions: view.permissions } : {}),
    ...(nonEmpty(view.roles) ? { roles: view.roles } : {}),
    ...(nonEmpty(view.ratelimits) ? { ratelimits: limits(view.ratelimits) } : {}),
    ...(identity
      ? {
          identity: {
            id: identity.id,
            externalId: identity.externalId,
            ...(hasMembers(identity.meta) ? { meta: identity.meta } : {}),
            ...(nonEmpty(identity.ratelimits) ? { ratelimits: limits(identity.ratelimits) } : {}),
          },
        }
      : {}),
    ...(view.plaintext !== undefined ? { plaintext: view.plaintext } : {}),
  };
}
