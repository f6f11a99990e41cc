// The load generator of the many-key cases of `npm run bench` (bench/many-keys.ts), run in its own process:
// exactly `amount` requests over `connections` keep-alive connections, one in flight on each, request i
// verifying key i of a list, so that a pass over a list of distinct keys verifies each of them exactly once
// (the autocannon CLI repeats one request; autocannon's per-request setup hook made the generator, not the
// server, the bottleneck on this 2-core machine). Every request is built before the clock starts, and a
// response is read just far enough to count it: its status line, Content-Length and body.
//
//   node bench/list-load.ts '<spec as JSON, see Spec>'
//
// It prints one JSON line (ListLoadResult). Every response body must contain `expect` (when given); the ones
// that do not are counted as mismatches. A connection closed with a request in flight, or silent for 10 s,
// counts as an error (and is opened again).

import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { parseResponse } from './raw-http.ts';

export interface Spec {
  /** The URL requested (base and path). */
  url: string;
  method: 'GET' | 'POST';
  connections: number;
  /** Requests in all; with a keys file, at most as many as it has keys. */
  amount: number;
  /** Plaintext keys, one a line: request i sends `{"apiId":…,"key":<key i>}`. Absent: no body. */
  keysFile?: string;
  apiId?: string;
  /** A string every response body must contain (e.g. `"code":"VALID"`). */
  expect?: string;
}

export interface ListLoadResult {
  requests: number;
  seconds: number;
  requestsPerSec: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
}

/** Every request of the run, as the bytes to write. */
function requests(spec: Spec, url: URL): string[] {
  const head = `${spec.method} ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  if (!spec.keysFile) return new Array<string>(spec.amount).fill(`${head}\r\n`);
  const keys = readFileSync(spec.keysFile, 'utf8').split('\n').filter(Boolean).slice(0, spec.amount);
  const apiId = JSON.stringify(spec.apiId);
  return keys.map((key) => {
    const body = `{"apiId":${apiId},"key":"${key}"}`;
    return `${head}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  });
}

async function run(spec: Spec): Promise<ListLoadResult> {
  const url = new URL(spec.url);
  const all = requests(spec, url);
  const latencies = new Float64Array(all.length);
  const result = { non2xx: 0, errors: 0, mismatches: 0 };
  let next = 0;
  let done = 0;
  const started = performance.now();
  const connection = (): Promise<void> =>
    new Promise((resolve) => {
      let socket: Socket;
      let pending: Buffer = Buffer.alloc(0);
      let current = -1;
      let sentAt = 0;
      const send = () => {
        if (next >= all.length) return void socket.end();
        current = next++;
        sentAt = performance.now();
        socket.write(all[current], 'latin1');
      };
      const open = () => {
        socket = connect(Number(url.port), url.hostname, send);
        socket.setNoDelay(true);
        socket.on('data', (chunk: Buffer) => {
          pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
          const response = parseResponse(pending);
          if (!response) return;
          pending = pending.subarray(response.length);
          latencies[done++] = performance.now() - sentAt;
          if (response.status < 200 || response.status > 299) result.non2xx++;
          else if (spec.expect && !response.body.includes(spec.expect)) result.mismatches++;
          current = -1;
          send();
        });
        socket.setTimeout(10_000, () => socket.destroy());
        socket.on('error', () => {});
        socket.on('close', () => {
          if (current >= 0) result.errors++; // closed with a request in flight (or timed out): that key was not verified
          current = -1;
          pending = Buffer.alloc(0);
          if (next < all.length) open();
          else resolve();
        });
      };
      open();
    });
  await Promise.all(Array.from({ length: Math.min(spec.connections, all.length) }, connection));
  const seconds = (performance.now() - started) / 1000;
  const sorted = latencies.subarray(0, done).sort();
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
  return { requests: done, seconds, requestsPerSec: done / seconds, ...result, timeouts: 0, latencyP50Ms: at(0.5), latencyP99Ms: at(0.99) };
}

run(JSON.parse(process.argv[2]) as Spec).then(
  (result) => console.log(JSON.stringify(result)),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
