import { hash, randomBytes, randomFillSync } from 'node:crypto';
import { base58 } from '../domain/base58.ts';

/** `sha256_base64`: standard base64 of SHA-256 over the whole key string. */
export const hashKey = (key: string): string => hash('sha256', key, 'base64');

// Key material is drawn from the OS in blocks (a system call per 4 KiB, not one per key: keys.createKey makes
// one per request); bytes handed out are wiped from the block, so it holds no part of an issued key.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function randomKeyBytes(length: number): Buffer {
  if (length > pool.length) return randomBytes(length);
  if (poolOffset + length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = Buffer.from(pool.subarray(poolOffset, poolOffset + length));
  pool.fill(0, poolOffset, poolOffset + length);
  poolOffset += length;
  return bytes;
}

/** New key material: `<prefix>_` + base58 of `byteLength` random bytes, and its `start`. */
export function generateKey(prefix: string | undefined, byteLength: number): { key: string; start: string } {
  // Fixed width (leading '1's pad short encodings), so every key of one byteLength has the same length.
  const random = base58(randomKeyBytes(byteLength), Math.ceil((byteLength * 8) / Math.log2(58)));
  const key = prefix ? `${prefix}_${random}` : random;
  return { key, start: keyStart(key, prefix) };
}

/** The visible start of a key: prefix + `_` + 4 characters, or the first 4 characters without a prefix. */
export const keyStart = (key: string, prefix?: string): string =>
  prefix && key.startsWith(`${prefix}_`) ? key.slice(0, prefix.length + 5) : key.slice(0, 4);

export const ROOT_KEY_PREFIX = 'kh_root_';
const ROOT_KEY_RE = /^kh_root_[1-9A-HJ-NP-Za-km-z]{22,64}$/;

/** A new root key (`kh_root_` + base58 of 24 random bytes, 192 bits). */
export const generateRootKey = (): string => ROOT_KEY_PREFIX + base58(randomBytes(24), 33);
export const isWellFormedRootKey = (key: string): boolean => ROOT_KEY_RE.test(key);
