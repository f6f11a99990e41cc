import { randomBytes } from 'node:crypto';
import { base58 } from './base58.ts';

export type IdPrefix = 'ws' | 'key' | 'api' | 'ks' | 'role' | 'perm' | 'id' | 'mig' | 'req' | 'rk' | 'log' | 'rl' | 'dk' | 'job' | 'chg';

let lastTime = 0;
let lastRandom = 0n;

/**
 * A new identifier `<prefix>_<base58>`: 6 bytes of millisecond time followed by 10 random bytes,
 * always 22 base58 characters, so ids sort by creation time. Within one process they are strictly
 * increasing: in the same millisecond the random part is incremented instead of redrawn (as ULID does).
 */
export function newId(prefix: IdPrefix): string {
  const now = Date.now();
  if (now > lastTime) {
    lastTime = now;
    // 79 random bits: the top bit stays free, so same-millisecond increments can never overflow 10 bytes.
    lastRandom = BigInt(`0x${randomBytes(10).toString('hex')}`) >> 1n;
  } else {
    lastRandom += 1n + BigInt(randomBytes(1)[0]);
  }
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(lastTime, 0, 6);
  bytes.write(lastRandom.toString(16).padStart(20, '0'), 6, 'hex');
  return `${prefix}_${base58(bytes, 22)}`;
}
