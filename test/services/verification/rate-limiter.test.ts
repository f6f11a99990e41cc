import { describe, test, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Redis } from 'ioredis';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';
import { openStore, type Store } from '../../../src/store/store.ts';
import { openRedis } from '../../../src/store/redis.ts';
import {
  createRateLimiter,
  counterBucket,
  deleteExpiredRatelimitCounters,
  type LimitRequest,
  type LimitResult,
  type SyncingRateLimiter,
} from '../../../src/services/verification/rate-limiter.ts';
import { CLOCK_SKEW_MS } from '../../../src/services/verification/rate-limit-counters.ts';
import { REDIS_KEY_PREFIX } from '../../../src/services/verification/rate-limit-redis-counters.ts';

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
/** Long enough that no background sync runs during a test: tests sync explicitly. */
const NO_BACKGROUND_SYNC = 3_600_000;
const D = 60_000;

/** A place shared counters live, and its view from one or two "processes". */
interface Backend {
  name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  /** Per test: limiters on fresh shared state (Redis: a random key prefix), all closed when the test ends. */
  open(t: TestContext): Promise<Ctx>;
}
interface Ctx {
  store: Store;
  /** A limiter of this process. */
  limiter(): SyncingRateLimiter;
  /** A limiter of another process: its own store connection or Redis client on the same shared counters. */
  otherProcess(): Promise<SyncingRateLimiter>;
  /** The shared counter of a bucket (null: none). */
  shared(bucket: string): Promise<number | null>;
  /** Makes the shared counters unreachable; the returned function repairs them. */
  breakShared(): Promise<() => Promise<void>>;
}

function storeBackend(dialect: 'sqlite' | 'postgres'): Backend {
  let store: Store;
  let url: string;
  let close: () => Promise<void>;
  return {
    name: dialect,
    async setup() {
      ({ store, url, close } = await freshStore(dialect));
    },
    teardown: () => close(),
    async open(t) {
      const closers = closeAllAfter(t);
      const make = (db: Store['db'], closeDb?: () => Promise<void>) => {
        const l = createRateLimiter({ db, syncIntervalMs: NO_BACKGROUND_SYNC });
        closers.push(async () => {
          try {
            await l.close();
          } finally {
            await closeDb?.();
          }
        });
        return l;
      };
      return {
        store,
        limiter: () => make(store.db),
        async otherProcess() {
          const other = openStore(url);
          return make(other.db, () => other.close());
        },
        async shared(bucket) {
          const row = await store.db.selectFrom('ratelimit_counters').select('count').where('bucket', '=', bucket).executeTakeFirst();
          return row ? Number(row.count) : null;
        },
        async breakShared() {
          await sql`alter table ratelimit_counters rename to ratelimit_counters_away`.execute(store.db);
          return async () => {
            await sql`alter table ratelimit_counters_away rename to ratelimit_counters`.execute(store.db);
          };
        },
      };
    },
  };
}

function redisBackend(url: string): Backend {
  let store: Store;
  let closeStore: () => Promise<void>;
  let admin: Redis;
  return {
    name: 'redis',
    async setup() {
      ({ store, close: closeStore } = await freshStore('sqlite'));
      admin = openRedis(url);
      admin.on('error', () => {
        /* reported by the failing command below */
      });
      // Set but unreachable must fail the suite, never skip it.
      try {
        assert.equal(await admin.ping(), 'PONG');
      } catch (err) {
        admin.disconnect();
        throw new Error(`KEYHOLD_TEST_REDIS_URL is set but Redis at ${url} is unreachable: ${(err as Error).message}`);
      }
    },
    async teardown() {
      admin?.disconnect();
      await closeStore?.();
    },
    async open(t) {
      const prefix = `keyhold-test:${randomBytes(8).toString('hex')}:`;
      // Closing a limiter flushes its fast-mode counts, so the keys are deleted after every limiter is closed.
      const closers = closeAllAfter(t, async () => {
        let cursor = '0';
        do {
          const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          if (keys.length) await admin.del(...keys);
          cursor = next;
        } while (cursor !== '0');
        assert.deepEqual(await admin.keys(`${prefix}*`), []);
      });
      const make = () => {
        const redis = openRedis(url, { keyPrefix: prefix });
        const l = createRateLimiter({ db: store.db, redis, syncIntervalMs: NO_BACKGROUND_SYNC });
        closers.push(async () => {
          try {
            await l.close();
          } finally {
            redis.disconnect();
          }
        });
        return { l, redis };
      };
      const first = make();
      let handedOut = false;
      return {
        store,
        limiter() {
          if (handedOut) return make().l;
          handedOut = true;
          return first.l;
        },
        otherProcess: async () => make().l,
        async shared(bucket) {
          const v = await admin.get(prefix + REDIS_KEY_PREFIX + bucket);
          return v === null ? null : Number(v);
        },
        async breakShared() {
          first.redis.disconnect();
          await new Promise<void>((resolve) => {
            if (first.redis.status === 'end') resolve();
            else first.redis.once('end', () => resolve());
          });
          return async () => {
            await first.redis.connect();
          };
        },
      };
    },
  };
}

/**
 * Closers for what a test opens, run in order when the test ends (even after a failure), then `last`.
 * One hook, so the order is explicit: limiters flush to the shared counters before those are closed or deleted.
 */
function closeAllAfter(t: TestContext, last?: () => Promise<void>): Array<() => Promise<void>> {
  const closers: Array<() => Promise<void>> = [];
  t.after(async () => {
    const errors: unknown[] = [];
    for (const close of [...closers, ...(last ? [last] : [])]) {
      try {
        await close();
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length) throw errors[0];
  });
  return closers;
}

const BACKENDS: Backend[] = [...DIALECTS.map(storeBackend), ...(REDIS_URL ? [redisBackend(REDIS_URL)] : [])];

const uid = () => `id_${randomBytes(8).toString('hex')}`;
/** The start of the next window of length D: windows in the future, so Redis TTLs are never in the past. */
const nextWindow = (d = D) => (Math.floor(Date.now() / d) + 1) * d;
const passes = (rs: LimitResult[]) => rs.filter((r) => r.passed).length;

for (const backend of BACKENDS) {
  describe(`rate limiter (${backend.name})`, () => {
    before(() => backend.setup());
    after(() => backend.teardown());

    for (const type of ['consistent', 'fast'] as const) {
      const req = (over: Partial<LimitRequest> = {}): LimitRequest => ({
        identifier: 'unset',
        name: 'default',
        limit: 5,
        duration: D,
        cost: 1,
        type,
        ...over,
      });
      /** One request at a time: its result. */
      const one = async (l: SyncingRateLimiter, r: LimitRequest, now: number) => (await l.check([r], now))[0];

      test(`${type}: passes up to the limit, then rejects; remaining counts down and reset is the window's end`, async (t) => {
        const l = (await backend.open(t)).limiter();
        const start = nextWindow();
        const r = req({ identifier: uid(), limit: 3 });
        const seen = [];
        for (let i = 0; i < 5; i++) seen.push(await one(l, r, start + 10 + i));
        assert.deepEqual(seen, [
          { passed: true, limit: 3, remaining: 2, reset: start + D },
          { passed: true, limit: 3, remaining: 1, reset: start + D },
          { passed: true, limit: 3, remaining: 0, reset: start + D },
          { passed: false, limit: 3, remaining: 0, reset: start + D },
          { passed: false, limit: 3, remaining: 0, reset: start + D },
        ]);
      });

      test(`${type}: a cost > 1 spends that much; a cost that does not fit is rejected and spends nothing`, async (t) => {
        const l = (await backend.open(t)).limiter();
        const now = nextWindow() + 5;
        const r = (cost: number) => req({ identifier: 'cost-user', limit: 10, cost });
        const seq = [];
        for (const cost of [4, 4, 4, 2, 1]) seq.push(await one(l, r(cost), now));
        assert.deepEqual(
          seq.map((x) => [x.passed, x.remaining]),
          [
            [true, 6],
            [true, 2],
            [false, 2],
            [true, 0],
            [false, 0],
          ],
        );
      });

      test(`${type}: a cost larger than the limit is rejected on a fresh window and spends nothing`, async (t) => {
        const l = (await backend.open(t)).limiter();
        const now = nextWindow() + 5;
        const id = uid();
        assert.deepEqual(await one(l, req({ identifier: id, cost: 6 }), now), {
          passed: false,
          limit: 5,
          remaining: 5,
          reset: nextWindow() + D,
        });
        assert.deepEqual(await one(l, req({ identifier: id, cost: 5 }), now), {
          passed: true,
          limit: 5,
          remaining: 0,
          reset: nextWindow() + D,
        });
      });

      test(`${type}: cost 0 reports the state without consuming`, async (t) => {
        const ctx = await backend.open(t);
        const l = ctx.limiter();
        const now = nextWindow() + 5;
        const id = uid();
        const r = (cost: number) => req({ identifier: id, limit: 3, cost });
        for (let i = 0; i < 3; i++)
          assert.deepEqual(await one(l, r(0), now), { passed: true, limit: 3, remaining: 3, reset: nextWindow() + D });
        await l.sync();
        assert.equal(await ctx.shared(counterBucket(id, 'default', 3, D, Math.floor(now / D))), null, 'cost 0 creates no counter');
        assert.equal((await one(l, r(1), now)).remaining, 2);
        assert.equal((await one(l, r(0), now)).remaining, 2);
        assert.equal((await one(l, r(0), now)).remaining, 2);
        assert.equal((await one(l, r(2), now)).remaining, 0);
        assert.deepEqual(await one(l, r(0), now), { passed: true, limit: 3, remaining: 0, reset: nextWindow() + D });
        assert.equal((await one(l, r(1), now)).passed, false);
      });

      test(`${type}: limit 0 rejects every cost > 0; cost 0 passes with remaining 0`, async (t) => {
        const l = (await backend.open(t)).limiter();
        const now = nextWindow() + 5;
        const id = uid();
        for (const cost of [1, 1, 7])
          assert.deepEqual(await one(l, req({ identifier: id, limit: 0, cost }), now), {
            passed: false,
            limit: 0,
            remaining: 0,
            reset: nextWindow() + D,
          });
        assert.deepEqual(await one(l, req({ identifier: id, limit: 0, cost: 0 }), now), {
          passed: true,
          limit: 0,
          remaining: 0,
          reset: nextWindow() + D,
        });
      });

      test(`${type}: the next window starts a fresh counter`, async (t) => {
        const l = (await backend.open(t)).limiter();
        const start = nextWindow();
        const r = req({ identifier: uid(), limit: 2 });
        assert.equal(passes(await l.check([r, r, r], start)), 2);
        assert.deepEqual(await one(l, r, start + D - 1), { passed: false, limit: 2, remaining: 0, reset: start + D });
        assert.deepEqual(await one(l, r, start + D), { passed: true, limit: 2, remaining: 1, reset: start + 2 * D });
        assert.deepEqual(await one(l, r, start + 2 * D + 30_000), { passed: true, limit: 2, remaining: 1, reset: start + 3 * D });
      });

      test(`${type}: identifiers, names, limits and durations each have their own counter`, async (t) => {
        const l = (await backend.open(t)).limiter();
        const now = nextWindow(2 * D) + 5; // the start of a window of both D and 2D
        const a = uid();
        const base = req({ identifier: a, limit: 2 });
        assert.equal(passes(await l.check([base, base, base], now)), 2);
        assert.equal((await one(l, base, now)).passed, false);
        assert.deepEqual(await one(l, { ...base, identifier: uid() }, now), { passed: true, limit: 2, remaining: 1, reset: now - 5 + D });
        assert.deepEqual(await one(l, { ...base, name: 'other' }, now), { passed: true, limit: 2, remaining: 1, reset: now - 5 + D });
        // A changed limit or duration is a new counter, not a continuation of the old one.
        assert.deepEqual(await one(l, { ...base, limit: 3 }, now), { passed: true, limit: 3, remaining: 2, reset: now - 5 + D });
        assert.deepEqual(await one(l, { ...base, duration: 2 * D }, now), { passed: true, limit: 2, remaining: 1, reset: now - 5 + 2 * D });
        assert.equal((await one(l, base, now)).passed, false);
      });

      test(`${type}: results come in request order; a rejected request does not undo the others`, async (t) => {
        const l = (await backend.open(t)).limiter();
        const now = nextWindow() + 5;
        const [x, y, z] = [uid(), uid(), uid()];
        const results = await l.check(
          [req({ identifier: x, limit: 2 }), req({ identifier: y, limit: 0 }), req({ identifier: z, name: 'burst', limit: 5, cost: 3 })],
          now,
        );
        assert.deepEqual(
          results.map((r) => [r.passed, r.limit, r.remaining]),
          [
            [true, 2, 1],
            [false, 0, 0],
            [true, 5, 2],
          ],
        );
        assert.equal((await one(l, req({ identifier: x, limit: 2 }), now)).remaining, 0);
        assert.equal((await one(l, req({ identifier: z, name: 'burst', limit: 5, cost: 0 }), now)).remaining, 2);
      });

      test(`${type}: invalid requests are refused before anything in the batch is consumed`, async (t) => {
        const l = (await backend.open(t)).limiter();
        const now = nextWindow() + 5;
        const good = req({ identifier: uid(), limit: 1 });
        for (const bad of [
          { limit: -1 },
          { limit: 1.5 },
          { duration: 999 },
          { cost: -1 },
          { cost: Number.NaN },
          { type: 'eventual' as 'fast' },
        ]) {
          await assert.rejects(l.check([good, req({ identifier: uid(), ...bad })], now), RangeError);
        }
        assert.equal((await one(l, good, now)).passed, true, 'the valid request of the refused batches consumed nothing');
      });
    }

    const creq = (over: Partial<LimitRequest> = {}): LimitRequest => ({
      identifier: 'unset',
      name: 'default',
      limit: 50,
      duration: D,
      cost: 1,
      type: 'consistent',
      ...over,
    });
    const freq = (over: Partial<LimitRequest> = {}): LimitRequest => creq({ type: 'fast', ...over });

    test('consistent: 200 concurrent checks on one counter from two processes pass exactly 50 times', async (t) => {
      const ctx = await backend.open(t);
      const a = ctx.limiter();
      const b = await ctx.otherProcess();
      const now = nextWindow() + 5;
      const id = uid();
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).check([creq({ identifier: id })], now)));
      assert.equal(passes(results.flat()), 50);
      assert.equal(await ctx.shared(counterBucket(id, 'default', 50, D, Math.floor(now / D))), 50);
      assert.deepEqual((await a.check([creq({ identifier: id, cost: 0 })], now))[0], {
        passed: true,
        limit: 50,
        remaining: 0,
        reset: now - 5 + D,
      });
      // Every remaining a passed call reported is distinct: each saw its own count.
      const remainings = results
        .flat()
        .filter((r) => r.passed)
        .map((r) => r.remaining)
        .sort((x, y) => x - y);
      assert.deepEqual(
        remainings,
        Array.from({ length: 50 }, (_, i) => i),
      );

      // Cost 3 from both processes: floor(50 / 3) = 16 fit, 48 counted.
      const id3 = uid();
      const r3 = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).check([creq({ identifier: id3, cost: 3 })], now)));
      assert.equal(passes(r3.flat()), 16);
      assert.equal(await ctx.shared(counterBucket(id3, 'default', 50, D, Math.floor(now / D))), 48);
    });

    test('consistent: checks of one counter waiting at the same time decide exactly as one by one, in call order', async (t) => {
      const ctx = await backend.open(t);
      const l = ctx.limiter();
      const now = nextWindow() + 5;
      const window = Math.floor(now / D);
      const together = (identifier: string, limit: number, costs: number[]) =>
        Promise.all(costs.map((cost) => l.check([creq({ identifier, limit, cost })], now))).then((rs) =>
          rs.flat().map((r) => [r.passed, r.remaining]),
        );
      // 3 + 4 + 5 + 2 + 1 = 15 does not fit 10: decided one by one, 5 is refused (7 counted then) and the rest fit.
      const mixed = uid();
      assert.deepEqual(await together(mixed, 10, [3, 4, 5, 2, 1]), [
        [true, 7],
        [true, 3],
        [false, 3],
        [true, 1],
        [true, 0],
      ]);
      assert.equal(await ctx.shared(counterBucket(mixed, 'default', 10, D, window)), 10);
      // From 7 of 10: 4 is refused (3 left), 2 fits (1 left), 5 is refused with the count the 2 left (1 left).
      const refusedTwice = uid();
      assert.deepEqual(await together(refusedTwice, 10, [7]), [[true, 3]]);
      assert.deepEqual(await together(refusedTwice, 10, [4, 2, 5]), [
        [false, 3],
        [true, 1],
        [false, 1],
      ]);
      assert.equal(await ctx.shared(counterBucket(refusedTwice, 'default', 10, D, window)), 9);
      // 1 + 2 + 3 fits 50: each sees the count it would have seen alone.
      const fitting = uid();
      assert.deepEqual(await together(fitting, 50, [1, 2, 3]), [
        [true, 49],
        [true, 47],
        [true, 44],
      ]);
      assert.equal(await ctx.shared(counterBucket(fitting, 'default', 50, D, window)), 6);
    });

    test('fast: exact on one node: 200 concurrent checks against limit 50 pass exactly 50 times', async (t) => {
      const ctx = await backend.open(t);
      const l = ctx.limiter();
      const now = nextWindow() + 5;
      const id = uid();
      const results = await Promise.all(Array.from({ length: 200 }, () => l.check([freq({ identifier: id })], now)));
      assert.equal(passes(results.flat()), 50);
      const bucket = counterBucket(id, 'default', 50, D, Math.floor(now / D));
      assert.equal(await ctx.shared(bucket), null, 'fast decisions do not wait for the shared counter');
      await l.sync();
      assert.equal(await ctx.shared(bucket), 50);
      await l.sync(); // nothing pending: nothing pushed twice
      assert.equal(await ctx.shared(bucket), 50);
      assert.equal((await l.check([freq({ identifier: id })], now))[0].passed, false);
    });

    test("fast: after a sync another node sees this node's count", async (t) => {
      const ctx = await backend.open(t);
      const a = ctx.limiter();
      const b = await ctx.otherProcess();
      const now = nextWindow() + 5;
      const id = uid();
      const r = (cost = 1) => [freq({ identifier: id, cost })];
      for (let i = 0; i < 30; i++) assert.equal((await a.check(r(), now))[0].passed, true);
      await a.sync();
      assert.equal(await ctx.shared(counterBucket(id, 'default', 50, D, Math.floor(now / D))), 30);
      // b decides locally, so before its first sync it does not know about a's traffic …
      assert.equal((await b.check(r(0), now))[0].remaining, 50);
      await b.sync();
      // … and after it, it does.
      assert.equal((await b.check(r(0), now))[0].remaining, 20);
      for (let i = 0; i < 20; i++) assert.equal((await b.check(r(), now))[0].passed, true);
      assert.equal((await b.check(r(), now))[0].passed, false);
      await b.sync();
      // A node syncs the buckets it used since its last sync: a was idle on this one, so it decides from what it
      // last knew until its next sync (at most one sync interval of its own traffic), then it knows.
      await a.sync();
      assert.deepEqual((await a.check(r(), now))[0], { passed: true, limit: 50, remaining: 19, reset: now - 5 + D });
      await a.sync();
      assert.deepEqual((await a.check(r(), now))[0], { passed: false, limit: 50, remaining: 0, reset: now - 5 + D });
      assert.equal(await ctx.shared(counterBucket(id, 'default', 50, D, Math.floor(now / D))), 51);
    });

    test('fast: across nodes the overshoot is the traffic each node admitted before syncing', async (t) => {
      const ctx = await backend.open(t);
      const a = ctx.limiter();
      const b = await ctx.otherProcess();
      const now = nextWindow() + 5;
      const id = uid();
      const [ra, rb] = await Promise.all(
        [a, b].map((l) => Promise.all(Array.from({ length: 80 }, () => l.check([freq({ identifier: id })], now)))),
      );
      assert.equal(passes(ra.flat()), 50, 'each node alone is exact');
      assert.equal(passes(rb.flat()), 50);
      await Promise.all([a.sync(), b.sync()]);
      const bucket = counterBucket(id, 'default', 50, D, Math.floor(now / D));
      assert.equal(await ctx.shared(bucket), 100, 'admitted counts are pushed, never lost');
      await Promise.all([a.sync(), b.sync()]);
      for (const l of [a, b])
        assert.deepEqual((await l.check([freq({ identifier: id })], now))[0], {
          passed: false,
          limit: 50,
          remaining: 0,
          reset: now - 5 + D,
        });
    });

    test('fast: close() flushes pending counts into the counter that consistent checks share', async (t) => {
      const ctx = await backend.open(t);
      const a = ctx.limiter();
      const b = await ctx.otherProcess();
      const now = nextWindow() + 5;
      const id = uid();
      for (let i = 0; i < 10; i++) await a.check([freq({ identifier: id, limit: 20 })], now);
      await a.close();
      await assert.rejects(a.check([freq({ identifier: id, limit: 20 })], now), /closed/);
      await a.close(); // idempotent
      assert.equal(await ctx.shared(counterBucket(id, 'default', 20, D, Math.floor(now / D))), 10);
      assert.deepEqual((await b.check([creq({ identifier: id, limit: 20 })], now))[0], {
        passed: true,
        limit: 20,
        remaining: 9,
        reset: now - 5 + D,
      });
    });

    test('fast: a failed sync keeps the counts, keeps deciding locally, and pushes them later', async (t) => {
      const ctx = await backend.open(t);
      const a = ctx.limiter();
      const now = nextWindow() + 5;
      const id = uid();
      const bucket = counterBucket(id, 'default', 10, D, Math.floor(now / D));
      for (let i = 0; i < 4; i++) await a.check([freq({ identifier: id, limit: 10 })], now);
      const repair = await ctx.breakShared();
      let repaired = false;
      try {
        await assert.rejects(a.sync());
        assert.equal((await a.check([freq({ identifier: id, limit: 10 })], now))[0].remaining, 5);
        await assert.rejects(a.sync());
        await repair();
        repaired = true;
      } finally {
        if (!repaired) await repair();
      }
      await a.sync();
      assert.equal(await ctx.shared(bucket), 5, 'every admitted count pushed exactly once');
      assert.equal((await a.check([freq({ identifier: id, limit: 10, cost: 0 })], now))[0].remaining, 5);
    });

    if (backend.name === 'redis') {
      test('with Redis, counters live in Redis and expire with their window (plus the clock-skew margin)', async (t) => {
        const ctx = await backend.open(t);
        const l = ctx.limiter();
        const now = nextWindow() + 5;
        const id = uid();
        await l.check([creq({ identifier: id }), freq({ identifier: id, name: 'f' })], now);
        await l.sync();
        const rows = await ctx.store.db.selectFrom('ratelimit_counters').select('bucket').execute();
        assert.deepEqual(rows, [], 'nothing is written to the store');
        const admin = openRedis(REDIS_URL!);
        try {
          for (const name of ['default', 'f']) {
            const keys = await admin.keys(`*${REDIS_KEY_PREFIX}${counterBucket(id, name, 50, D, Math.floor(now / D))}`);
            assert.equal(keys.length, 1);
            assert.equal(await admin.get(keys[0]), '1');
            assert.equal(Number(await admin.call('PEXPIRETIME', keys[0])), now - 5 + D + CLOCK_SKEW_MS);
          }
        } finally {
          admin.disconnect();
        }
      });
    } else {
      test('expired counters are deleted; current ones stay', async (t) => {
        const ctx = await backend.open(t);
        const l = ctx.limiter();
        const id = uid();
        const current = nextWindow() + 5;
        const old = current - 10 * D;
        await l.check([creq({ identifier: id })], old);
        await l.check([creq({ identifier: id })], current);
        const bucketAt = (now: number) => counterBucket(id, 'default', 50, D, Math.floor(now / D));
        const row = await ctx.store.db
          .selectFrom('ratelimit_counters')
          .selectAll()
          .where('bucket', '=', bucketAt(old))
          .executeTakeFirstOrThrow();
        assert.deepEqual(row, { bucket: bucketAt(old), count: 1, expires_at: old - 5 + D });
        assert.ok((await deleteExpiredRatelimitCounters(ctx.store.db, old - 5 + D + 1)) >= 1);
        assert.equal(await ctx.shared(bucketAt(old)), null);
        assert.equal(await ctx.shared(bucketAt(current)), 1);
        assert.equal(await deleteExpiredRatelimitCounters(ctx.store.db, old - 5 + D + 1), 0, 'nothing left to delete at that time');
      });
    }
  });
}
