import { hash } from 'node:crypto';
import { hashKey } from '../../crypto/keys.ts';

/*
 * How the keys of a migration were hashed where they come from, and what Keyhold stores for each:
 * - `sha256`: standard padded base64 of SHA-256 over the whole key — Keyhold's own form, stored as given;
 * - `sha256_hex`, `sha256_base64url`: the same digest in lowercase hex / unpadded base64url;
 * - `github.com/seamapi/prefixed-api-key`: keys `<prefix>_<shortToken>_<longToken>`, of which only the long
 *   token is hashed (lowercase hex SHA-256).
 * A key imported into a migration with another algorithm's hash keeps that hash (normalized) until its first
 * verification naming the migration rewrites it to Keyhold's (lazy-rehash.ts). Stored foreign hashes can
 * never equal a Keyhold hash: hex has 64 characters, unpadded base64url 43, Keyhold's 44 ending in `=`.
 */

export const SEAM = 'github.com/seamapi/prefixed-api-key';
export const MIGRATION_ALGORITHMS = ['sha256', 'sha256_hex', 'sha256_base64url', SEAM] as const;
export type MigrationAlgorithm = (typeof MIGRATION_ALGORITHMS)[number];

/** v1's `hash.variant` names of the algorithms: `sha256_base64` is v1's name of `sha256`. */
export const HASH_VARIANTS = ['sha256_base64', 'sha256_hex', 'sha256_base64url', SEAM] as const;
export type HashVariant = (typeof HASH_VARIANTS)[number];

export const isMigrationAlgorithm = (value: unknown): value is MigrationAlgorithm =>
  (MIGRATION_ALGORITHMS as readonly unknown[]).includes(value);
export const isHashVariant = (value: unknown): value is HashVariant => (HASH_VARIANTS as readonly unknown[]).includes(value);
export const algorithmOfVariant = (variant: HashVariant): MigrationAlgorithm => (variant === 'sha256_base64' ? 'sha256' : variant);
export const variantOfAlgorithm = (algorithm: MigrationAlgorithm): HashVariant => (algorithm === 'sha256' ? 'sha256_base64' : algorithm);

/** Canonical standard base64 (with padding) of exactly 32 bytes: 43 characters, the last using 4 bits, then `=`. */
const SHA256_BASE64 = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;
/** The same in base64url, padding optional (stored without). */
const SHA256_BASE64URL = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]=?$/;
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/** What a hash of each algorithm looks like, for a 400's message. */
export const HASH_FORMATS: Record<MigrationAlgorithm, string> = {
  sha256: 'the standard base64 (with = padding) of a 32-byte SHA-256 digest',
  sha256_hex: 'the 64 hex digits of a SHA-256 digest',
  sha256_base64url: 'the base64url (43 characters, padding optional) of a 32-byte SHA-256 digest',
  [SEAM]: "the 64 hex digits of the SHA-256 digest of the key's long token",
};

/** The stored form of a hash given in `algorithm` (hex lowercased, base64url unpadded), or undefined when it is not one. */
export function normalizedHash(algorithm: MigrationAlgorithm, value: string): string | undefined {
  switch (algorithm) {
    case 'sha256':
      return SHA256_BASE64.test(value) ? value : undefined;
    case 'sha256_base64url':
      return SHA256_BASE64URL.test(value) ? value.replace(/=$/, '') : undefined;
    case 'sha256_hex':
    case SEAM:
      return SHA256_HEX.test(value) ? value.toLowerCase() : undefined;
  }
}

/** A seam key's parts: the last two `_`-separated parts are the tokens, the rest the prefix; undefined with fewer than 3 parts. */
export function seamParts(key: string): { prefix: string; short: string; long: string } | undefined {
  const parts = key.split('_');
  if (parts.length < 3) return undefined;
  return { prefix: parts.slice(0, -2).join('_'), short: parts[parts.length - 2], long: parts[parts.length - 1] };
}

/**
 * The hash of `key` as a migration of `algorithm` stored it (the stored form), or undefined when the key
 * cannot be one of its keys (a seam key without three parts).
 */
export function foreignHash(algorithm: MigrationAlgorithm, key: string): string | undefined {
  if (algorithm === SEAM) {
    const parts = seamParts(key);
    return parts && hash('sha256', parts.long, 'hex');
  }
  if (algorithm === 'sha256') return hashKey(key);
  return hash('sha256', key, algorithm === 'sha256_hex' ? 'hex' : 'base64url');
}

/**
 * The SHA-256 digest of the whole key behind a stored hash of `algorithm` (every algorithm but seam's hashes
 * the whole key), or undefined for seam's, which holds only the long token's.
 */
export function wholeKeyDigest(algorithm: MigrationAlgorithm, stored: string): Buffer | undefined {
  if (algorithm === SEAM) return undefined;
  return Buffer.from(stored, algorithm === 'sha256' ? 'base64' : algorithm === 'sha256_hex' ? 'hex' : 'base64url');
}

/**
 * Every stored hash that would name the same key as `stored` (of `algorithm`): for a digest of the whole key,
 * that digest in each algorithm's form (a key may be stored once in the whole service, whatever the form it
 * was imported in); for seam's, itself.
 */
export function sameKeyHashes(algorithm: MigrationAlgorithm, stored: string): string[] {
  const digest = wholeKeyDigest(algorithm, stored);
  return digest ? [digest.toString('base64'), digest.toString('hex'), digest.toString('base64url')] : [stored];
}
