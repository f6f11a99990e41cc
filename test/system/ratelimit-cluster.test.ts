import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sleep } from '../helpers/timing.ts';
import { Cluster, type Server } from './cluster-processes.ts';

/**
 * Standalone rate limiting (`ratelimits.*`) on real server processes sharing one store — and Redis when the
 * cluster has it: sync decisions are exact across processes, an override set or deleted on one process
 * reaches every other within 1 s, and async decisions are approximate across processes but never exceed the
 * limit on one process and learn the other processes' traffic within a sync interval.
 *
 * Every name (namespace, identifier) carries a random tag and every cluster has a fresh database: counters
 * (Redis keys included) are named by the namespace's random id, so parallel runs on one Redis never meet.
 */

const PG_URL = process.env.KEYHOLD_TEST_POSTGRES_URL;
const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
const LIMIT = 25;
const CALLS = 120;
/** One hour: no window ends during a case (clearOfWindowEnd makes sure). */
const DURATION = 3_600_000;
const PROPAGATION_BOUND_MS = 1000;
const POLL_MS = 20;
/** A bit more than two fast-mode sync intervals (250 ms each). */
const SYNC_WAIT_MS = 600;

const TAG = randomBytes(4).toString('hex');
let serial = 0;
/** A name no other case or run uses. */
const unique = (what: string): string => `rlc-${TAG}-${what}-${++serial}`;

/** A ratelimits.limit answer. */
interface Limited {
  success: boolean;
  limit: number;
  remaining: number;
  reset: number;
}

interface LimitBody {
  namespace: string;
  identifier: string;
  limit: number;
  duration: number;
  cost?: number;
  async?: boolean;
}

/** A Cluster without background workers, with the ratelimits.limit calls of these cases. */
class RatelimitCluster extends Cluster {
  constructor(dialect: 'sqlite' | 'postgres', size: number, redis: boolean) {
    super(dialect, size, redis, { KEYHOLD_WORKERS: '0' });
  }

  /** Where each process' stdout ends now. */
  outputMarks(): number[] {
    return this.servers.map((s) => s.stdout.length);
  }

  /** Whether a process logged a Redis outage (a failed or timed-out Redis command, …) since `marks`. */
  redisOutageSince(marks: number[]): boolean {
    return this.servers.some((s, i) => s.stdout.slice(marks[i]).includes('redis is unavailable'));
  }

  /** ratelimits.limit on `server`; asserts a 200. */
  async limit(server: Server, body: LimitBody): Promise<Limited> {
    const r = await server.post<Limited>('/v1/ratelimits.limit', body, this.root);
    assert.equal(r.status, 200, `ratelimits.limit on port ${server.port}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  }

  /** `calls` concurrent ratelimits.limit requests, the i-th on server `i mod size`; each answer with its server's index. */
  burst(body: LimitBody, calls: number, on: Server[] = this.servers): Promise<Array<Limited & { node: number }>> {
    return Promise.all(
      Array.from({ length: calls }, (_, i) => this.limit(on[i % on.length], body).then((r) => ({ ...r, node: i % on.length }))),
    );
  }
}

/** Waits out the end of the current window when it is less than 10 s away, so a case never straddles two windows. */
async function clearOfWindowEnd(): Promise<void> {
  const left = DURATION - (Date.now() % DURATION);
  if (left < 10_000) await sleep(left + 50);
}

/** Polls `check` every 20 ms from `t0` for at most 1.5 s; the delay until it first held, or null. */
async function propagation(check: () => Promise<boolean>, t0: number): Promise<number | null> {
  while (Date.now() - t0 <= PROPAGATION_BOUND_MS + 500) {
    if (await check()) return Date.now() - t0;
    await sleep(POLL_MS);
  }
  return null;
}

/**
 * Sync: CALLS concurrent requests over every process on a fresh namespace (created by the burst itself).
 * Exact while Redis answers: a Redis command that takes over 250 ms (an overloaded machine) moves that
 * process' decisions to the store's counters for 1 s, and a window spanning the switch may admit up to
 * twice its limit (rate-limit-failover.ts). A burst during which a process logged a Redis outage is run
 * again, once, on a fresh namespace; any other miscount fails at once.
 */
function syncBurstCase(c: RatelimitCluster): void {
  test(`${CALLS} concurrent sync ratelimits.limit calls over the processes on a limit of ${LIMIT} → exactly ${LIMIT} successes`, async (t) => {
    for (let attempt = 1; ; attempt++) {
      const body = { namespace: unique('sync'), identifier: unique('user'), limit: LIMIT, duration: DURATION };
      await clearOfWindowEnd();
      const marks = c.outputMarks();
      const started = Date.now();
      const replies = await c.burst(body, CALLS);
      const passed = replies.filter((r) => r.success);
      const perNode = c.servers.map((_, i) => passed.filter((r) => r.node === i).length);
      t.diagnostic(`[${c.label}] ${CALLS} sync calls in ${Date.now() - started} ms; successes per process: ${perNode.join(', ')}`);
      if (passed.length !== LIMIT && attempt === 1 && c.redisOutageSince(marks)) {
        t.diagnostic(`[${c.label}] a process logged a Redis outage during the burst (${passed.length} successes): run again`);
        continue;
      }
      assert.equal(passed.length, LIMIT, `successes per process: ${perNode.join(', ')}; the processes logged:\n${c.warnings()}`);
      await assertExhausted(c, body, replies);
      return;
    }
  });
}

/** After an exact burst: each success saw its own count, refusals report 0 left, and every process refuses more. */
async function assertExhausted(c: RatelimitCluster, body: LimitBody, replies: Limited[]): Promise<void> {
  assert.deepEqual(
    replies
      .filter((r) => r.success)
      .map((r) => r.remaining)
      .sort((a, b) => a - b),
    Array.from({ length: LIMIT }, (_, i) => i),
    'the successes report remaining 0..limit-1, each exactly once',
  );
  assert.ok(
    replies.every((r) => r.success || r.remaining === 0),
    'every refusal reports remaining 0',
  );
  assert.equal(new Set(replies.map((r) => r.reset)).size, 1, 'one window');
  assert.ok(replies.every((r) => r.limit === LIMIT));
  for (const s of c.servers) {
    assert.equal((await c.limit(s, { ...body, cost: 0 })).remaining, 0, `port ${s.port}: cost 0 reports the window exhausted`);
    assert.equal((await c.limit(s, body)).success, false, `port ${s.port}: one more request is refused`);
  }
}

/** setOverride, its replacement and deleteOverride on process 1 reach every other process within 1 s. */
function overrideCase(c: RatelimitCluster): void {
  test('setOverride (a * pattern), replacing it and deleteOverride on process 1 → every other process decides with it within 1 s', async (t) => {
    const [a, ...others] = c.servers;
    const namespace = unique('override');
    const prefix = unique('tenant');
    const probe = { namespace, identifier: `${prefix}_alice`, limit: 10, duration: DURATION, cost: 0 };
    const limitOn = async (s: Server) => (await c.limit(s, probe)).limit;
    // Every process caches the namespace (created by the first probe) without an override.
    for (const s of c.servers) assert.equal(await limitOn(s), 10, `port ${s.port}: the request's limit before any override`);
    const delays: string[] = [];
    const change = async (what: string, path: string, body: Record<string, unknown>, expected: number) => {
      const r = await a.post(`/v1/ratelimits.${path}`, { namespaceName: namespace, identifier: `${prefix}_*`, ...body }, c.root);
      const t0 = Date.now();
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.json)}`);
      assert.equal(await limitOn(a), expected, `${what}: process 1 decides with it at once`);
      const measured = await Promise.all(others.map((s) => propagation(async () => (await limitOn(s)) === expected, t0)));
      delays.push(`${what}: ${measured.map((d) => d ?? '> 1500').join(', ')} ms`);
      measured.forEach((d, i) => {
        assert.ok(
          d !== null && d < PROPAGATION_BOUND_MS,
          `${what}: port ${others[i].port} showed limit ${expected} after ${d ?? '> 1500'} ms (bound ${PROPAGATION_BOUND_MS} ms)`,
        );
      });
    };
    await change('setOverride limit 77', 'setOverride', { limit: 77, duration: DURATION }, 77);
    await change('setOverride replaced, limit 55', 'setOverride', { limit: 55, duration: DURATION }, 55);
    await change('deleteOverride → the request’s limit 10', 'deleteOverride', {}, 10);
    for (const d of delays) t.diagnostic(`[${c.label}] ${d}`);
  });
}

/** The window of `body` is used up for every process: async requests are refused, and the shared counter is full. */
async function assertExhaustedEverywhere(c: RatelimitCluster, body: LimitBody, on: Server[]): Promise<void> {
  for (const s of on) {
    const round = await c.burst(body, 5, [s]);
    assert.deepEqual(
      round.map((r) => [r.success, r.remaining]),
      Array.from({ length: 5 }, () => [false, 0]),
      `port ${s.port}: async requests after the sync interval are refused with remaining 0`,
    );
    const shared = await c.limit(s, { ...body, async: false, cost: 0 });
    assert.equal(shared.remaining, 0, `port ${s.port}: the shared counter holds what the processes admitted`);
  }
}

/** Async: approximate across processes, exact on each, and synced with the shared counter in the background. */
function asyncCases(c: RatelimitCluster): void {
  test(`${CALLS} concurrent async calls over the processes on a limit of ${LIMIT} → between ${LIMIT} and ${LIMIT} × processes successes, none beyond ${LIMIT} on one process; after the sync interval every process refuses`, async (t) => {
    const body = { namespace: unique('async'), identifier: unique('user'), limit: LIMIT, duration: DURATION, async: true };
    await clearOfWindowEnd();
    const replies = await c.burst(body, CALLS);
    const perNode = c.servers.map((_, i) => replies.filter((r) => r.node === i && r.success).length);
    const total = perNode.reduce((a, b) => a + b, 0);
    t.diagnostic(`[${c.label}] async successes per process: ${perNode.join(', ')} (total ${total})`);
    assert.ok(total >= LIMIT && total <= LIMIT * c.size, `total successes ${total} within [${LIMIT}, ${LIMIT * c.size}]`);
    for (const [i, n] of perNode.entries())
      assert.ok(n <= LIMIT, `process ${i + 1} admitted ${n} > ${LIMIT}: async is exact on one process`);
    await sleep(SYNC_WAIT_MS);
    await assertExhaustedEverywhere(c, body, c.servers);
  });

  test('async: a process that never saw the window learns of another process exhausting it within the sync interval', async (t) => {
    const [a, ...others] = c.servers;
    const body = { namespace: unique('async-learn'), identifier: unique('user'), limit: LIMIT, duration: DURATION, async: true };
    await clearOfWindowEnd();
    const onA = await c.burst(body, LIMIT + 10, [a]);
    assert.equal(onA.filter((r) => r.success).length, LIMIT, 'process 1 alone admits exactly the limit');
    await sleep(SYNC_WAIT_MS); // process 1 pushes its count to the shared counter
    // A process meeting the window for the first time decides from 0 until its first sync: it may admit this one.
    const first = await Promise.all(others.map((s) => c.limit(s, body)));
    t.diagnostic(
      `[${c.label}] first async call on the other processes: ${first.map((r) => (r.success ? 'admitted' : 'refused')).join(', ')}`,
    );
    await sleep(SYNC_WAIT_MS);
    await assertExhaustedEverywhere(c, body, others);
  });
}

/** A suite of `cases` on the cluster `c`, started before its first case and stopped after its last. */
function suite(name: string, skip: string | false, c: RatelimitCluster, cases: Array<(c: RatelimitCluster) => void>): void {
  describe(name, { skip }, () => {
    before(() => c.start());
    after(() => c.close());
    for (const add of cases) add(c);
  });
}

suite(
  'ratelimits cluster: PostgreSQL + Redis, 3 server processes',
  PG_URL && REDIS_URL ? false : 'KEYHOLD_TEST_POSTGRES_URL and KEYHOLD_TEST_REDIS_URL are not both set',
  new RatelimitCluster('postgres', 3, true),
  [syncBurstCase, overrideCase, asyncCases],
);
suite(
  'ratelimits cluster: PostgreSQL without Redis (store counters), 3 server processes',
  PG_URL ? false : 'KEYHOLD_TEST_POSTGRES_URL is not set',
  new RatelimitCluster('postgres', 3, false),
  [syncBurstCase, asyncCases],
);
suite('ratelimits cluster: one SQLite file, 2 server processes', false, new RatelimitCluster('sqlite', 2, false), [
  syncBurstCase,
  overrideCase,
  asyncCases,
]);
