import { hash, randomBytes, randomFillSync } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { base58 } from '../domain/base58.ts';
import { ROOT_KEY_PREFIX } from '../domain/root-key-format.ts';

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

/** Length of the checksum every generated key ends with. */
export const CHECKSUM_LENGTH = 6;

/**
 * The checksum of a key body: CRC-32 (IEEE, as zlib's) of its UTF-8 bytes, as base58 left-padded with '1' to 6
 * characters (2^32 needs at most 6). It lets a scanner tell a Keyhold key from random text offline; it is no
 * secret and verification never looks at it.
 */
export const keyChecksum = (body: string): string => base58(uint32Bytes(crc32(body)), CHECKSUM_LENGTH);

function uint32Bytes(value: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, value >>> 0);
  return bytes;
}

/** Whether `key` ends in the checksum of everything before it (keys made before checksums, or imported, do not). */
export const hasValidChecksum = (key: string): boolean =>
  key.length > CHECKSUM_LENGTH && keyChecksum(key.slice(0, -CHECKSUM_LENGTH)) === key.slice(-CHECKSUM_LENGTH);

/** `body` followed by its checksum: the one place a generated key gets its last 6 characters. */
const withChecksum = (body: string): string => body + keyChecksum(body);

/** New key material: `<prefix>_` + base58 of `byteLength` random bytes + checksum, and its `start`. */
export function generateKey(prefix: string | undefined, byteLength: number): { key: string; start: string } {
  // Fixed width (leading '1's pad short encodings), so every key of one byteLength has the same length.
  const random = base58(randomKeyBytes(byteLength), Math.ceil((byteLength * 8) / Math.log2(58)));
  const key = withChecksum(prefix ? `${prefix}_${random}` : random);
  return { key, start: keyStart(key, prefix) };
}

/** The visible start of a key: prefix + `_` + 4 characters, or the first 4 characters without a prefix. */
export const keyStart = (key: string, prefix?: string): string =>
  prefix && key.startsWith(`${prefix}_`) ? key.slice(0, prefix.length + 5) : key.slice(0, 4);

/** A new root key (`kh_root_` + base58 of 24 random bytes, 192 bits, + checksum). */
export const generateRootKey = (): string => withChecksum(ROOT_KEY_PREFIX + base58(randomKeyBytes(24), 33));
