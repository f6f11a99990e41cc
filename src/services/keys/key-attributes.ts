import type { FieldProblem } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { MAX_META_BYTES, isObject, jsonSize } from '../../domain/json.ts';
import type { KeyRow, RatelimitRow } from '../../store/schema.ts';

// A key's attributes as every way of writing one takes them (keys.createKey, keys.updateKey, migrations).

export interface RefillInput {
  interval: 'daily' | 'monthly';
  amount: number;
  refillDay?: number;
}
export interface RatelimitInput {
  type?: 'fast' | 'consistent';
  async?: boolean;
  limit: number;
  duration?: number;
  refillRate?: number;
  refillInterval?: number;
}
/** A named rate limit of a key (Unkey v2's `ratelimits[]`); v1's singular `ratelimit` is the one named `default`. */
export interface NamedRatelimitInput {
  name: string;
  limit: number;
  /** Window in milliseconds. */
  duration: number;
  /** Applied to every verification of the key (cost 1), not only when a verification names it. */
  autoApply: boolean;
}
/** What a key is given however it is written (keys.createKey, migrations), besides its API and key material. */
export interface KeyAttributes {
  apiId: string;
  prefix?: string;
  name?: string;
  /** Deprecated alias of externalId; externalId wins when both are given. */
  ownerId?: string;
  externalId?: string;
  meta?: Record<string, unknown>;
  roles?: string[];
  permissions?: string[];
  expires?: number;
  remaining?: number;
  refill?: RefillInput;
  ratelimit?: RatelimitInput;
  /** Named limits besides (or instead of) `ratelimit`; names are unique per key, `default` being `ratelimit`'s. */
  ratelimits?: NamedRatelimitInput[];
  enabled?: boolean;
  environment?: string;
}

/**
 * Rules across fields that a schema cannot state; every problem is reported at once. Safe on a body that
 * failed schema validation (members of the wrong type are skipped), so both kinds of problem can be listed together.
 */
export function keyAttributeProblems(input: unknown): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (!isObject(input)) return problems;
  if (input.meta !== undefined && jsonSize(input.meta) > MAX_META_BYTES) {
    problems.push({ path: '/meta', message: `must be at most ${MAX_META_BYTES} bytes as JSON` });
  }
  const refill: unknown = input.refill;
  if (isObject(refill) && input.remaining === undefined) problems.push({ path: '/refill', message: 'refill requires remaining to be set' });
  if (isObject(refill) && refill.interval === 'daily' && refill.refillDay !== undefined) {
    problems.push({ path: '/refill/refillDay', message: "refillDay is only allowed with interval 'monthly'" });
  }
  const ratelimit: unknown = input.ratelimit;
  if (isObject(ratelimit) && ratelimit.duration === undefined && ratelimit.refillInterval === undefined) {
    problems.push({ path: '/ratelimit/duration', message: 'duration (or refillInterval) is required' });
  }
  problems.push(...ratelimitNameProblems(input.ratelimits, isObject(ratelimit)));
  return problems;
}

/**
 * A key's limits are found by name: a name given twice in `ratelimits` (or `default` there besides a
 * `ratelimit`) is a problem at the repeated item's name. Safe on any value.
 */
export function ratelimitNameProblems(ratelimits: unknown, hasDefault = false): FieldProblem[] {
  if (!Array.isArray(ratelimits)) return [];
  const seen = new Set<unknown>(hasDefault ? ['default'] : []);
  const problems: FieldProblem[] = [];
  ratelimits.forEach((rl: unknown, i) => {
    if (!isObject(rl) || typeof rl.name !== 'string') return;
    if (seen.has(rl.name)) {
      const why = rl.name === 'default' && hasDefault ? 'is the name of `ratelimit`' : 'is given twice';
      problems.push({ path: `/ratelimits/${i}/name`, message: `${why}: a key's rate limits have unique names` });
    }
    seen.add(rl.name);
  });
  return problems;
}

/** The key columns of a refill schedule (or of none): monthly refills default to the 1st; a new schedule starts `now`. */
export function refillColumns(refill: RefillInput | null | undefined, now: number) {
  return {
    refill_interval: refill?.interval ?? null,
    refill_amount: refill?.amount ?? null,
    refill_day: refill?.interval === 'monthly' ? (refill.refillDay ?? 1) : null,
    last_refill_at: refill ? now : null,
  } satisfies Partial<KeyRow>;
}

/** How a rate limit given without `type` is decided: `async: true` (deprecated) means fast, else consistent. */
export const ratelimitType = (rl: RatelimitInput): 'fast' | 'consistent' => rl.type ?? (rl.async ? 'fast' : 'consistent');

/** The row of a named limit of a key; v2 names no type, so it counts exactly (`consistent`), as v1's default does. */
export function namedRatelimitRow(workspaceId: string, keyId: string, rl: NamedRatelimitInput, now: number): RatelimitRow {
  return {
    id: newId('rl'),
    workspace_id: workspaceId,
    key_id: keyId,
    identity_id: null,
    name: rl.name,
    type: 'consistent',
    limit: rl.limit,
    duration: rl.duration,
    auto_apply: rl.autoApply ? 1 : 0,
    created_at: now,
    updated_at: now,
  };
}

/** The row of a key's own rate limit, stored as its auto-applied limit named `default`. */
export function defaultRatelimitRow(workspaceId: string, keyId: string, rl: RatelimitInput, now: number): RatelimitRow {
  return {
    id: newId('rl'),
    workspace_id: workspaceId,
    key_id: keyId,
    identity_id: null,
    name: 'default',
    type: ratelimitType(rl),
    limit: rl.limit,
    duration: rl.duration ?? rl.refillInterval!,
    auto_apply: 1,
    created_at: now,
    updated_at: now,
  };
}
