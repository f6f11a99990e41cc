import { isObject } from '../../domain/json.ts';
import type { FieldProblem } from '../../domain/errors.ts';
import { hashKey } from '../../crypto/keys.ts';
import { keyAttributeProblems, ratelimitNameProblems, type KeyAttributes } from '../keys/key-attributes.ts';
import {
  algorithmOfVariant,
  HASH_FORMATS,
  HASH_VARIANTS,
  isHashVariant,
  normalizedHash,
  sameKeyHashes,
  SEAM,
  wholeKeyDigest,
  type HashVariant,
} from './hash-algorithms.ts';

/**
 * One key to import (migrations.createKeys item; migrations.enqueueKeys and keys.migrateKeys items once their
 * apiId is filled in). Exactly one of `hash` and `plaintext`. The rate limit takes either form: `{limit,
 * duration}` or the createKeys `{limit, refillInterval}` (refillRate is accepted and ignored, as in keys.createKey).
 */
export interface ImportKeyItem extends KeyAttributes {
  plaintext?: string;
  /** The key's hash as the algorithm `variant` computed it (hash-algorithms.ts). */
  hash?: { value: string; variant: HashVariant };
  start?: string;
  /**
   * The plaintext, already encrypted by the vault (with `hash`, instead of `plaintext`): lets a caller that
   * must not hold plaintexts at rest (the migration queue) encrypt at enqueue time and import later.
   */
  encrypted?: { dataKeyId: string; ciphertext: string };
}

/** A migrations.createKeys request holds 1..1000 items. */
export const MAX_IMPORT_ITEMS = 1000;

export const isSha256Base64 = (value: string): boolean => normalizedHash('sha256', value) !== undefined;

/** The problems of an item's `hash` (variant, and value in that variant's form); `migrated`: imported into a migration. */
function hashProblems(h: Record<string, unknown>, base: string, migrated: boolean | undefined): FieldProblem[] {
  const { value, variant } = h;
  if (typeof variant === 'string' && !isHashVariant(variant))
    return [{ path: `${base}/hash/variant`, message: `must be one of ${HASH_VARIANTS.join(', ')}` }];
  if (migrated === false && variant === SEAM)
    return [
      {
        path: `${base}/hash/variant`,
        message: `${SEAM} hashes only the long token: import such keys into a migration (migrations.enqueueKeys, /v2/keys.migrateKeys), whose verifications rewrite them`,
      },
    ];
  const algorithm = algorithmOfVariant(isHashVariant(variant) ? variant : 'sha256_base64');
  if (typeof value === 'string' && normalizedHash(algorithm, value) === undefined)
    return [{ path: `${base}/hash/value`, message: `must be ${HASH_FORMATS[algorithm]}` }];
  return [];
}

/**
 * Every rule of one import item that a schema cannot state, as problems with paths relative to `base`
 * (e.g. `/3`). Pure; safe on an item that failed schema validation (members of the wrong type are skipped).
 * Plaintexts never appear in a message. `migrated`: whether the item is imported into a migration (false:
 * a seam hash is refused, nothing could rewrite it; undefined: not known yet).
 */
export function importItemProblems(item: unknown, base = '', migrated?: boolean): FieldProblem[] {
  if (!isObject(item)) return [];
  const problems: FieldProblem[] = keyAttributeProblems({ meta: item.meta, remaining: item.remaining, refill: item.refill }).map((p) => ({
    path: base + p.path,
    message: p.message,
  }));
  const rl = item.ratelimit;
  if (isObject(rl) && rl.duration === undefined && rl.refillInterval === undefined) {
    problems.push({ path: `${base}/ratelimit/refillInterval`, message: 'refillInterval (the window in milliseconds) is required' });
  }
  const hasHash = item.hash !== undefined;
  const hasPlaintext = item.plaintext !== undefined;
  if (hasHash === hasPlaintext) {
    problems.push({ path: base || '/', message: hasHash ? 'give either hash or plaintext, not both' : 'give either hash or plaintext' });
  }
  if (isObject(item.hash)) problems.push(...hashProblems(item.hash, base, migrated));
  for (const p of ratelimitNameProblems(item.ratelimits, isObject(rl))) problems.push({ path: base + p.path, message: p.message });
  const prefix = typeof item.prefix === 'string' && item.prefix !== '' ? item.prefix : undefined;
  if (typeof item.plaintext === 'string' && !hasHash) {
    if (prefix !== undefined && !item.plaintext.startsWith(`${prefix}_`)) {
      problems.push({ path: `${base}/prefix`, message: `the plaintext does not start with "${prefix}_"` });
    }
    if (typeof item.start === 'string' && (!item.plaintext.startsWith(item.start) || item.start.length >= item.plaintext.length)) {
      problems.push({ path: `${base}/start`, message: 'must be the beginning of the plaintext (and shorter than it)' });
    }
  }
  return problems;
}

/** `importItemProblems` of every item, with paths `/<index>/…`. */
export function importProblems(items: readonly unknown[], migrated?: boolean): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (let i = 0; i < items.length; i++) {
    const p = importItemProblems(items[i], `/${i}`, migrated);
    if (p.length) problems.push(...p);
  }
  return problems;
}

/**
 * The stored `start` of an imported key: the caller's `start`; else, for a plaintext, prefix + `_` + 4
 * characters after it (or its first 4 characters without a prefix); for a hash there is nothing to take it
 * from, so prefix + `_` when a prefix is given, else "".
 */
export function importedStart(item: Pick<ImportKeyItem, 'start' | 'prefix' | 'plaintext'>): string {
  if (item.start !== undefined) return item.start;
  const prefix = item.prefix || undefined;
  if (item.plaintext === undefined) return prefix ? `${prefix}_` : '';
  return prefix && item.plaintext.startsWith(`${prefix}_`) ? item.plaintext.slice(0, prefix.length + 5) : item.plaintext.slice(0, 4);
}

/** How an item's key is stored: its hash, whether that is its migration's (rewritten on verification), and every hash naming the same key. */
export interface ImportedHash {
  hash: string;
  /** The hash is the migration's algorithm's, not Keyhold's: the key awaits its rewrite (lazy-rehash.ts). */
  pending: boolean;
  /** Stored hashes that would name the same key (any of them stored already: the key exists). */
  sameKey: string[];
}

/**
 * The stored hash of a valid item. A plaintext or `sha256_base64` hash is Keyhold's form. Another algorithm's
 * hash is kept (normalized) for a migration to rewrite on verification; imported outside a migration
 * (`migrated` false: createKeys) a whole-key digest is converted to Keyhold's form at once instead (nothing
 * could rewrite it later; importItemProblems refuses seam's there).
 */
export function importedHash(item: Pick<ImportKeyItem, 'plaintext' | 'hash'>, migrated: boolean): ImportedHash {
  if (item.plaintext !== undefined || !item.hash) {
    const hash = hashKey(item.plaintext!);
    return { hash, pending: false, sameKey: sameKeyHashes('sha256', hash) };
  }
  const algorithm = algorithmOfVariant(item.hash.variant);
  const stored = normalizedHash(algorithm, item.hash.value)!;
  const sameKey = sameKeyHashes(algorithm, stored);
  if (algorithm === 'sha256') return { hash: stored, pending: false, sameKey };
  if (!migrated) return { hash: wholeKeyDigest(algorithm, stored)!.toString('base64'), pending: false, sameKey };
  return { hash: stored, pending: true, sameKey };
}
