// Part 2 of `npm run bench:scale` (bench/scale.ts), on one server restarted on the filled store (cold: nothing in
// its caches; PostgreSQL's buffers and the OS page cache stay as the import left them):
//   - cold start (bench/cold-start.ts timeStart): from spawning src/main.ts to the first VALID answer of
//     POST /v1/keys.verifyKey for a big-API key, polled every 5 ms; `coldStarts` starts, the median counts;
//   - the server's RSS (/proc) once it answers /v1/liveness;
//   - cache misses (bench/many-keys.ts pass over bench/list-load.ts, `connections` connections: few, so that the p99 is
//     a miss's own time more than a queue's, while the passes still keep the server busy): after a warm-up
//     over `warmup` other big-API keys, `sample` distinct keys of the small API, then as many distinct keys of the
//     big API, each verified once, so that every request is a miss (the key cache's counters from /metrics are
//     printed beside each pass); req/s, p50/p99, the server's CPU per request and, for the record, the CPU of every
//     postgres process of the machine per request (/proc; other work on PostgreSQL counts too) and what the kernel
//     read from disk per request (/proc/vmstat: a key whose pages are not in the page cache waits for the disk);
//   - verifications of big-API keys drawn at random (with repeats, through the default key cache) until the server
//     has answered `random` verifications in all (the passes above count; `randomConnections` connections, for
//     throughput: this pass is long), and the server's RSS after them.
// The server is left running for the reads (bench/scale-reads.ts).

import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VERIFY_PATH } from './cases.ts';
import { median, timeStart } from './cold-start.ts';
import { pass, type Pass } from './many-keys.ts';
import { freePort, processCpuTotalSeconds, residentMiB } from './processes.ts';
import { fmt } from './report.ts';
import { distinctIndexes, keyAt, type KeySet } from './scale-key-derivation.ts';
import { figure, type Figure } from './scale-report.ts';
import { serverCommand, startServer, type Server } from './server.ts';

const VALID = '"code":"VALID"';
const MISS_RATIO_TARGET = 0.8;

export interface SingleNodeInput {
  databaseUrl: string;
  rootKey: string;
  big: { apiId: string; set: KeySet };
  small: { apiId: string; set: KeySet };
  /** Where the key files of the passes are written. */
  dir: string;
  sample: number;
  warmup: number;
  random: number;
  connections: number;
  randomConnections: number;
  coldStarts: number;
}

export interface SingleNodeResult {
  figures: Figure[];
  /** The restarted server, still running. */
  server: Server;
  passes: Array<Pass & { postgresCpuUsPerRequest: number; diskReadKiBPerRequest: number }>;
  coldStartSeconds: number[];
}

/** CPU seconds of every process named postgres on this machine (the server's backends among them); NaN off Linux. */
async function postgresCpuSeconds(): Promise<number> {
  if (process.platform !== 'linux') return Number.NaN;
  let total = 0;
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
    const cpu = await processCpuTotalSeconds(Number(name));
    if (Number.isFinite(cpu)) total += cpu;
  }
  return total;
}

/** KiB the kernel has read from block devices since boot (/proc/vmstat pgpgin: every process's, the page cache's misses); NaN off Linux. */
async function diskReadKiB(): Promise<number> {
  const text = await readFile('/proc/vmstat', 'utf8').catch(() => '');
  return Number(/^pgpgin (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
}

async function keysFile(dir: string, name: string, set: KeySet, indexes: number[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `${indexes.map((i) => keyAt(set, i)).join('\n')}\n`);
  return path;
}

/** One verification pass over the keys of `file`, every answer VALID, with the CPU of the postgres processes over it. */
async function verifyPass(server: Server, label: string, apiId: string, file: string, amount: number, connections: number) {
  const [pgBefore, readBefore] = [await postgresCpuSeconds(), await diskReadKiB()];
  const p = await pass(label, server, { method: 'POST', path: VERIFY_PATH, connections, apiId, amount, keysFile: file, expect: VALID });
  const postgresCpuUsPerRequest = ((await postgresCpuSeconds()) - pgBefore) * (1e6 / p.requests);
  // A miss whose key's pages are not in the page cache waits for the disk: what bounds a working set larger than memory.
  const diskReadKiBPerRequest = ((await diskReadKiB()) - readBefore) / p.requests;
  console.log(
    `   ${''.padEnd(44)} PostgreSQL CPU ${fmt(postgresCpuUsPerRequest, 0)} µs/req (every postgres process of the machine), ` +
      `read from disk ${fmt(diskReadKiBPerRequest, 1)} KiB/req`,
  );
  return { ...p, postgresCpuUsPerRequest, diskReadKiBPerRequest };
}

async function coldStarts(input: SingleNodeInput): Promise<number[]> {
  const times: number[] = [];
  for (let s = 0; s < input.coldStarts; s++) {
    const key = keyAt(input.big.set, Math.floor(Math.random() * input.big.set.count));
    const port = await freePort();
    const { args, env } = serverCommand(input.databaseUrl, port, input.rootKey, {});
    times.push(await timeStart(args, env, port, JSON.stringify({ apiId: input.big.apiId, key }), VALID));
  }
  console.log(
    `   cold start to the first VALID answer: ${times.map((t) => `${fmt(t, 2)} s`).join(', ')} (median ${fmt(median(times), 2)} s)`,
  );
  return times;
}

/** The warm-up, then the small API's and the big API's distinct keys, each verified once. */
async function missPasses(server: Server, input: SingleNodeInput) {
  const { big, small, dir, connections } = input;
  const warm = distinctIndexes(Math.min(input.warmup, Math.floor(big.set.count / 10)), big.set.count);
  const n = Math.min(input.sample, small.set.count, big.set.count - warm.length);
  const bigSample = distinctIndexes(n, big.set.count, new Set(warm));
  const smallSample = distinctIndexes(n, small.set.count);
  const files = {
    warm: await keysFile(dir, 'warm.txt', big.set, warm),
    small: await keysFile(dir, 'small.txt', small.set, smallSample),
    big: await keysFile(dir, 'big.txt', big.set, bigSample),
  };
  await verifyPass(server, `warm-up: ${fmt(warm.length, 0)} big-API keys once`, big.apiId, files.warm, warm.length, connections);
  const s = await verifyPass(server, `small API: ${fmt(n, 0)} distinct keys once (misses)`, small.apiId, files.small, n, connections);
  const b = await verifyPass(server, `big API: ${fmt(n, 0)} distinct keys once (misses)`, big.apiId, files.big, n, connections);
  return { small: s, big: b, n, done: warm.length + 2 * n };
}

function missFigures(s: Pass & { postgresCpuUsPerRequest: number; diskReadKiBPerRequest: number }, b: typeof s, n: number): Figure[] {
  const cpuRatio = s.serverCpuUsPerRequest! / b.serverCpuUsPerRequest!;
  const p = (x: typeof s) =>
    `p50 ${x.latencyP50Ms} ms, p99 ${x.latencyP99Ms} ms; ${fmt(n, 0)} keys; read from disk ${fmt(x.diskReadKiBPerRequest, 1)} KiB/req`;
  return [
    figure('miss-rate-small', 'cache misses, small API: verifications/s', s.requestsPerSec, 'req/s', { note: p(s) }),
    figure('miss-rate-big', 'cache misses, big API: verifications/s', b.requestsPerSec, 'req/s', { note: p(b) }),
    figure('miss-rate-ratio', "cache misses: big API's req/s ÷ small API's", b.requestsPerSec / s.requestsPerSec, '×', {
      target: { op: '≥', value: MISS_RATIO_TARGET },
    }),
    figure('miss-cpu-small', 'cache misses, small API: server CPU per request', s.serverCpuUsPerRequest!, 'µs', {
      note: `PostgreSQL ${fmt(s.postgresCpuUsPerRequest, 0)} µs`,
    }),
    figure('miss-cpu-big', 'cache misses, big API: server CPU per request', b.serverCpuUsPerRequest!, 'µs', {
      note: `PostgreSQL ${fmt(b.postgresCpuUsPerRequest, 0)} µs`,
    }),
    figure('miss-cpu-ratio', "cache misses: small API's server CPU per request ÷ big API's", cpuRatio, '×', {
      target: { op: '≥', value: MISS_RATIO_TARGET },
    }),
    figure('miss-p99-small', 'cache misses, small API: p99', s.latencyP99Ms, 'ms', { digits: 0, target: { op: '≤', value: 10 } }),
    figure('miss-p99-big', 'cache misses, big API: p99', b.latencyP99Ms, 'ms', { digits: 0, target: { op: '≤', value: 10 } }),
  ];
}

function randomFigure(r: Pass): Figure {
  const cache = r.cache ? `; key cache ${fmt(r.cache.hits, 0)} hits, ${fmt(r.cache.misses, 0)} misses` : '';
  const cpu = fmt(r.serverCpuUsPerRequest ?? Number.NaN, 0);
  return figure('random-rate', 'random verifications of big-API keys: verifications/s', r.requestsPerSec, 'req/s', {
    note: `${fmt(r.requests, 0)} requests, p50 ${r.latencyP50Ms} ms, p99 ${r.latencyP99Ms} ms, server CPU ${cpu} µs/req${cache}`,
  });
}

/** Cold start, RSS after start, the cache-miss passes, the random verifications and the RSS after them. */
export async function benchSingleNode(input: SingleNodeInput): Promise<SingleNodeResult> {
  console.log(`\n== one restarted server: cold start (${input.coldStarts} starts), cache misses, random verifications`);
  const coldStartSeconds = await coldStarts(input);
  const server = await startServer(input.databaseUrl, { rootKey: input.rootKey });
  const rssStart = (await residentMiB(server.child.pid)) ?? Number.NaN;
  console.log(`   restarted: RSS ${fmt(rssStart, 0)} MB`);
  const misses = await missPasses(server, input);
  const { big, random } = input;
  // The passes so far count toward the `random` verifications after which the RSS is read.
  const rest = Math.max(0, random - misses.done);
  const indexes = Array.from({ length: rest }, () => Math.floor(Math.random() * big.set.count));
  const file = await keysFile(input.dir, 'random.txt', big.set, indexes);
  const r = rest
    ? await verifyPass(server, `big API: ${fmt(rest, 0)} random keys`, big.apiId, file, rest, input.randomConnections)
    : undefined;
  const rssRandom = (await residentMiB(server.child.pid)) ?? Number.NaN;
  const total = misses.done + rest;
  console.log(`   RSS after ${fmt(total, 0)} verifications of random keys: ${fmt(rssRandom, 0)} MB`);
  const figures = [
    figure('cold-start', 'cold start to the first VALID verification of a big-API key', median(coldStartSeconds), 's', {
      note: `median of ${coldStartSeconds.length}: ${coldStartSeconds.map((t) => fmt(t, 2)).join(', ')} s`,
      target: { op: '≤', value: 2 },
    }),
    figure('rss-start', 'server RSS after start', rssStart, 'MB', { digits: 0, target: { op: '≤', value: 250 } }),
    ...missFigures(misses.small, misses.big, misses.n),
    ...(r ? [randomFigure(r)] : []),
    figure('rss-random', `server RSS after ${fmt(total, 0)} verifications of random keys (the passes above included)`, rssRandom, 'MB', {
      digits: 0,
      target: { op: '≤', value: 350 },
    }),
  ];
  return { figures, server, passes: [misses.small, misses.big, ...(r ? [r] : [])], coldStartSeconds };
}
