import { isObject } from '../../domain/json.ts';
import type { FieldProblem } from '../../domain/errors.ts';
import { keyAttributeProblems, type KeyAttributes } from '../keys/key-attributes.ts';

/**
 * One key to import (migrations.createKeys item; migrations.enqueueKeys items once their apiId is filled in).
 * Exactly one of `hash` and `plaintext`. The rate limit takes either form: `{limit, duration}` or the
 * createKeys `{limit, refillInterval}` (refillRate is accepted and ignored, as in keys.createKey).
 */
export interface ImportKeyItem extends KeyAttributes {
  plaintext?: string;
  hash?: { value: string; variant: 'sha256_base64' };
  start?: string;
  /**
   * The plaintext, already encrypted by the vault (with `hash`, instead of `plaintext`): lets a caller that
   * must not hold plaintexts at rest (the migration queue) encrypt at enqueue time and import later.
   */
  encrypted?: { dataKeyId: string; ciphertext: string };
}

/** A migrations.createKeys request holds 1..1000 items. */
export const MAX_IMPORT_ITEMS = 1000;

/** Canonical standard base64 (with padding) of exactly 32 bytes: 43 characters, the last using 4 bits, then `=`. */
const SHA256_BASE64 = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;
export const isSha256Base64 = (value: string): boolean => SHA256_BASE64.test(value);

/**
 * Every rule of one import item that a schema cannot state, as problems with paths relative to `base`
 * (e.g. `/3`). Pure; safe on an item that failed schema validation (members of the wrong type are skipped).
 * Plaintexts never appear in a message.
 */
export function importItemProblems(item: unknown, base = ''): FieldProblem[] {
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
  if (isObject(item.hash)) {
    const { value, variant } = item.hash;
    if (typeof variant === 'string' && variant !== 'sha256_base64')
      problems.push({ path: `${base}/hash/variant`, message: 'must be sha256_base64' });
    if (typeof value === 'string' && !isSha256Base64(value)) {
      problems.push({ path: `${base}/hash/value`, message: 'must be the standard base64 (with = padding) of a 32-byte SHA-256 digest' });
    }
  }
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
export function importProblems(items: readonly unknown[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (let i = 0; i < items.length; i++) {
    const p = importItemProblems(items[i], `/${i}`);
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
