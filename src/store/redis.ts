import { Redis, type RedisOptions } from 'ioredis';

/**
 * Opens the Redis named by REDIS_URL (`redis://` or `rediss://`). It connects at once, queues commands
 * while (re)connecting, and fails a command after 3 reconnection attempts instead of waiting forever, so
 * a Redis outage surfaces as errors (rate limits fail closed) rather than hung requests. Reconnection
 * itself never stops (backoff up to 2 s). `overrides` (tests: `keyPrefix`) are applied last.
 *
 * ioredis reports connection problems as 'error' events; attach a listener (a logger) to the result.
 */
export function openRedis(url: string, overrides: RedisOptions = {}): Redis {
  return new Redis(url, {
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 3,
    connectTimeout: 5_000,
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 2_000),
    ...overrides,
  });
}
