import { Type } from '@sinclair/typebox';
import { AppError, invalid, type FieldProblem } from '../../domain/errors.ts';
import { isObject } from '../../domain/json.ts';
import { keyAttributeProblems, type NamedRatelimitInput, type RefillInput } from '../../services/keys/key-attributes.ts';
import type { CreateKeyInput } from '../../services/keys/create-key.ts';
import { updateKeyProblems, type UpdateKeyInput } from '../../services/keys/update-key.ts';
import { Bounded, OneOf } from '../schemas/common.ts';

// Unkey v2's key members (keys.createKey, keys.updateKey) as schemas, their mapping onto the key services'
// input (the attributes v1 also writes), and the services' problems reported at v2's paths.

/** v2's `expires`: epoch milliseconds up to 2100-01-01. */
export const V2Expires = Type.Integer({ minimum: 0, maximum: 4_102_444_800_000, description: 'Epoch milliseconds.' });
export const V2ExternalId = Type.String({ minLength: 1, maxLength: 255, pattern: '^[a-zA-Z0-9_.-]+$' });
export const V2KeyName = Type.String({ minLength: 1, maxLength: 255 });
export const RoleNames = (minItems: number) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { minItems, maxItems: 100, description: 'Role names.' });
export const PermissionSlugs = (minItems: number) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-zA-Z0-9_:\\-\\.\\*]+$' }), {
    minItems,
    maxItems: 1000,
    description: 'Permission slugs.',
  });

export const V2RefillRequest = Type.Object(
  {
    interval: OneOf(['daily', 'monthly'] as const),
    amount: Bounded('count', { minimum: 1 }),
    refillDay: Type.Optional(Type.Integer({ minimum: 1, maximum: 31, description: 'Required with, and only allowed with, monthly.' })),
  },
  { additionalProperties: false },
);

export const V2RatelimitRequest = Type.Object({
  name: Type.String({ minLength: 3, maxLength: 128, description: "Unique among the key's limits." }),
  limit: Bounded('limit', { minimum: 1 }),
  duration: Bounded('duration', { description: 'Window in milliseconds.' }),
  autoApply: Type.Boolean({ description: 'Applied to every verification (cost 1), not only when a verification names it.' }),
});
export const V2Ratelimits = Type.Array(V2RatelimitRequest, { maxItems: 50 });

/** Where the services' v1-shaped paths are in v2's bodies. */
const V2_PATHS: Array<[string, string]> = [
  ['/refill', '/credits/refill'],
  ['/remaining', '/credits/remaining'],
  ['/op', '/operation'],
];

const v2Path = (path: string): string => {
  for (const [v1, v2] of V2_PATHS) if (path === v1 || path.startsWith(`${v1}/`)) return v2 + path.slice(v1.length);
  return path;
};

/** Problems of a service at v2's paths. */
const atV2Paths = (problems: FieldProblem[]): FieldProblem[] => problems.map((p) => ({ ...p, path: v2Path(p.path) }));

/** Runs a service call, reporting its 400 problems at v2's paths (`/credits/refill` for v1's `/refill`, …). */
export async function withV2Paths<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof AppError && err.kind === 'request/invalid-body' && err.errors) throw invalid(atV2Paths(err.errors));
    throw err;
  }
}

/** v2 requires the day of a monthly refill (v1 defaults it to the 1st). */
function refillDayProblems(refill: unknown, path: string): FieldProblem[] {
  return isObject(refill) && refill.interval === 'monthly' && refill.refillDay === undefined
    ? [{ path: `${path}/refillDay`, message: 'is required when the refill interval is monthly' }]
    : [];
}

type V2Credits = { remaining: number | null; refill?: RefillInput };

export interface V2CreateKeyBody {
  apiId: string;
  prefix?: string;
  name?: string;
  byteLength?: number;
  externalId?: string;
  meta?: Record<string, unknown>;
  roles?: string[];
  permissions?: string[];
  expires?: number;
  credits?: V2Credits;
  ratelimits?: NamedRatelimitInput[];
  enabled?: boolean;
  recoverable?: boolean;
}

/** keys.createKey's input for a v2 body: credits as remaining and refill, roles that must exist. */
export function createKeyInput(body: V2CreateKeyBody): CreateKeyInput {
  const { credits, ...rest } = body;
  return { ...rest, remaining: credits?.remaining ?? undefined, refill: credits?.refill, unknownRoles: 'not-found' };
}

/** The cross-field rules of a v2 keys.createKey body, at v2's paths; safe on a body that failed its schema. */
export function createKeyRules(body: unknown): FieldProblem[] {
  if (!isObject(body)) return [];
  const credits = isObject(body.credits) ? body.credits : {};
  const mapped = { meta: body.meta, ratelimits: body.ratelimits, remaining: credits.remaining ?? undefined, refill: credits.refill };
  return [...atV2Paths(keyAttributeProblems(mapped)), ...refillDayProblems(credits.refill, '/credits/refill')];
}

export interface V2UpdateKeyBody {
  keyId: string;
  name?: string | null;
  externalId?: string | null;
  meta?: Record<string, unknown> | null;
  expires?: number | null;
  credits?: { remaining?: number | null; refill?: RefillInput | null } | null;
  ratelimits?: NamedRatelimitInput[];
  enabled?: boolean;
  roles?: string[];
  permissions?: string[];
}

/**
 * keys.updateKey's input for a v2 body. `credits: null` and `credits.remaining: null` make the key unlimited
 * and remove its refill (a refill needs a count); roles must exist; missing permission slugs are created.
 */
export function updateKeyInput(body: V2UpdateKeyBody): UpdateKeyInput {
  const { credits, roles, permissions, ...rest } = body;
  const input: UpdateKeyInput = { ...rest };
  if (credits === null) Object.assign(input, { remaining: null, refill: null });
  else if (credits) {
    if (credits.remaining !== undefined) input.remaining = credits.remaining;
    if (credits.refill !== undefined) input.refill = credits.refill;
    else if (credits.remaining === null) input.refill = null;
  }
  if (roles) input.roles = roles.map((name) => ({ name }));
  if (permissions) input.permissions = permissions.map((slug) => ({ slug, create: true }));
  return input;
}

/** The cross-field rules of a v2 keys.updateKey body, at v2's paths; safe on a body that failed its schema. */
export function updateKeyRules(body: unknown): FieldProblem[] {
  if (!isObject(body)) return [];
  const credits = isObject(body.credits) ? body.credits : {};
  const mapped = { meta: body.meta, ratelimits: body.ratelimits, remaining: credits.remaining, refill: credits.refill };
  return [...atV2Paths(updateKeyProblems(mapped)), ...refillDayProblems(credits.refill, '/credits/refill')];
}
