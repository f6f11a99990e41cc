// A store outage under full load (docs/reliability.md, "When the store or Redis fails"): how the server's memory and its
// outage buffers behave, and whether the analytics it held are written exactly once when the store returns.
// It prints numbers and asserts nothing (it is a bench).
//
//   KEYHOLD_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test node_modules/.bin/node bench/outage.ts
//
// It starts src/main.ts on a fresh PostgreSQL schema reached through a TCP proxy of its own (TcpProxy of
// test/helpers/outages.ts), imports OUTAGE_KEYS keys (as hashes, migrations.createKeys) with a key cache that
// holds them all, and creates a few keys with credits. It runs the load below for OUTAGE_STEADY_SECONDS with the
// store up, verifies every key once (so that most are freshly cached), runs the load again for
// OUTAGE_HOT_SECONDS, freshly cached keys first, at the rate the cut will see (so that the RSS before the cut is
// that of this load, not of an idle server or of cache misses), and waits until the analytics are written. Then it cuts the proxy (nothing reaches PostgreSQL) and
// runs the load for OUTAGE_SECONDS: OUTAGE_CONNECTIONS keep-alive connections of keys.verifyKey, most of them
// over the cached keys, newest-cached first, each key asked twice (VALID, then INSUFFICIENT_PERMISSIONS: both
// decided without the store; two counters per key, more than the verification buffer holds, so some are
// dropped), and OUTAGE_CREDIT_CONNECTIONS of them over keys with credits (503 store/unavailable: they need the
// store, and wait for it up to the 2 s connect timeout). Cached entries live 60 s (KeyCache ttlMs): after that
// every verification needs the store and is answered 503. It samples the server's RSS and V8 heap every 10 s,
// restores the proxy, waits until the buffer is written, and compares the analytics rows with the answers it
// counted: written = answers 200 during the cut − keyhold_dropped_total{what="verifications"}.
//
// Settings (environment): OUTAGE_SECONDS (default 600), OUTAGE_KEYS (150000), OUTAGE_CONNECTIONS (50),
// OUTAGE_CREDIT_CONNECTIONS (5, of the 50), OUTAGE_STEADY_SECONDS (30), OUTAGE_HOT_SECONDS (10). Results also go
// to bench/out/outage.json.

import { mkdir, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import pg from 'pg';
import { scratchStore } from './scratch-store.ts';
import { randomKeys } from './keyset.ts';
import { positiveInt, sleep } from './processes.ts';
import { newRootKey, ServerProcess } from '../test/helpers/server-process.ts';
import { TcpProxy, viaPort } from '../test/helpers/outages.ts';

const SECONDS = positiveInt('OUTAGE_SECONDS', 600);
const KEYS = positiveInt('OUTAGE_KEYS', 150_000);
const CONNECTIONS = positiveInt('OUTAGE_CONNECTIONS', 50);
const CREDIT_CONNECTIONS = positiveInt('OUTAGE_CREDIT_CONNECTIONS', 5);
const STEADY_SECONDS = positiveInt('OUTAGE_STEADY_SECONDS', 30);
const HOT_SECONDS = positiveInt('OUTAGE_HOT_SECONDS', 10);
const MiB = 1024 * 1024;
const mib = (b: number | undefined) => (b === undefined ? '?' : `${(b / MiB).toFixed(1)} MiB`);

/** Answers counted by the load: `200 VALID`, `503`, … */
type Tally = Record<string, number>;
/** Answers 200 in `tally`: the verifications the server counts (or drops). */
const answered = (tally: Tally) => Object.entries(tally).reduce((k, [tag, m]) => (tag.startsWith('200 ') ? k + m : k), 0);
/** The server's RSS at `at` seconds into the cut, with the answers counted so far. */
type Sample = { at: number; bytes: number | undefined; valid: number; unavailable: number; heap?: number };

/** A value of `name{what="verifications"}` (or unlabelled `name`) in the server's /metrics. */
async function metric(s: ServerProcess, name: string, labels = '{what="verifications"}'): Promise<number> {
  const res = await s.request<string>('GET', '/metrics');
  const line = String(res.json)
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(' ').at(-1)) : Number.NaN;
}

/** Imports the keys as hashes, 1,000 a request, two requests in flight. */
async function importKeys(s: ServerProcess, root: string, apiId: string, keys: string[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const batch = keys.slice(next, next + 1000);
      next += batch.length;
      const items = batch.map((key) => ({
        apiId,
        prefix: 'out',
        hash: { value: createHash('sha256').update(key).digest('base64'), variant: 'sha256_base64' },
      }));
      const res = await s.post('/v1/migrations.createKeys', items, root);
      if (res.status !== 200) throw new Error(`migrations.createKeys: ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
    }
  };
  await Promise.all([worker(), worker()]);
}

/**
 * One keep-alive connection per entry of `next`, one request in flight on each, until `until`; each connection
 * sends the bodies its `next` gives, and stops when it gives none. Counts the answers by status and code in
 * `tally` (read it meanwhile to follow the run) and returns it.
 */
async function load(
  port: number,
  next: Array<() => string | undefined>,
  until = Number.POSITIVE_INFINITY,
  tally: Tally = {},
): Promise<Tally> {
  const worker = async (body: () => string | undefined) => {
    const socket: Socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let buf: Buffer = Buffer.alloc(0);
    let answered: (() => void) | undefined;
    let failed: ((err: Error) => void) | undefined;
    socket.on('data', (chunk: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.toString('latin1', 0, end);
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length < end + 4 + length) return;
      const status = head.slice(9, 12);
      const code = /"code":"([A-Z_]+)"/.exec(buf.toString('utf8', end + 4, end + 4 + length))?.[1];
      const tag = status === '200' ? `200 ${code}` : status;
      tally[tag] = (tally[tag] ?? 0) + 1;
      buf = buf.subarray(end + 4 + length);
      answered?.();
    });
    socket.on('error', (err) => failed?.(err));
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    for (let json = body(); json !== undefined && Date.now() < until; json = body()) {
      await new Promise<void>((resolve, reject) => {
        answered = resolve;
        failed = reject;
        socket.write(
          `POST /v1/keys.verifyKey HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
        );
      });
    }
    socket.destroy();
  };
  await Promise.all(next.map(worker));
  return tally;
}

/** The sum of every verification count in the analytics table of `schemaUrl`'s schema. */
async function storedCount(schemaUrl: string): Promise<number> {
  const url = new URL(schemaUrl);
  const schema = url.searchParams.get('schema')!;
  url.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const { rows } = await client.query(`select coalesce(sum(count), 0)::bigint as n from ${schema}.key_verifications_hourly`);
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

async function setup(s: ServerProcess, root: string, keys: string[]): Promise<{ apiId: string; credits: string[] }> {
  const api = await s.post<{ apiId: string }>('/v1/apis.createApi', { name: 'outage' }, root);
  const apiId = api.json.apiId;
  await importKeys(s, root, apiId, keys);
  const credits: string[] = [];
  for (let i = 0; i < 10; i++)
    credits.push((await s.post<{ key: string }>('/v1/keys.createKey', { apiId, remaining: 1e9 }, root)).json.key);
  return { apiId, credits };
}

/** The cut: `bodies` for SECONDS with the proxy cut; RSS and answers sampled every 10 s. */
async function cut(server: ServerProcess, proxy: TcpProxy, bodies: Array<() => string>) {
  const rss: Sample[] = [];
  const sample = (at: number): Sample => {
    const taken: Sample = { at, bytes: server.rss(), valid: answered(during), unavailable: during['503'] ?? 0 };
    void metric(server, 'keyhold_nodejs_heap_size_used_bytes', '').then((heap) => {
      taken.heap = heap;
    });
    rss.push(taken);
    return taken;
  };
  const during: Tally = {};
  sample(0);
  proxy.cut();
  const started = Date.now();
  const sampler = setInterval(() => {
    const last = sample(Math.round((Date.now() - started) / 1000));
    if (last.at <= 90 || last.at % 60 === 0)
      console.log(`  ${last.at} s: RSS ${mib(last.bytes)}; so far ${last.valid} × 200, ${last.unavailable} × 503`);
  }, 10_000);
  await load(server.port, bodies, started + SECONDS * 1000, during);
  clearInterval(sampler);
  const held = await metric(server, 'keyhold_buffered_entries');
  sample(Math.round((Date.now() - started) / 1000));
  await sleep(100); // the last heap reading
  return { during, held, rss };
}

async function main(): Promise<void> {
  const { url, cleanup } = scratchStore('postgres');
  const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(url).port || 5432));
  const root = newRootKey();
  let s: ServerProcess | undefined;
  try {
    // The young generation `npm start` gives V8 (docs/running-the-server.md, "Starting and stopping").
    const env = { KEYHOLD_KEY_CACHE_SIZE: String(KEYS + 1000), NODE_OPTIONS: '--max-semi-space-size=8' };
    s = await ServerProcess.start(viaPort(url, proxy.port), root, env);
    const server = s;
    const keys = randomKeys(KEYS, 'out');
    console.log(`outage bench: PostgreSQL through a proxy, ${KEYS} keys, ${CONNECTIONS} connections, ${SECONDS} s cut`);
    const { credits } = await setup(server, root, keys);
    const bodyOf = (key: string) => `{"key":"${key}"}`;
    let n = 0;
    let c = 0;
    // Each key is asked twice in a row: plainly (VALID), then for a permission it lacks (INSUFFICIENT_PERMISSIONS,
    // decided in memory): two counters per key and hour, so the buffer meets its capacity with fewer cached keys.
    let newestFirst = false;
    const cached = () => {
      const i = n++;
      const k = Math.floor(i / 2) % KEYS;
      const key = keys[newestFirst ? KEYS - 1 - k : k];
      return i % 2 ? `{"key":"${key}","authorization":{"permissions":"outage.read"}}` : bodyOf(key);
    };
    const withCredits = () => `{"key":"${credits[c++ % credits.length]}","remaining":{"cost":1}}`;
    const bodies = Array.from({ length: CONNECTIONS }, (_, i) => (i < CREDIT_CONNECTIONS ? withCredits : cached));
    // The load of the cut with the store up, then every key once right before the cut: cached entries live 60 s
    // (KeyCache ttlMs), and only those verify without the store, so during the cut the keys go newest-cached first.
    const steady = await load(server.port, bodies, Date.now() + STEADY_SECONDS * 1000);
    console.log(`${STEADY_SECONDS} s with the store up: ${JSON.stringify(steady)}`);
    const warmStarted = Date.now();
    let w = 0;
    const warm = await load(
      server.port,
      Array.from({ length: CONNECTIONS }, () => () => (w < KEYS ? bodyOf(keys[w++]) : undefined)),
    );
    console.log(`every key once: ${JSON.stringify(warm)} in ${((Date.now() - warmStarted) / 1000).toFixed(1)} s`);
    newestFirst = true;
    n = 0;
    const hot = await load(server.port, bodies, Date.now() + HOT_SECONDS * 1000);
    console.log(`${HOT_SECONDS} s more, the freshly cached keys first, store up: ${JSON.stringify(hot)}; RSS ${mib(server.rss())}`);
    while ((await metric(server, 'keyhold_buffered_entries')) !== 0) await sleep(250);
    const before = await storedCount(url);
    const droppedBefore = await metric(server, 'keyhold_dropped_total');
    const heapBefore = await metric(server, 'keyhold_nodejs_heap_size_used_bytes', '');
    console.log(
      `before the cut: RSS ${mib(server.rss())}, V8 heap used ${mib(heapBefore)}; analytics rows sum ${before}; dropped so far ${droppedBefore}`,
    );

    n = 0;
    const { during, held, rss } = await cut(server, proxy, bodies);
    const dropped = (await metric(server, 'keyhold_dropped_total')) - droppedBefore;
    console.log(`during the cut: ${JSON.stringify(during)}; buffer held ${held}, dropped ${dropped}; RSS ${mib(rss.at(-1)!.bytes)}`);

    proxy.restore();
    const restored = Date.now();
    while ((await metric(server, 'keyhold_buffered_entries')) !== 0) await sleep(250);
    const writtenIn = (Date.now() - restored) / 1000;
    await sleep(3_000); // a few more flush intervals: nothing may be written twice
    const after = await storedCount(url);
    const endRss = server.rss();
    const recorded = answered(during);
    const written = after - before;
    const verdict = written === recorded - dropped ? 'exact' : 'MISMATCH';
    console.log(
      `after the cut: buffer written in ${writtenIn.toFixed(1)} s; analytics gained ${written}; expected ${recorded} answered 200 − ${dropped} dropped = ${recorded - dropped} (${verdict})`,
    );
    const max = Math.max(...rss.map((r) => r.bytes ?? 0));
    const heaps = rss.map((r) => r.heap ?? 0);
    console.log(
      `V8 heap used: before the cut ${mib(heapBefore)}, max during ${mib(Math.max(...heaps))}, end of the cut ${mib(heaps.at(-1))}`,
    );
    console.log(
      `server RSS: before the cut ${mib(rss[0].bytes)}, max during ${mib(max)}, end of the cut ${mib(rss.at(-1)!.bytes)}, after recovery ${mib(endRss)}`,
    );
    const out = {
      keys: KEYS,
      connections: CONNECTIONS,
      seconds: SECONDS,
      steady,
      warm,
      hot,
      during,
      held,
      dropped,
      writtenIn,
      before,
      after,
      written,
      expected: recorded - dropped,
      heapBefore,
      rss,
      endRss,
    };
    await mkdir(new URL('./out/', import.meta.url), { recursive: true });
    await writeFile(new URL('./out/outage.json', import.meta.url), `${JSON.stringify(out, null, 2)}\n`);
  } finally {
    proxy.restore();
    await s?.stop();
    await proxy.close();
    await cleanup();
  }
}

await main();
