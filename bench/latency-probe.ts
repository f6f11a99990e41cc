// A load generator that remembers when each request ended, so that latency can be compared between windows
// of time chosen afterwards (bench/backup-under-load.ts: before and during a backup). A child process
// (forked, with an IPC channel): `connections` keep-alive connections, one request in flight on each, the same
// request again and again (like bench/list-load.ts, raw sockets: the generator must cost little CPU on this
// 2-core machine). It runs until the parent sends `{ windows: [[fromMs, toMs], …] }` (epoch ms), then answers
// `{ results: [{ requests, p50Ms, p99Ms, maxMs, non2xx, mismatches }, …] }`, one per window (requests that ended in
// it), and exits.

import { connect, type Socket } from 'node:net';

export interface ProbeSpec {
  url: string;
  body: string;
  connections: number;
  /** A string every response body must contain (e.g. `"code":"VALID"`). */
  expect: string;
}
export interface WindowResult {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  mismatches: number;
}

const spec = JSON.parse(process.argv[2]) as ProbeSpec;
const url = new URL(spec.url);
const request = `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(spec.body)}\r\n\r\n${spec.body}`;

// Per finished request: when it ended (epoch ms), how long it took, and whether it was right.
let ends = new Float64Array(1 << 20);
let latencies = new Float64Array(1 << 20);
let bad = new Uint8Array(1 << 20); // 0 ok, 1 non-2xx, 2 body without `expect`
let count = 0;
let stopping = false;

function record(latency: number, outcome: number): void {
  if (count === ends.length) {
    const grow = <T extends Float64Array | Uint8Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(a.length * 2);
      b.set(a);
      return b;
    };
    ends = grow(ends);
    latencies = grow(latencies);
    bad = grow(bad);
  }
  ends[count] = performance.timeOrigin + performance.now();
  latencies[count] = latency;
  bad[count++] = outcome;
}

function connection(): void {
  let pending: Buffer = Buffer.alloc(0);
  let sentAt = 0;
  const socket: Socket = connect(Number(url.port), url.hostname, () => send());
  const send = () => {
    if (stopping) return void socket.end();
    sentAt = performance.now();
    socket.write(request, 'latin1');
  };
  socket.setNoDelay(true);
  socket.on('data', (chunk: Buffer) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    const end = pending.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = pending.toString('latin1', 0, end);
    const length = end + 4 + Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (pending.length < length) return;
    const status = Number(head.slice(9, 12));
    const body = pending.toString('utf8', end + 4, length);
    pending = pending.subarray(length);
    record(performance.now() - sentAt, status < 200 || status > 299 ? 1 : body.includes(spec.expect) ? 0 : 2);
    send();
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    if (!stopping) setTimeout(connection, 100);
  });
}

for (let i = 0; i < spec.connections; i++) connection();

process.on('message', (msg: { windows: Array<[number, number]> }) => {
  stopping = true;
  const results: WindowResult[] = msg.windows.map(([from, to]) => {
    const picked: number[] = [];
    let non2xx = 0;
    let mismatches = 0;
    for (let i = 0; i < count; i++) {
      if (ends[i] < from || ends[i] >= to) continue;
      picked.push(latencies[i]);
      if (bad[i] === 1) non2xx++;
      if (bad[i] === 2) mismatches++;
    }
    picked.sort((a, b) => a - b);
    const at = (q: number) => Number((picked[Math.min(picked.length - 1, Math.floor(q * picked.length))] ?? 0).toFixed(2));
    return { requests: picked.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1), non2xx, mismatches };
  });
  process.send!({ results }, () => process.exit(0));
});
process.on('disconnect', () => process.exit(0));
