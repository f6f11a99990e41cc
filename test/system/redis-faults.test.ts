import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { performance } from 'node:perf_hooks';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { OwnRedis, eventually, serve, tally, underLoad, type Served } from '../helpers/outages.ts';
import { sleep, windowWithRoom } from '../helpers/timing.ts';
import type { Store } from '../../src/store/store.ts';
import { REDIS_KEY_PREFIX } from '../../src/services/verification/rate-limit-redis-counters.ts';

/**
 * Redis going away under verification load (docs/reliability.md): verifications with a `consistent` rate limit
 * never wait for it (they decide on the store's counters within REDIS_DECISION_TIMEOUT_MS), nothing fails,
 * credits stay exact, the outage is logged once, and when Redis returns the server goes back to it (counters
 * and the pub/sub subscription) by itself. The Redis taken away is the test's own, on a spare port.
 */

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
/** The documented decision time with Redis gone (~0.5 s) plus a margin for a loaded machine. */
const BOUND_MS = 1_000;
const MILLION = 1_000_000;

for (const dialect of DIALECTS) {
  describe(`Redis stopped under verification load (${dialect})`, { skip: REDIS_URL ? false : 'KEYHOLD_TEST_REDIS_URL is not set' }, () => {
    let redis: OwnRedis;
    let admin: Redis;
    let store: Store;
    let closeStore: () => Promise<void>;
    let s: Served;
    before(async () => {
      redis = await OwnRedis.start();
      admin = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
      admin.on('error', () => {
        /* this test stops that Redis on purpose */
      });
      ({ store, close: closeStore } = await freshStore(dialect));
      s = await serve(store, redis.url);
    });
    after(async () => {
      await s?.app.close();
      await closeStore?.();
      admin?.disconnect();
      await redis?.stop();
    });

    const createKey = async (body: Record<string, unknown>) => {
      const res = await s.call('POST', '/v1/keys.createKey', { apiId: s.apiId, ...body }, s.root);
      assert.equal(res.status, 200, JSON.stringify(res.json));
      return { keyId: String(res.json.keyId), key: String(res.json.key) };
    };
    const verify = async (key: string) => {
      const res = await s.call('POST', '/v1/keys.verifyKey', { key });
      return { status: res.status, code: res.status === 200 ? String(res.json.code) : String(res.json.error?.type) };
    };
    const consistent = (limit: number) => ({ ratelimit: { type: 'consistent', limit, duration: 60_000 } });

    test('no verification waits or fails, credits stay exact, limits hold, and Redis is used again once back', async (t) => {
      const { keyId, key } = await createKey({ remaining: MILLION, ...consistent(MILLION) });
      assert.equal((await verify(key)).code, 'VALID');
      assert.ok((await admin.keys(`${REDIS_KEY_PREFIX}*`)).length > 0, 'consistent limits count in Redis while it is up');
      let duringOutage: { ready: { status: number; body: unknown }; limited: string[] } | undefined;
      const answers = await underLoad(
        6,
        () => verify(key),
        async () => {
          await sleep(300);
          await redis.stop();
          await sleep(300);
          duringOutage = await whileDown();
          await sleep(300);
          await redis.start();
          // Back on Redis: new decisions count there (it restarted empty), and the change bridge subscribed again.
          await eventually('consistent limits count in Redis again', async () => (await admin.keys(`${REDIS_KEY_PREFIX}*`)).length > 0);
          await eventually('the change bridge subscribed again', async () => {
            const [, subscribers] = (await admin.pubsub('NUMSUB', 'keyhold:changes')) as [string, number];
            return Number(subscribers) >= 1;
          });
          await sleep(300);
        },
      );
      const slowest = Math.max(...answers.map((a) => a.ms));
      t.diagnostic(`answers ${JSON.stringify(tally(answers))}; slowest ${Math.round(slowest)} ms`);
      for (const a of answers) assert.deepEqual([a.status, a.code], [200, 'VALID'], `unexpected answer ${JSON.stringify(a)}`);
      assert.ok(slowest < BOUND_MS, `a verification took ${Math.round(slowest)} ms`);

      const left = await s.call('GET', `/v1/keys.getKey?keyId=${keyId}`, undefined, s.root);
      assert.equal(MILLION - Number(left.json.remaining), answers.length + 1, 'credits spent = VALID answers');

      assert.deepEqual(duringOutage?.ready, { status: 200, body: { status: 'degraded', checks: { store: 'up', redis: 'down' } } });
      assert.deepEqual(
        duringOutage?.limited,
        [...Array(5).fill('VALID'), ...Array(5).fill('RATE_LIMITED')],
        'exact on the store meanwhile',
      );
      assert.deepEqual((await s.call('GET', '/v1/readiness')).json, { status: 'ready', checks: { store: 'up', redis: 'up' } });
      await eventually('the outage logged as ended', async () => s.outages('redis').ended === 1);
      assert.deepEqual(s.outages('redis'), { started: 1, ended: 1 }, 'one line when the outage starts, one when it ends');
      assert.deepEqual(s.outages('store'), { started: 0, ended: 0 });
    });

    test('a server started while Redis is down serves at once, and takes Redis up when it appears', async () => {
      await redis.stop();
      const other = await serve(store, redis.url);
      try {
        const res = await other.call('POST', '/v1/keys.createKey', { apiId: other.apiId, ...consistent(10) }, other.root);
        const key = String(res.json.key);
        const started = performance.now();
        assert.equal((await other.call('POST', '/v1/keys.verifyKey', { key })).json.code, 'VALID');
        assert.ok(performance.now() - started < BOUND_MS);
        assert.equal((await other.call('GET', '/v1/readiness')).json.status, 'degraded');
        await redis.start();
        await eventually('the change bridge subscribed', async () => {
          const [, subscribers] = (await admin.pubsub('NUMSUB', 'keyhold:changes')) as [string, number];
          return Number(subscribers) >= 2; // this server's and the suite's
        });
        await eventually('consistent limits count in Redis', async () => {
          await other.call('POST', '/v1/keys.verifyKey', { key });
          return (await admin.keys(`${REDIS_KEY_PREFIX}*`)).length > 0;
        });
        assert.deepEqual((await other.call('GET', '/v1/readiness')).json, { status: 'ready', checks: { store: 'up', redis: 'up' } });
      } finally {
        await other.app.close();
      }
    });

    /** With Redis down: readiness, and a fresh consistent limit of 5 hit by 10 concurrent verifications. */
    async function whileDown() {
      const ready = await s.call('GET', '/v1/readiness');
      const limitedKey = await createKey(consistent(5));
      await windowWithRoom(60_000, 5_000); // the 10 decisions in one window of the minute
      const limited = (await Promise.all(Array.from({ length: 10 }, () => verify(limitedKey.key))))
        .map((a) => a.code)
        .sort((a, b) => (a === b ? 0 : a === 'VALID' ? -1 : 1));
      return { ready: { status: ready.status, body: ready.json }, limited };
    }
  });
}
