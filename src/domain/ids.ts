import { randomBytes } from 'node:crypto';
import { base58 } from './base58.ts';

export type IdPrefix = 'ws' | 'key' | 'api' | 'ks' | 'role' | 'perm' | 'id' | 'mig' | 'req' | 'rk' | 'log' | 'rl' | 'dk' | 'job' | 'chg';

/**
 * A new identifier `<prefix>_<base58>`: 6 bytes of millisecond time followed by 10 random bytes,
 * always 22 base58 characters, so ids of one prefix sort roughly by creation time.
 */
export function newId(prefix: IdPrefix): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(Date.now(), 0, 6);
  return `${prefix}_${base58(bytes, 22)}`;
}
