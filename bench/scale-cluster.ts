// Part 4 of `npm run bench:scale` (bench/scale.ts): three servers (src/main.ts, bench/server.ts startServer) on the
// same PostgreSQL schema and the same Redis (REDIS_URL), under mixed load from bench/scale-mixed-load.ts (its own
// process, connections spread over the three): 95% verifications of random big-API keys (a share of them of the
// credit keys, imported with `credits` credits each), 5% management calls. Meanwhile this process revokes keys one
// at a time (POST /v1/keys.deleteKey through node k mod 3, each key first verified VALID on every node so that each
// has it cached) and polls every node every 5 ms until its verification answers not valid: the delay from the
// delete's answer to that node's first not-valid answer. After the load, each credit key's credits left
// (GET /v1/keys.getKey) give the credits spent, which must equal the VALID answers the load generator counted.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { keyAt, type KeySet } from './scale-key-derivation.ts';
import type { MixedResult, MixedSpec } from './scale-mixed-load.ts';
import { figure, type Figure } from './scale-report.ts';
import { call, runJsonChild, startServer, type Server } from './server.ts';

const NODES = 3;
const POLL_MS = 5;
const REVOCATION_TARGET_MS = 1_000;
/** A node that still answers VALID this long after a revocation is reported as never having seen it. */
const REVOCATION_GIVE_UP_MS = 10_000;

export interface ClusterInput {
  databaseUrl: string;
  rootKey: string;
  redisUrl: string;
  /** Where the load generator's spec is written. */
  dir: string;
  apiId: string;
  keys: KeySet;
  credit: { set: KeySet; ids: string[]; credits: number };
  revoke: { set: KeySet; ids: string[] };
  /** Ids of big-API keys for the management calls. */
  keyIds: string[];
  connections: number;
  seconds: number;
  creditShare: number;
  managementShare: number;
}

async function mixedLoad(spec: MixedSpec, file: string): Promise<MixedResult> {
  await writeFile(file, JSON.stringify(spec));
  return runJsonChild<MixedResult>('scale-mixed-load.ts', file, spec.seconds + 120);
}

async function verify(node: Server, apiId: string, key: string): Promise<{ valid: boolean; code: string }> {
  const res = await call(node, { method: 'POST', path: '/v1/keys.verifyKey', body: JSON.stringify({ apiId, key }) });
  if (res.status !== 200) throw new Error(`keys.verifyKey on ${node.base}: ${res.status}`);
  return res.json;
}

/** Revokes revocation key k through node k mod 3; per node, ms from the delete's answer to its first not-valid answer. */
async function revokeOnce(nodes: Server[], input: ClusterInput, k: number): Promise<number[]> {
  const key = keyAt(input.revoke.set, k);
  for (const node of nodes) {
    const { code } = await verify(node, input.apiId, key);
    if (code !== 'VALID') throw new Error(`revocation key ${k} answers ${code} on ${node.base} before its revocation`);
  }
  const via = nodes[k % nodes.length];
  const res = await call(via, {
    method: 'POST',
    path: '/v1/keys.deleteKey',
    body: JSON.stringify({ keyId: input.revoke.ids[k] }),
    rootKey: via.rootKey,
  });
  if (res.status !== 200) throw new Error(`keys.deleteKey: ${res.status} ${JSON.stringify(res.json)}`);
  const deleted = performance.now();
  return Promise.all(
    nodes.map(async (node) => {
      for (;;) {
        if (!(await verify(node, input.apiId, key)).valid) return performance.now() - deleted;
        if (performance.now() - deleted > REVOCATION_GIVE_UP_MS) return Number.POSITIVE_INFINITY;
        await sleep(POLL_MS);
      }
    }),
  );
}

/** The revocations, spread over the load's `seconds` (starting after 2 s); per revocation, the delay of each node. */
async function revocations(nodes: Server[], input: ClusterInput): Promise<number[][]> {
  const n = input.revoke.set.count;
  const every = Math.max(0.5, (input.seconds - 4) / n) * 1000;
  await sleep(2_000);
  const delays: number[][] = [];
  for (let k = 0; k < n; k++) {
    const started = performance.now();
    delays.push(await revokeOnce(nodes, input, k));
    await sleep(Math.max(0, every - (performance.now() - started)));
  }
  return delays;
}

/** Per credit key, the credits spent (credits at import − credits left, read through keys.getKey). */
async function creditsSpent(node: Server, input: ClusterInput): Promise<number[]> {
  const spent: number[] = [];
  for (const id of input.credit.ids) {
    const res = await call(node, { method: 'GET', path: `/v1/keys.getKey?keyId=${encodeURIComponent(id)}`, rootKey: node.rootKey });
    if (res.status !== 200) throw new Error(`keys.getKey ${id}: ${res.status}`);
    spent.push(input.credit.credits - (res.json.remaining as number));
  }
  return spent;
}

export interface ClusterResult {
  figures: Figure[];
  load: MixedResult;
  revocationDelaysMs: number[][];
  creditsSpent: number[];
}

export async function benchCluster(input: ClusterInput): Promise<ClusterResult> {
  console.log(
    `\n== ${NODES} servers on one PostgreSQL schema and one Redis: mixed load for ${input.seconds} s, ${input.revoke.set.count} revocations`,
  );
  const nodes: Server[] = [];
  try {
    for (let i = 0; i < NODES; i++) nodes.push(await startServer(input.databaseUrl, { rootKey: input.rootKey, redisUrl: input.redisUrl }));
    const spec: MixedSpec = {
      urls: nodes.map((n) => n.base),
      connections: input.connections,
      seconds: input.seconds,
      rootKey: input.rootKey,
      apiId: input.apiId,
      keys: input.keys,
      credit: input.credit.set,
      creditShare: input.creditShare,
      managementShare: input.managementShare,
      keyIds: input.keyIds,
    };
    const [load, delays] = await Promise.all([mixedLoad(spec, join(input.dir, 'mixed-spec.json')), revocations(nodes, input)]);
    const spent = await creditsSpent(nodes[0], input);
    for (const node of nodes)
      if (node.child.exitCode !== null || node.child.signalCode !== null)
        throw new Error(`a node died during the load:\n${node.output.slice(-10).join('\n')}`);
    return { figures: clusterFigures(load, delays, spent), load, revocationDelaysMs: delays, creditsSpent: spent };
  } finally {
    await Promise.all(nodes.map((n) => stopChild(n.child)));
  }
}

function clusterFigures(load: MixedResult, delays: number[][], spent: number[]): Figure[] {
  const kind = (k: string) => load.kinds[k] ?? { requests: 0, non2xx: 0, latencyP50Ms: Number.NaN, latencyP99Ms: Number.NaN };
  const management = ['getKey', 'updateKey', 'listKeys', 'createKey'];
  const managementP99 = Math.max(...management.map((k) => kind(k).latencyP99Ms));
  const non2xx = Object.values(load.kinds).reduce((n, k) => n + k.non2xx, 0);
  const spentTotal = spent.reduce((a, b) => a + b, 0);
  const validTotal = load.creditValid.reduce((a, b) => a + b, 0);
  const differing = spent.filter((s, i) => s !== load.creditValid[i]).length;
  const creditsMet = load.creditLost === 0 ? differing === 0 : spentTotal >= validTotal && spentTotal - validTotal <= load.creditLost;
  const others = delays.flat();
  const worst = Math.max(...others);
  const sorted = [...others].sort((a, b) => a - b);
  const codes = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([code, n]) => `${code} ${fmt(n, 0)}`)
      .join(', ');
  console.log(
    `   load: ${fmt(load.requestsPerSec, 0)} req/s, ${fmt(load.requests, 0)} requests (per node ${load.perNode.map((n) => fmt(n, 0)).join(', ')}), errors ${load.errors}, non-2xx ${non2xx}`,
  );
  console.log(
    `   ${Object.entries(load.kinds)
      .map(([k, s]) => `${k} ${fmt(s.requests, 0)} (p99 ${s.latencyP99Ms} ms)`)
      .join('; ')}`,
  );
  console.log(
    `   verifications: ${codes(load.codes)}; credit keys: ${codes(load.creditCodes)}; credits spent ${fmt(spentTotal, 0)}, VALID ${fmt(validTotal, 0)}`,
  );
  console.log(`   revocation delays (ms, per node): ${delays.map((d) => d.map((x) => fmt(x, 0)).join('/')).join(', ')}`);
  return [
    figure('cluster-rate', 'three nodes, mixed load: requests/s', load.requestsPerSec, 'req/s', {
      note: `${fmt(load.requests, 0)} requests, per node ${load.perNode.map((n) => fmt(n, 0)).join(' / ')}; errors ${load.errors}, non-2xx ${non2xx}`,
    }),
    figure('cluster-p99', 'three nodes, mixed load: p99', load.latencyP99Ms, 'ms', { digits: 0, note: `p50 ${load.latencyP50Ms} ms` }),
    figure('cluster-p99-verify', 'three nodes, mixed load: p99 of the verifications', kind('verify').latencyP99Ms, 'ms', { digits: 0 }),
    figure('cluster-p99-management', 'three nodes, mixed load: p99 of the management calls (the slowest kind)', managementP99, 'ms', {
      digits: 0,
      note: management.map((k) => `${k} ${kind(k).latencyP99Ms} ms`).join(', '),
    }),
    figure('cluster-credits', 'three nodes: credits spent − VALID answers of the credit keys (0: equal)', spentTotal - validTotal, '', {
      digits: 0,
      met: creditsMet,
      note: `spent ${fmt(spentTotal, 0)}, VALID ${fmt(validTotal, 0)}, keys whose counts differ ${differing} of ${spent.length}, answers lost ${load.creditLost}`,
    }),
    figure('cluster-revocation', 'three nodes: revocation seen on every node, the longest delay', worst, 'ms', {
      digits: 0,
      note: `${delays.length} revocations, each through a different node; median ${fmt(sorted[sorted.length >> 1] ?? Number.NaN, 0)} ms`,
      target: { op: '≤', value: REVOCATION_TARGET_MS },
    }),
  ];
}
