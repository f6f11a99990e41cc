import { Redis, type RedisOptions } from 'ioredis';
import { withDeadline } from './deadline.ts';

/** How long one attempt to (re)connect to Redis may take. */
export const REDIS_CONNECT_TIMEOUT_MS = 2_000;
/**
 * How long a Redis command may take before it fails (queued while reconnecting included), whatever the load
 * of this process. Redis answers in well under a millisecond; a consistent rate-limit decision gives up on it
 * sooner, after 250 ms in which this process could have read the answer (REDIS_DECISION_TIMEOUT_MS).
 */
export const REDIS_COMMAND_TIMEOUT_MS = 1_000;

/**
 * Opens the Redis named by REDIS_URL (`redis://` or `rediss://`). It connects at once and queues commands
 * while (re)connecting, but every command fails after REDIS_COMMAND_TIMEOUT_MS (or 3 reconnection attempts),
 * so a Redis outage surfaces as errors rather than hung requests. Reconnection itself never stops (backoff
 * up to 2 s), so the client recovers by itself when Redis returns. `overrides` (tests: `keyPrefix`; the
 * pub/sub subscriber: no command timeout) are applied last.
 *
 * ioredis reports connection problems as 'error' events, and an 'error' event without a listener ends the
 * process: attach one to the result (and to each `duplicate()`).
 */
export function openRedis(url: string, overrides: RedisOptions = {}): Redis {
  return new Redis(url, {
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 3,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 2_000),
    ...overrides,
  });
}

/** What traces a Redis client's commands (src/tracing.ts), when traces are on. */
export interface RedisTracing {
  redis(client: Redis): void;
}

/** Resolves when Redis answers PING within `timeoutMs`; rejects otherwise. */
export async function pingRedis(redis: Redis, timeoutMs: number): Promise<void> {
  await withDeadline(redis.ping(), timeoutMs, () => new Error(`Redis did not answer PING within ${timeoutMs} ms`));
}
