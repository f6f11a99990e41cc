import { randomFillSync } from 'node:crypto';
import { base58 } from './base58.ts';

export type IdPrefix =
  | 'ws'
  | 'key'
  | 'api'
  | 'ks'
  | 'role'
  | 'perm'
  | 'id'
  | 'mig'
  | 'req'
  | 'rk'
  | 'log'
  | 'rl'
  | 'dk'
  | 'job'
  | 'chg'
  | 'rlns'
  | 'rlor'
  | 'dsl'
  | 'dss'
  | 'whep'
  | 'evt'
  | 'whdl'
  | 'wcc'
  | 'dsu'
  | 'uexp'
  | 'urep';

// Random bytes are drawn from the OS in blocks, not one call per id (ids are made for every key imported).
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function refillIfShort(length: number): void {
  if (poolOffset + length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
}
function randomInto(target: Buffer, start: number, length: number): void {
  refillIfShort(length);
  pool.copy(target, start, poolOffset, poolOffset + length);
  poolOffset += length;
}
function randomByte(): number {
  refillIfShort(1);
  return pool[poolOffset++];
}

let lastTime = 0;
const bytes = Buffer.alloc(16);

/**
 * A new identifier `<prefix>_<base58>`: 6 bytes of millisecond time followed by 10 random bytes,
 * always 22 base58 characters, so ids sort by creation time. Within one process they are strictly
 * increasing: in the same millisecond the random part is incremented instead of redrawn (as ULID does).
 */
export function newId(prefix: IdPrefix): string {
  const now = Date.now();
  if (now > lastTime) {
    lastTime = now;
    bytes.writeUIntBE(now, 0, 6);
    randomInto(bytes, 6, 10);
    bytes[6] &= 0x7f; // the top bit stays free, so same-millisecond increments never overflow the 10 bytes
  } else {
    // Add 1 + a random byte to the 80-bit random part (big-endian, with carry).
    let carry = 1 + randomByte();
    for (let i = 15; i >= 6 && carry > 0; i--) {
      const sum = bytes[i] + carry;
      bytes[i] = sum & 0xff;
      carry = sum >> 8;
    }
  }
  return `${prefix}_${base58(bytes, 22)}`;
}
