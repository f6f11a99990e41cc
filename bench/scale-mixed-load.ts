// The load generator of the three-node part of `npm run bench:scale` (bench/scale-cluster.ts), run in its own
// process: for `seconds`, `connections` keep-alive connections spread over the nodes (connection c on node
// c mod n), one request in flight on each, built as it is sent, in the way of bench/list-load.ts:
//   - a `managementShare` of the requests are management calls with the root key, in turn keys.getKey,
//     keys.updateKey (a new meta), apis.listKeys (first page) and keys.createKey, on the keys of `keyIds`;
//   - the rest verify a key drawn at random: of the credit keys (each imported with credits) for a `creditShare` of
//     them, else of the big API's keys.
// Keys are derived (bench/scale-key-derivation.ts), so nothing is exchanged but the sets' seeds.
//
//   node bench/scale-mixed-load.ts <file holding the spec as JSON, see MixedSpec>
//
// It prints one JSON line (MixedResult): req/s, latencies by kind, the verification codes, and per credit key the
// VALID answers it got, to be compared with the credits the store says were spent. A connection closed with a request
// in flight, or silent for 10 s, counts as an error (and is opened again); such a lost answer to a credit key is
// counted apart (`creditLost`), since the credit may have been spent without its VALID being seen.

import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { parseResponse } from './raw-http.ts';
import { keyAt, type KeySet } from './scale-key-derivation.ts';

export interface MixedSpec {
  urls: string[];
  connections: number;
  seconds: number;
  rootKey: string;
  apiId: string;
  keys: KeySet;
  credit: KeySet;
  creditShare: number;
  managementShare: number;
  keyIds: string[];
}

export interface KindStats {
  requests: number;
  non2xx: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
}

export interface MixedResult {
  seconds: number;
  requests: number;
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  kinds: Record<string, KindStats>;
  /** Codes of the verifications of random big-API keys. */
  codes: Record<string, number>;
  /** Codes of the verifications of credit keys. */
  creditCodes: Record<string, number>;
  /** VALID answers per credit key (by index). */
  creditValid: number[];
  creditLost: number;
  errors: number;
  perNode: number[];
}

const MANAGEMENT = ['getKey', 'updateKey', 'listKeys', 'createKey'] as const;
type Kind = 'verify' | 'verify-credit' | (typeof MANAGEMENT)[number];

interface InFlight {
  kind: Kind;
  credit: number;
  sentAt: number;
}

function httpRequest(host: string, method: string, path: string, rootKey: string | undefined, body?: object): string {
  const auth = rootKey ? `Authorization: Bearer ${rootKey}\r\n` : '';
  if (!body) return `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`;
  const text = JSON.stringify(body);
  return `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
}

/** The next request: its kind, the credit key's index (verify-credit) and its bytes. */
function nextRequest(spec: MixedSpec, host: string, n: number): { kind: Kind; credit: number; bytes: string } {
  const pick = (count: number) => Math.floor(Math.random() * count);
  if (Math.random() < spec.managementShare) {
    const kind = MANAGEMENT[n % MANAGEMENT.length];
    const keyId = spec.keyIds[pick(spec.keyIds.length)];
    const k = spec.rootKey;
    const a = encodeURIComponent(spec.apiId);
    const bytes = {
      getKey: () => httpRequest(host, 'GET', `/v1/keys.getKey?keyId=${encodeURIComponent(keyId)}`, k),
      updateKey: () => httpRequest(host, 'POST', '/v1/keys.updateKey', k, { keyId, meta: { touched: n } }),
      listKeys: () => httpRequest(host, 'GET', `/v1/apis.listKeys?apiId=${a}&limit=100`, k),
      createKey: () => httpRequest(host, 'POST', '/v1/keys.createKey', k, { apiId: spec.apiId, prefix: 'mixed' }),
    }[kind]();
    return { kind, credit: -1, bytes };
  }
  if (Math.random() < spec.creditShare) {
    const credit = pick(spec.credit.count);
    const bytes = httpRequest(host, 'POST', '/v1/keys.verifyKey', undefined, { apiId: spec.apiId, key: keyAt(spec.credit, credit) });
    return { kind: 'verify-credit', credit, bytes };
  }
  const bytes = httpRequest(host, 'POST', '/v1/keys.verifyKey', undefined, {
    apiId: spec.apiId,
    key: keyAt(spec.keys, pick(spec.keys.count)),
  });
  return { kind: 'verify', credit: -1, bytes };
}

class Tally {
  readonly latencies = new Map<Kind, number[]>();
  readonly non2xx = new Map<Kind, number>();
  readonly codes: Record<string, number> = {};
  readonly creditCodes: Record<string, number> = {};
  readonly creditValid: number[];
  readonly perNode: number[];
  errors = 0;
  creditLost = 0;
  sent = 0;

  constructor(spec: MixedSpec) {
    this.creditValid = new Array<number>(spec.credit.count).fill(0);
    this.perNode = new Array<number>(spec.urls.length).fill(0);
  }

  answered(req: InFlight, node: number, status: number, body: string): void {
    const list = this.latencies.get(req.kind) ?? [];
    list.push(performance.now() - req.sentAt);
    this.latencies.set(req.kind, list);
    this.perNode[node]++;
    if (status < 200 || status > 299) {
      this.non2xx.set(req.kind, (this.non2xx.get(req.kind) ?? 0) + 1);
      return;
    }
    if (req.kind !== 'verify' && req.kind !== 'verify-credit') return;
    const code = /"code":"([A-Z_]+)"/.exec(body)?.[1] ?? '?';
    const codes = req.kind === 'verify' ? this.codes : this.creditCodes;
    codes[code] = (codes[code] ?? 0) + 1;
    if (req.kind === 'verify-credit' && code === 'VALID') this.creditValid[req.credit]++;
  }

  lost(req: InFlight): void {
    this.errors++;
    if (req.kind === 'verify-credit') this.creditLost++;
  }
}

/** One connection to `url`, sending until `deadline`; resolves when its last answer is in. */
function connection(spec: MixedSpec, tally: Tally, node: number, deadline: number): Promise<void> {
  const url = new URL(spec.urls[node]);
  return new Promise((resolve) => {
    let socket: Socket;
    let pending: Buffer = Buffer.alloc(0);
    let current: InFlight | undefined;
    const send = () => {
      if (performance.now() >= deadline) return void socket.end();
      const next = nextRequest(spec, url.host, tally.sent++);
      current = { kind: next.kind, credit: next.credit, sentAt: performance.now() };
      socket.write(next.bytes, 'utf8');
    };
    const open = () => {
      socket = connect(Number(url.port), url.hostname, send);
      socket.setNoDelay(true);
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        const response = parseResponse(pending);
        if (!response || !current) return;
        pending = pending.subarray(response.length);
        tally.answered(current, node, response.status, response.body);
        current = undefined;
        send();
      });
      socket.setTimeout(10_000, () => socket.destroy());
      socket.on('error', () => {});
      socket.on('close', () => {
        if (current) tally.lost(current);
        current = undefined;
        pending = Buffer.alloc(0);
        if (performance.now() < deadline) open();
        else resolve();
      });
    };
    open();
  });
}

const quantile = (sorted: number[], p: number): number => Math.round(sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? 0);

async function run(spec: MixedSpec): Promise<MixedResult> {
  const tally = new Tally(spec);
  const started = performance.now();
  const deadline = started + spec.seconds * 1000;
  await Promise.all(Array.from({ length: spec.connections }, (_, c) => connection(spec, tally, c % spec.urls.length, deadline)));
  const seconds = (performance.now() - started) / 1000;
  const kinds: Record<string, KindStats> = {};
  const all: number[] = [];
  for (const [kind, list] of tally.latencies) {
    for (const ms of list) all.push(ms);
    list.sort((a, b) => a - b);
    kinds[kind] = {
      requests: list.length,
      non2xx: tally.non2xx.get(kind) ?? 0,
      latencyP50Ms: quantile(list, 0.5),
      latencyP99Ms: quantile(list, 0.99),
    };
  }
  all.sort((a, b) => a - b);
  const { codes, creditCodes, creditValid, creditLost, errors, perNode } = tally;
  return {
    seconds,
    requests: all.length,
    requestsPerSec: all.length / seconds,
    latencyP50Ms: quantile(all, 0.5),
    latencyP99Ms: quantile(all, 0.99),
    kinds,
    codes,
    creditCodes,
    creditValid,
    creditLost,
    errors,
    perNode,
  };
}

run(JSON.parse(readFileSync(process.argv[2], 'utf8')) as MixedSpec).then(
  (result) => console.log(JSON.stringify(result)),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
