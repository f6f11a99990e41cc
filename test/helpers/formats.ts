import { crc32 as zlibCrc32 } from 'node:zlib';
/** One base58 character (Bitcoin alphabet: no 0, O, I, l), as a regular-expression class. */
export const B58 = '[1-9A-HJ-NP-Za-km-z]';

/**
 * The checksum a generated key must end in, recomputed here independently of src/crypto: zlib's CRC-32 of the
 * UTF-8 bytes before it, in base58 (BigInt division), left-padded with '1' to 6 characters.
 */
export function expectedChecksum(body: string): string {
  const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
  let n = BigInt(zlibCrc32(Buffer.from(body, 'utf8')));
  let out = '';
  while (n > 0n) {
    out = alphabet[Number(n % 58n)] + out;
    n /= 58n;
  }
  return out.padStart(6, '1');
}

/** A request id as answers carry it in X-Request-Id and meta.requestId. */
export const REQUEST_ID = new RegExp(`^req_${B58}+$`);
