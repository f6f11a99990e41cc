/** The Bitcoin base58 alphabet. It is in ascending ASCII order, so equal-length encodings sort like the numbers they encode. */
export const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Base58 of a byte string, left-padded with '1' to `width` characters when `width` is given. */
export function base58(bytes: Uint8Array, width = 0): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  while (n > 0n) {
    out = BASE58_ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  return out.padStart(width, '1');
}

const BASE58_RE = /^[1-9A-HJ-NP-Za-km-z]+$/;
export const isBase58 = (s: string): boolean => BASE58_RE.test(s);
