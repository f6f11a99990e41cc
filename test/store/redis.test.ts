import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

const url = process.env.KEYHOLD_TEST_REDIS_URL;

// Set but unreachable must fail, never skip: the connection is made in `before`, which fails the suite.
describe('redis', { skip: url ? false : 'KEYHOLD_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379): Redis tests skipped' }, () => {
  let redis: Redis;
  before(async () => {
    redis = new Redis(url!, {
      lazyConnect: true,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    // ioredis reports the cause (ECONNREFUSED, ETIMEDOUT…) as an 'error' event and rejects with "Connection is closed".
    let cause: Error | undefined;
    redis.on('error', (err: Error) => {
      cause = err;
    });
    try {
      await redis.connect();
    } catch (err) {
      redis.disconnect();
      throw new Error(`KEYHOLD_TEST_REDIS_URL is set but Redis at ${url} is unreachable: ${(cause ?? (err as Error)).message}`);
    }
  });
  after(() => redis?.disconnect());

  test('PING → PONG', async () => {
    assert.equal(await redis.ping(), 'PONG');
  });

  test('SET/GET round-trip under a random key, deleted afterwards', async () => {
    const key = `keyhold:test:${randomBytes(12).toString('hex')}`;
    const value = `value-${randomBytes(8).toString('hex')}`;
    try {
      assert.equal(await redis.get(key), null);
      assert.equal(await redis.set(key, value, 'PX', 60_000), 'OK');
      assert.equal(await redis.get(key), value);
    } finally {
      await redis.del(key);
    }
    assert.equal(await redis.exists(key), 0);
  });
});
