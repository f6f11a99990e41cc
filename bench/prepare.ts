// The cases' setup for `npm run bench` (bench/run.ts): the API and keys they need, their requests, and the
// checks each case passes before it is measured (and once after each of its runs).

import { BASELINE, LANE_CONTENT_TYPE, LIMIT, ratelimitBody, runsOn, verifyBody, type Case, type StoreKind } from './cases.ts';
import { base58 } from './processes.ts';
import { answeredBy, call, type Load, type Server } from './server.ts';

export interface Prepared {
  kase: Case;
  load: Load;
  /** The server the load goes to, when not the real server (the limit). */
  server?: Server;
}

/**
 * Creates an API and one key per verify case, and the load of every case the store runs: the baseline first,
 * then the limit (`limit`, knowing the key `limitKey`; sent the verify cases' request with that key), then `cases`.
 */
export async function prepare(server: Server, store: StoreKind, cases: Case[], limit: Server, limitKey: string): Promise<Prepared[]> {
  const rootKey = server.rootKey;
  const post = (path: string, body: unknown) => call(server, { method: 'POST', path, body: JSON.stringify(body), rootKey });
  const api = await post('/v1/apis.createApi', { name: 'bench' });
  if (api.status !== 200) throw new Error(`apis.createApi: ${api.status} ${JSON.stringify(api.json)}`);
  const apiId = api.json.apiId as string;
  const verify = (key: string) => JSON.stringify({ apiId, key });
  const prepared: Prepared[] = [
    { kase: BASELINE, load: { method: 'GET', path: BASELINE.path } },
    { kase: LIMIT, load: { method: 'POST', path: LIMIT.path, body: verify(limitKey) }, server: limit },
  ];
  const run = base58(12);
  for (const kase of cases.filter((c) => runsOn(c, store))) {
    const { method, path, contentType } = kase;
    if (kase.ratelimit) {
      const load = { method, path, contentType, rootKey, body: ratelimitBody(kase, run), idReplacement: kase.ratelimit.uniqueIdentifiers };
      prepared.push({ kase, load });
    } else if (kase.createKey) {
      prepared.push({ kase, load: { method, path, rootKey, body: JSON.stringify({ apiId, prefix: 'bench', name: kase.id }) } });
    } else {
      const created = await post('/v1/keys.createKey', { apiId, prefix: 'bench', name: kase.id, ...kase.keyBody });
      if (created.status !== 200) throw new Error(`keys.createKey (${kase.id}): ${created.status} ${JSON.stringify(created.json)}`);
      const body = verifyBody(kase, apiId, created.json.key);
      prepared.push({ kase, load: { method, path, contentType, body, rootKey: kase.v2 ? rootKey : undefined } });
    }
  }
  return prepared;
}

/** Sends `n` requests, `concurrency` at a time, and fails on the first response the case does not accept. */
export async function checkCase(server: Server, { kase, load, server: other }: Prepared, n: number, concurrency: number): Promise<void> {
  const target = other ?? server;
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const res = await call(target, load);
      const problem = kase.check(res.status, res.json);
      if (problem) throw new Error(`setup check failed for "${kase.label}": ${problem}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

/** Fails unless the case is answered by the code it means to measure (the lane or Fastify's route). */
export async function checkAnsweredBy(server: Server, { kase, load }: Prepared): Promise<void> {
  if (kase.answeredBy === undefined) return;
  const by = await answeredBy(server, load);
  if (by !== kase.answeredBy) {
    const expected = kase.answeredBy === 'lane' ? 'the lane' : "Fastify's route";
    const contentType = load.contentType ?? LANE_CONTENT_TYPE;
    throw new Error(
      `setup check failed for "${kase.label}": answered by ${by ?? 'unknown code'}, not by ${expected} (Content-Type "${contentType}"; see answeredByHeaders in bench/cases.ts)`,
    );
  }
}
