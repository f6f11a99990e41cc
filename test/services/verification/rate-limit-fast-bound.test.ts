import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';
import type { Store } from '../../../src/store/store.ts';
import { counterBucket, createRateLimiter, type LimitRequest } from '../../../src/services/verification/rate-limiter.ts';

const WINDOW = 60_000;
/** A sync interval long enough that no background sync runs during a test. */
const NO_BACKGROUND_SYNC = 3_600_000;

for (const dialect of DIALECTS) {
  describe(`fast-mode counters held in memory are bounded (${dialect})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await freshStore(dialect));
    });
    after(() => close());

    const shared = async (identifier: string, now: number): Promise<number | undefined> => {
      const bucket = counterBucket(identifier, 'default', 5, WINDOW, Math.floor(now / WINDOW));
      const row = await store.db.selectFrom('ratelimit_counters').select('count').where('bucket', '=', bucket).executeTakeFirst();
      return row === undefined ? undefined : Number(row.count);
    };

    test('a fast request for a counter beyond maxFastBuckets is decided on the shared counter, exactly', async () => {
      const limiter = createRateLimiter({ db: store.db, syncIntervalMs: NO_BACKGROUND_SYNC, maxFastBuckets: 2 });
      const now = Date.now();
      const req = (identifier: string): LimitRequest => ({
        identifier,
        name: 'default',
        limit: 5,
        duration: WINDOW,
        cost: 1,
        type: 'fast',
      });
      try {
        await limiter.check([req('a'), req('b')], now);
        assert.equal(await shared('a', now), undefined, 'held in memory until a sync');
        const third = await limiter.check([req('c'), req('c'), req('c')], now);
        assert.deepEqual(
          third.map((r) => r.passed),
          [true, true, true],
        );
        assert.equal(await shared('c', now), 3, 'decided on the shared counter at once');
        const refused = await limiter.check([req('c'), req('c'), req('c')], now);
        assert.deepEqual(
          refused.map((r) => r.passed),
          [true, true, false],
        );
        // Counters already held stay in memory.
        await limiter.check([req('a')], now);
        assert.equal(await shared('a', now), undefined);
        await limiter.sync();
        assert.equal(await shared('a', now), 2);
      } finally {
        await limiter.close();
      }
    });

    test('checkInMemory decides a fast request as check does, on the same counter; consistent ones and counters beyond the bound are left to check', async () => {
      const limiter = createRateLimiter({ db: store.db, syncIntervalMs: NO_BACKGROUND_SYNC, maxFastBuckets: 1 });
      const now = Date.now();
      const req = (identifier: string, type: LimitRequest['type'] = 'fast'): LimitRequest => ({
        identifier,
        name: 'default',
        limit: 5,
        duration: WINDOW,
        cost: 2,
        type,
      });
      const reset = (Math.floor(now / WINDOW) + 1) * WINDOW;
      try {
        assert.deepEqual(limiter.checkInMemory(req('m'), now), { passed: true, limit: 5, remaining: 3, reset });
        assert.deepEqual(await limiter.check([req('m')], now), [{ passed: true, limit: 5, remaining: 1, reset }]);
        assert.deepEqual(limiter.checkInMemory(req('m'), now), { passed: false, limit: 5, remaining: 1, reset });
        assert.equal(limiter.checkInMemory(req('m', 'consistent'), now), undefined);
        assert.equal(limiter.checkInMemory(req('other'), now), undefined, 'a new counter beyond maxFastBuckets');
        assert.throws(() => limiter.checkInMemory({ ...req('m'), cost: -1 }, now), RangeError);
        await limiter.sync();
        assert.equal(await shared('m', now), 4, 'both admitted decisions, one from each, reach the shared counter');
      } finally {
        await limiter.close();
      }
    });
  });
}
