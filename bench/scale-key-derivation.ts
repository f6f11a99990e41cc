// The keys of `npm run bench:scale` (bench/scale.ts), derived rather than stored: key i of a set is a function of
// the set's seed and i, so that 10,000,000 keys need no list in memory or on disk, and the main process and the
// load generator (bench/scale-mixed-load.ts, its own process) agree on every key without exchanging them.

import { createHash, randomBytes } from 'node:crypto';

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
/** As long as the server's own keys' random part (16 bytes of base58). */
const KEY_CHARS = 22;

/** `count` keys `<prefix>_<22 base58>`, key i from SHA-256 of `<seed>:<i>`. */
export interface KeySet {
  seed: string;
  /** At most 8 characters (migrations.createKeys' bound). */
  prefix: string;
  count: number;
}

export const newKeySet = (prefix: string, count: number): KeySet => ({ seed: randomBytes(8).toString('hex'), prefix, count });

/** Key `i` of the set (a byte modulo 58 is slightly biased: irrelevant here). */
export function keyAt(set: KeySet, i: number): string {
  const digest = createHash('sha256').update(`${set.seed}:${i}`).digest();
  let key = `${set.prefix}_`;
  for (let j = 0; j < KEY_CHARS; j++) key += BASE58[digest[j] % 58];
  return key;
}

/** `n` distinct indexes of 0..count-1 in random order, none of them in `exclude`. */
export function distinctIndexes(n: number, count: number, exclude: ReadonlySet<number> = new Set()): number[] {
  const free = count - exclude.size;
  if (n > free) throw new Error(`cannot pick ${n} distinct indexes of ${count} with ${exclude.size} excluded`);
  if (n > free / 2) {
    // Most of them: a shuffle of all the free ones, cut short.
    const all: number[] = [];
    for (let i = 0; i < count; i++) if (!exclude.has(i)) all.push(i);
    shuffle(all);
    return all.slice(0, n);
  }
  const picked = new Set<number>();
  while (picked.size < n) {
    const i = Math.floor(Math.random() * count);
    if (!exclude.has(i)) picked.add(i);
  }
  return [...picked];
}

function shuffle(xs: number[]): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
}
