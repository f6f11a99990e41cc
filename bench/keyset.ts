// The many keys of `npm run bench` (bench/many-keys.ts): plaintexts generated here, written to files for the
// load generator and the limit server, and imported into the server as hashes through
// POST /v1/migrations.createKeys (the fastest way in: no vault, no per-key request).

import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call, type Server } from './server.ts';

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
/** As long as the server's own keys' random part (16 bytes of base58). */
const KEY_CHARS = 22;
/** A migrations.createKeys request holds at most 1,000 items. */
const IMPORT_BATCH = 1_000;
/** Import requests in flight: more only queues behind the store's one writer. */
const IMPORT_CONCURRENCY = 2;

/** `n` distinct-enough random keys `<prefix>_<22 base58>` (a byte modulo 58 is slightly biased: irrelevant here). */
export function randomKeys(n: number, prefix: string): string[] {
  const bytes = randomBytes(n * KEY_CHARS);
  const keys = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    let s = `${prefix}_`;
    for (let j = 0; j < KEY_CHARS; j++) s += BASE58[bytes[i * KEY_CHARS + j] % 58];
    keys[i] = s;
  }
  return keys;
}

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('base64');

/** Writes the keys one a line to `<dir>/<name>` and returns the path. */
export async function writeKeys(dir: string, name: string, keys: string[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `${keys.join('\n')}\n`);
  return path;
}

/** One `migrations.createKeys` request with the bootstrap root key; the created keys' ids (throws unless 200). */
export async function createKeys(server: Server, items: object[]): Promise<string[]> {
  const res = await call(server, {
    method: 'POST',
    path: '/v1/migrations.createKeys',
    body: JSON.stringify(items),
    rootKey: server.rootKey,
  });
  if (res.status !== 200) throw new Error(`migrations.createKeys: ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
  return res.json.keyIds as string[];
}

/** Imports the keys into the API as hashes, IMPORT_BATCH a request, IMPORT_CONCURRENCY requests in flight; returns keys/s. */
export async function importKeys(server: Server, apiId: string, keys: string[], prefix: string): Promise<number> {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const batch = keys.slice(next, next + IMPORT_BATCH);
      next += batch.length;
      await createKeys(
        server,
        batch.map((key) => ({ apiId, prefix, hash: { value: hashKey(key), variant: 'sha256_base64' } })),
      );
    }
  };
  await Promise.all(Array.from({ length: IMPORT_CONCURRENCY }, worker));
  return keys.length / ((performance.now() - started) / 1000);
}
