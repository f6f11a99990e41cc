// The "limit" of `npm run bench` (bench/run.ts): the least a server can do to answer a verification on this
// machine with this Node. A raw node:http server that reads the POST body, parses it as JSON, hashes its `key`
// member with SHA-256 (base64, as src/crypto/keys.ts hashKey), looks the hash up in a Map and answers a constant
// small JSON. Every case is reported as a ratio to it: how close the real server comes to the physical limit.
//
//   PORT=… HOST=… BENCH_LIMIT_KEYS_FILE=<file of plaintext keys, one a line> node bench/limit-server.ts
//
// It prints "listening" once it listens. Any other method answers 200 with the same constant (the cold-start
// floor does not use it; see bench/fastify-floor.ts for that).

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const VALID = '{"valid":true,"code":"VALID"}';
const NOT_FOUND = '{"valid":false,"code":"NOT_FOUND"}';
const hashKey = (key: string) => createHash('sha256').update(key).digest('base64');

const known = new Map<string, true>();
const file = process.env.BENCH_LIMIT_KEYS_FILE;
if (file) {
  for (const key of readFileSync(file, 'utf8').split('\n')) if (key) known.set(hashKey(key), true);
}

function answer(body: string): string {
  let key: unknown;
  try {
    key = (JSON.parse(body) as { key?: unknown }).key;
  } catch {
    return NOT_FOUND;
  }
  return typeof key === 'string' && known.has(hashKey(key)) ? VALID : NOT_FOUND;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const json = req.method === 'POST' ? answer(Buffer.concat(chunks).toString('utf8')) : VALID;
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
    res.end(json);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
