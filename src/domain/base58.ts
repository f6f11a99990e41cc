/** The Bitcoin base58 alphabet. It is in ascending ASCII order, so equal-length encodings sort like the numbers they encode. */
export const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/**
 * Base58 of a byte string read as one big-endian number, left-padded with '1' to `width` characters when
 * `width` is given. Long division on small integers (no BigInt): this runs for every id and key made.
 */
export function base58(bytes: Uint8Array, width = 0): string {
  const digits: number[] = []; // least significant first
  for (const byte of bytes) {
    let carry = byte;
    for (let i = 0; i < digits.length; i++) {
      carry += digits[i] << 8;
      digits[i] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = (carry / 58) | 0;
    }
  }
  let out = '';
  for (let i = digits.length - 1; i >= 0; i--) out += BASE58_ALPHABET[digits[i]];
  return out.padStart(width, '1');
}

const BASE58_RE = /^[1-9A-HJ-NP-Za-km-z]+$/;
export const isBase58 = (s: string): boolean => BASE58_RE.test(s);
