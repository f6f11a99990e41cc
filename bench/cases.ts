// The cases `npm run bench` (bench/run.ts) measures under autocannon's repeated request: the two references
// (the Fastify baseline and the raw node:http limit), the keys.verifyKey cases, the ratelimits.limit cases and
// keys.createKey. The many-key cases (misses, hits, unknown keys, RSS, cold start) are in bench/many-keys.ts.

/**
 * Where the server keeps its state: a SQLite file, a PostgreSQL schema, or a SQLite file with REDIS_URL set
 * (rate-limit counters in Redis; only the ratelimits.limit cases run there, see runsOn).
 */
export type StoreKind = 'sqlite' | 'postgres' | 'sqlite+redis';

/** Which code answers a keys.verifyKey request: the lane (src/http/lane.ts) or Fastify's route. */
export type AnsweredBy = 'lane' | 'fastify';

/** Large enough never to run out during a benchmark: credits, and the rate limit per 60 s window. */
export const PLENTY = 1_000_000_000_000;
const RATELIMIT_DURATION_MS = 60_000;

export const VERIFY_PATH = '/v1/keys.verifyKey';

/** What every verify case sends, except the Fastify-route case: a Content-Type the lane takes. */
export const LANE_CONTENT_TYPE = 'application/json';
/**
 * A Content-Type the lane does not take (it takes `application/json`, optionally `; charset=utf-8`, in any
 * case) and Fastify's JSON parser does (it looks at the media type and ignores this parameter): the request
 * is answered by Fastify's route, which runs the same verifier.
 */
export const ROUTE_CONTENT_TYPE = 'application/json; bench=fastify-route';

/** A minimum ratio of a case's req/s to one of the two references' (measured in the same run). */
export interface Target {
  min: number;
  of: 'limit' | 'baseline';
}
const ofLimit = (min: number): Target => ({ min, of: 'limit' });
const ofBaseline = (min: number): Target => ({ min, of: 'baseline' });

export interface Case {
  id: string;
  label: string;
  method: 'GET' | 'POST';
  path: string;
  /** The request's Content-Type (verify cases; default LANE_CONTENT_TYPE). */
  contentType?: string;
  /** Which code must answer it (verify cases); checked before the case is measured. */
  answeredBy?: AnsweredBy;
  /** The key this case verifies (verify cases only). */
  keyBody?: Record<string, unknown>;
  /** A v2 verify case: `{key}` sent with the root key, answered in v2's envelope (see verifyBody). */
  v2?: true;
  /** What a ratelimits.limit case asks (sent with the root key; see ratelimitBody). */
  ratelimit?: { async: boolean; uniqueIdentifiers?: boolean };
  /** The only stores it runs on (absent: every store it fits, see runsOn). */
  only?: StoreKind[];
  /** keys.createKey with the root key, a new key per request. */
  createKey?: true;
  /** Measured against the limit server (bench/limit-server.ts) instead of the real server. */
  limit?: true;
  /** The minimum ratio per store, to the limit or to the Fastify baseline; absent: reported without a target. */
  target?: Partial<Record<StoreKind, Target>>;
  /** A problem with one correct-looking response, or undefined. */
  check(status: number, body: any): string | undefined;
}

const verifyValid =
  (extra?: (body: any) => string | undefined) =>
  (status: number, body: any): string | undefined => {
    if (status !== 200) return `status ${status}: ${JSON.stringify(body)}`;
    if (body?.valid !== true || body?.code !== 'VALID') return `not VALID: ${JSON.stringify(body)}`;
    return extra?.(body);
  };

const noCreditsNoLimit = verifyValid((b) =>
  b.remaining === undefined && b.ratelimit === undefined ? undefined : `unexpected remaining/ratelimit: ${JSON.stringify(b)}`,
);

/** A v2 keys.verifyKey answer `{meta, data}` whose data is VALID with nothing else to spend or limit. */
const v2NoCreditsNoLimit = (status: number, body: any): string | undefined => {
  if (status !== 200) return `status ${status}: ${JSON.stringify(body)}`;
  const data = body?.data;
  if (data?.valid !== true || data?.code !== 'VALID') return `not VALID: ${JSON.stringify(body)}`;
  return data.credits === undefined && data.ratelimits === undefined ? undefined : `unexpected credits/ratelimits: ${JSON.stringify(body)}`;
};

export const BASELINE: Case = {
  id: 'baseline',
  label: 'baseline GET /v1/liveness',
  method: 'GET',
  path: '/v1/liveness',
  check: (status, body) => (status === 200 && body?.status === 'ok' ? undefined : `status ${status}: ${JSON.stringify(body)}`),
};

/**
 * The limit: the raw node:http server of bench/limit-server.ts answering the verify cases' request (same
 * path, Content-Type and body shape, with the key of "verifyKey cached, no credits"), a case like the others
 * (rounds interleaved with the baseline); every case's ratio to the limit is its ratio to the baseline over
 * this one's.
 */
export const LIMIT: Case = {
  id: 'limit',
  label: 'limit: raw node:http, SHA-256, Map',
  method: 'POST',
  path: '/v1/keys.verifyKey',
  limit: true,
  check: verifyValid(),
};

/** The id of the lane's cached-key case and of the same request through Fastify's route: their ratio is the lane's gain. */
export const LANE_CASE_ID = 'verify-cached';
export const ROUTE_CASE_ID = 'verify-route';
/** v2's keys.verifyKey of a key like the lane case's: its ratio to that case is v2's cost over v1's. */
export const V2_CASE_ID = 'verify-v2';
export const VERIFY_V2_PATH = '/v2/keys.verifyKey';
/** v2's keys.verifyKey of a key with a `fast` limit like verify-ratelimit-fast's: its ratio to that case is v2's cost over v1's with a limit. */
export const V2_RATELIMIT_CASE_ID = 'verify-v2-ratelimit-fast';
export const V1_RATELIMIT_CASE_ID = 'verify-ratelimit-fast';
/**
 * The floor of the cached verification on SQLite: its ratio to the Fastify baseline (issue 32). Below it,
 * `npm run bench` ends with a banner naming the figure and exits 3: something now costs every verification.
 */
export const LANE_FLOOR = { case: LANE_CASE_ID, store: 'sqlite' as const, minRatioToBaseline: 0.87 };
/** The v2 cases beside the v1 case they are compared with, and the least ratio of their throughput to v1's (issue 21). */
export const V2_PAIRS: Array<{ v2: string; v1: string; min: number }> = [
  { v2: V2_CASE_ID, v1: LANE_CASE_ID, min: 0.9 },
  { v2: V2_RATELIMIT_CASE_ID, v1: V1_RATELIMIT_CASE_ID, min: 0.75 },
];

/** A v2 keys.verifyKey answer VALID with the key's one limit `default` checked, with its id (and nothing spent). */
const v2WithLimit = (status: number, body: any): string | undefined => {
  const limits = body?.data?.ratelimits;
  const ok = status === 200 && body.data.code === 'VALID' && limits?.length === 1 && limits[0].name === 'default' && limits[0].id;
  return ok ? undefined : `status ${status}, not VALID with its limit and the limit's id: ${JSON.stringify(body)}`;
};

export const VERIFY_CASES: Case[] = [
  {
    id: LANE_CASE_ID,
    label: 'verifyKey cached, no credits',
    method: 'POST',
    path: VERIFY_PATH,
    answeredBy: 'lane',
    keyBody: {},
    target: { sqlite: ofLimit(0.85), postgres: ofLimit(0.85) },
    check: noCreditsNoLimit,
  },
  {
    // The same kind of key verified through v2: root-key authentication (cached) and v2's permission check
    // before the same verifier, answered by the lane as v1's is.
    id: V2_CASE_ID,
    label: 'v2 verifyKey cached, no credits (root key)',
    method: 'POST',
    path: VERIFY_V2_PATH,
    answeredBy: 'lane',
    keyBody: {},
    v2: true,
    check: v2NoCreditsNoLimit,
  },
  {
    // The lane case, bypassing the lane (ROUTE_CONTENT_TYPE): what the lane gains stays measurable. SQLite
    // only: the gain does not depend on the store, and the whole bench must fit in 10 minutes.
    id: ROUTE_CASE_ID,
    only: ['sqlite'],
    label: "verifyKey through Fastify's route",
    method: 'POST',
    path: VERIFY_PATH,
    answeredBy: 'fastify',
    contentType: ROUTE_CONTENT_TYPE,
    keyBody: {},
    check: noCreditsNoLimit,
  },
  {
    id: 'verify-credits',
    label: 'verifyKey cached, with credits',
    method: 'POST',
    path: VERIFY_PATH,
    answeredBy: 'lane',
    keyBody: { remaining: PLENTY },
    target: { sqlite: ofBaseline(0.65), postgres: ofLimit(0.5) },
    check: verifyValid((b) =>
      typeof b.remaining === 'number' && b.remaining < PLENTY ? undefined : `credits not spent: ${JSON.stringify(b)}`,
    ),
  },
  {
    id: 'verify-ratelimit-consistent',
    label: 'verifyKey cached, ratelimit consistent',
    method: 'POST',
    path: VERIFY_PATH,
    answeredBy: 'lane',
    // `consistent` is what keys.createKey gives a limit without `type`/`async`: one store upsert per verification.
    keyBody: { ratelimit: { type: 'consistent', limit: PLENTY, duration: RATELIMIT_DURATION_MS } },
    check: verifyValid((b) => (b.ratelimit?.limit === PLENTY ? undefined : `no ratelimit in response: ${JSON.stringify(b)}`)),
  },
  {
    id: V1_RATELIMIT_CASE_ID,
    label: 'verifyKey cached, ratelimit fast',
    method: 'POST',
    path: VERIFY_PATH,
    answeredBy: 'lane',
    // `fast`: decided in memory, synced with the store every 250 ms.
    keyBody: { ratelimit: { type: 'fast', limit: PLENTY, duration: RATELIMIT_DURATION_MS } },
    check: verifyValid((b) => (b.ratelimit?.limit === PLENTY ? undefined : `no ratelimit in response: ${JSON.stringify(b)}`)),
  },
  {
    // The same kind of key through v2: the answer lists the limit with its id (from the cached key record).
    id: V2_RATELIMIT_CASE_ID,
    label: 'v2 verifyKey cached, ratelimit fast (root key)',
    method: 'POST',
    path: VERIFY_V2_PATH,
    answeredBy: 'lane',
    keyBody: { ratelimit: { type: 'fast', limit: PLENTY, duration: RATELIMIT_DURATION_MS } },
    v2: true,
    check: v2WithLimit,
  },
];

export const RATELIMIT_PATH = '/v1/ratelimits.limit';

/** In a body, replaced by a new random id in every request of a case with `uniqueIdentifiers` (autocannon's `[<id>]`). */
export const ID_PLACEHOLDER = '[<id>]';

const limitPassed = (status: number, body: any): string | undefined => {
  if (status !== 200) return `status ${status}: ${JSON.stringify(body)}`;
  if (body?.success !== true) return `not success: ${JSON.stringify(body)}`;
  if (body.limit !== PLENTY || !(typeof body.remaining === 'number' && body.remaining < PLENTY))
    return `unexpected limit/remaining: ${JSON.stringify(body)}`;
  return undefined;
};

/**
 * ratelimits.limit with the bootstrap root key, a limit of PLENTY (never refuses) per 60 s window. The
 * one-identifier cases hammer one counter, the realistic hot path (sync: concurrent requests of one counter
 * share one store or Redis operation); `ratelimit-sync-unique` gives every request a new identifier, so a new
 * counter each time: no sharing, one insert per request (the worst case; it also grows the counters and the
 * analytics buffer by one entry per request, and leaves as many Redis keys, expiring with their window).
 */
export const RATELIMIT_CASES: Case[] = [
  {
    id: 'ratelimit-async',
    label: 'ratelimits.limit async, 1 identifier',
    method: 'POST',
    path: RATELIMIT_PATH,
    ratelimit: { async: true },
    target: { sqlite: ofBaseline(0.8), postgres: ofBaseline(0.8), 'sqlite+redis': ofBaseline(0.8) },
    check: limitPassed,
  },
  {
    // No target on PostgreSQL: none was set.
    id: 'ratelimit-sync',
    label: 'ratelimits.limit sync, 1 identifier',
    method: 'POST',
    path: RATELIMIT_PATH,
    ratelimit: { async: false },
    target: { sqlite: ofBaseline(0.65), 'sqlite+redis': ofBaseline(0.45) },
    check: limitPassed,
  },
  {
    id: 'ratelimit-sync-unique',
    label: 'ratelimits.limit sync, new identifier each',
    method: 'POST',
    path: RATELIMIT_PATH,
    ratelimit: { async: false, uniqueIdentifiers: true },
    check: limitPassed,
  },
];

/** keys.createKey, one key per request (root key; the key gets the API and a name, nothing else). */
export const CREATE_KEY: Case = {
  id: 'create-key',
  label: 'keys.createKey, one key per request',
  method: 'POST',
  path: '/v1/keys.createKey',
  createKey: true,
  target: { sqlite: ofLimit(0.25), postgres: ofLimit(0.12) },
  check: (status, body) => (status === 200 && typeof body?.keyId === 'string' ? undefined : `status ${status}: ${JSON.stringify(body)}`),
};

/** The body of a verify case's request: v1's names the API, v2's only the key (its API comes with the root key). */
export const verifyBody = (kase: Case, apiId: string, key: string): string => JSON.stringify(kase.v2 ? { key } : { apiId, key });

/** Every case but the two references (always measured), in the order they run (keys.createKey last: it grows the store). */
export const CASES: Case[] = [...VERIFY_CASES, ...RATELIMIT_CASES, CREATE_KEY];

/** Whether the case runs on the store: the sqlite+redis store is there for the rate limits only. */
export const runsOn = (kase: Case, store: StoreKind): boolean =>
  (kase.only === undefined || kase.only.includes(store)) && (store !== 'sqlite+redis' || kase.ratelimit !== undefined);

/** The body of a ratelimits.limit case; `run` (random per run) names its namespace and identifier, so no two runs share a counter. */
export function ratelimitBody(kase: Case, run: string): string {
  const { async, uniqueIdentifiers } = kase.ratelimit!;
  const identifier = uniqueIdentifiers ? `${kase.id}-${ID_PLACEHOLDER}` : `${kase.id}-${run}`;
  return JSON.stringify({ namespace: `bench-${run}`, identifier, limit: PLENTY, duration: RATELIMIT_DURATION_MS, async });
}

/**
 * Which code answered a response, from the order of its headers: the lane writes Content-Type first, then
 * X-Request-Id; Fastify's route has X-Request-Id set by the app's onRequest hook before the reply sets
 * Content-Type. Undefined when neither order is seen. (If either side changes its order, update this.)
 */
export function answeredByHeaders(rawHeaders: string[]): AnsweredBy | undefined {
  const names = rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
  const requestId = names.indexOf('x-request-id');
  const contentType = names.indexOf('content-type');
  if (requestId < 0 || contentType < 0) return undefined;
  return contentType < requestId ? 'lane' : 'fastify';
}
