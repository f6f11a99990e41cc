/**
 * A small in-memory model of a key's state machine, written from docs/key-verification.md,
 * docs/api-reference.md and docs/compatibility-v2.md (not from the code): what each operation does to a key and
 * what keys.verifyKey answers. test/model/key-commands.ts drives the real app and compares every answer with it.
 */

/** The workspace's permissions and roles every sequence uses (created once per world: test/model/model-world.ts). */
export const PERMISSIONS = ['model.read', 'model.write', 'model.admin'] as const;
export const ROLES: Record<string, readonly string[]> = {
  'model-reader': ['model.read'],
  'model-writer': ['model.read', 'model.write'],
};
/** A role name that does not exist: naming it is a 404 that changes nothing. */
export const UNKNOWN_ROLE = 'model-nobody';
/** Rate-limit windows this long (366 days, the bound) never end during a sequence: a key's count only grows. */
export const LONG_WINDOW_MS = 31_622_400_000;
/** A reroll's grace period longer than any sequence. */
export const LONG_GRACE_MS = 3_600_000;

export type Query = string | { and: Query[] } | { or: Query[] };

export interface ModelKey {
  keyId: string;
  key: string;
  /** Index of the world's API the key belongs to. */
  api: number;
  enabled: boolean;
  /** Credits left; null: unlimited. */
  remaining: number | null;
  direct: Set<string>;
  roles: Set<string>;
  /** The key's own rate limit per (long) window, null: none; its name (v1's `ratelimit` is named `default`). */
  limit: number | null;
  limitName: string;
  /** The externalId as sent (unique to the sequence: see Model.tag). */
  externalId?: string;
  /** Rerolled with no grace period: its expiry has passed. */
  expired: boolean;
  deleted: boolean;
}

export interface Model {
  keys: ModelKey[];
  /**
   * What each rate-limit counter admitted. A counter is per (identity when the key has one, else the key; name;
   * limit; duration; window): keys of one identity share their limits' counters (docs/rate-limiting.md).
   */
  counters: Map<string, number>;
  /** Appended to the externalIds of a sequence, so that no two sequences share an identity's counters. */
  tag: string;
}

let sequence = 0;
export const newModel = (): Model => ({ keys: [], counters: new Map(), tag: `${process.pid}-${Date.now()}-${sequence++}` });

const counterOf = (k: ModelKey): string => `${k.externalId ?? k.keyId}|${k.limitName}|${k.limit}`;

export type VerifyCode =
  | 'NOT_FOUND'
  | 'DISABLED'
  | 'FORBIDDEN'
  | 'EXPIRED'
  | 'INSUFFICIENT_PERMISSIONS'
  | 'RATE_LIMITED'
  | 'USAGE_EXCEEDED'
  | 'VALID';

export interface VerifyInput {
  /** v1 only: the API the verification is for (undefined: none named). */
  api?: number;
  query?: Query;
  /** undefined: the default cost, 1. */
  cost?: number;
}

/** Effective permissions: direct and through roles, de-duplicated and sorted. */
export function effective(k: ModelKey): string[] {
  const all = new Set(k.direct);
  for (const r of k.roles) for (const p of ROLES[r] ?? []) all.add(p);
  return [...all].sort();
}

export function holds(q: Query, perms: ReadonlySet<string>): boolean {
  if (typeof q === 'string') return perms.has(q);
  if ('and' in q) return q.and.every((s) => holds(s, perms));
  return q.or.some((s) => holds(s, perms));
}

/** The v2 text of a query: `a AND (b OR c)`. */
export function queryText(q: Query): string {
  if (typeof q === 'string') return q;
  const [parts, op] = 'and' in q ? [q.and, ' AND '] : [q.or, ' OR '];
  return `(${parts.map(queryText).join(op)})`;
}

/**
 * keys.verifyKey: the first failing check wins, in the documented order (NOT_FOUND, DISABLED, FORBIDDEN,
 * EXPIRED, INSUFFICIENT_PERMISSIONS, RATE_LIMITED, USAGE_EXCEEDED, VALID). A verification that passes the
 * rate limit counts in its window; only a VALID one spends credits (`cost`, default 1; 0 spends nothing and
 * passes at 0 left). Mutates `k` as the server would.
 */
export function verify(m: Model, k: ModelKey | undefined, input: VerifyInput): VerifyCode {
  if (!k || k.deleted) return 'NOT_FOUND';
  if (!k.enabled) return 'DISABLED';
  if (input.api !== undefined && input.api !== k.api) return 'FORBIDDEN';
  if (k.expired) return 'EXPIRED';
  if (input.query !== undefined && !holds(input.query, new Set(effective(k)))) return 'INSUFFICIENT_PERMISSIONS';
  if (k.limit !== null) {
    const used = m.counters.get(counterOf(k)) ?? 0;
    if (used + 1 > k.limit) return 'RATE_LIMITED';
    m.counters.set(counterOf(k), used + 1);
  }
  const cost = input.cost ?? 1;
  if (k.remaining !== null) {
    if (cost > k.remaining) return 'USAGE_EXCEEDED';
    k.remaining -= cost;
  }
  return 'VALID';
}

export type CreditOp = 'set' | 'increment' | 'decrement';

/**
 * keys.updateRemaining (v1) / keys.updateCredits (v2): the status the server answers, and the change made on 200.
 * increment/decrement of an unlimited key is a 400 on both; a decrement below 0 is a 400 on v1, floors at 0 on v2.
 */
export function updateCredits(k: ModelKey | undefined, version: 1 | 2, op: CreditOp, value: number | null): number {
  if (!k || k.deleted) return 404;
  if (op === 'set') {
    k.remaining = value;
    return 200;
  }
  if (k.remaining === null || value === null) return 400;
  if (op === 'increment') k.remaining += value;
  else if (value <= k.remaining) k.remaining -= value;
  else if (version === 2) k.remaining = 0;
  else return 400;
  return 200;
}

export type LinkKind = 'permissions' | 'roles';
export type LinkMode = 'add' | 'remove' | 'set';

/**
 * keys.<mode>Permissions / keys.<mode>Roles: atomic, an unknown role is a 404 (of the role) that changes nothing.
 * v1 takes 1 to 1000 items (its OpenAPI schema; v1 has no empty set), v2's set takes 0 (clears them).
 */
export function changeLinks(k: ModelKey | undefined, version: 1 | 2, kind: LinkKind, mode: LinkMode, items: string[]): number | 'role-404' {
  if (version === 1 && items.length === 0) return 400;
  if (!k || k.deleted) return 404;
  if (kind === 'roles' && items.some((r) => !(r in ROLES))) return 'role-404';
  const set = kind === 'roles' ? k.roles : k.direct;
  if (mode === 'set') set.clear();
  for (const item of items) {
    if (mode === 'remove') set.delete(item);
    else set.add(item);
  }
  return 200;
}

/**
 * v2 keys.rerollKey: a new key with everything the old one has (its rate limits count on its own counters
 * unless it has an identity), the old one expiring after `grace`.
 */
export function reroll(k: ModelKey, grace: number, fresh: { keyId: string; key: string }): ModelKey {
  const copy: ModelKey = { ...k, ...fresh, direct: new Set(k.direct), roles: new Set(k.roles) };
  if (grace === 0) k.expired = true;
  return copy;
}

export const sorted = (s: Iterable<string>): string[] => [...s].sort();
