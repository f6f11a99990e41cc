import type { Redis } from 'ioredis';
import { AppError } from '../domain/errors.ts';
import type { Store } from '../store/store.ts';
import type { AvailabilityListener } from '../store/availability.ts';
import { pingRedis } from '../store/redis.ts';
import { StoreUnavailableError } from '../store/errors.ts';

/** How long readiness waits for each dependency by default. */
export const READINESS_TIMEOUT_MS = 1_000;

/** What GET /v1/readiness answers when the server can serve. */
export interface ReadinessReport {
  /** `ready`: every dependency answered; `degraded`: Redis did not, and the server works on without it. */
  status: 'ready' | 'degraded';
  /** `redis` only when REDIS_URL is set; `oidc` (the sign-in provider's discovery) only when KEYHOLD_OIDC_ISSUER is. */
  checks: { store: 'up'; redis?: 'up' | 'down'; oidc?: 'up' | 'down' };
}

/** What readiness asks besides the store, and how long it waits for each. */
export interface ReadinessOptions {
  redis?: Redis;
  /** Told when Redis answers or does not (the runtime's availability report). */
  redisReport?: AvailabilityListener;
  /** ms; default READINESS_TIMEOUT_MS. */
  timeoutMs?: number;
}

/**
 * Asks the store (a trivial statement) and Redis when there is one (PING), at once, each within
 * `timeoutMs` (READINESS_TIMEOUT_MS). A store that does not answer throws 503 `store/unavailable`, naming what is down:
 * nothing but cached verifications works without it. Redis down is `degraded`, not unready: every server
 * of a cluster shares one Redis, and taking them all out of a load balancer for it would turn a degraded
 * service (consistent rate limits on the store's counters, invalidation through the change feed) into none.
 */
export async function checkReadiness(store: Store, opts: ReadinessOptions = {}): Promise<ReadinessReport> {
  const { redis, redisReport, timeoutMs = READINESS_TIMEOUT_MS } = opts;
  const [storeProblem, redisUp] = await Promise.all([
    // Our own errors name a deadline (no secret in them); any other (a connection refused or reset, none free in
    // PostgreSQL's pool within its connect timeout) is not shown to a caller without a key.
    store.ping(timeoutMs).then(
      () => undefined,
      (err: unknown) => (err instanceof StoreUnavailableError ? err.message : 'the store failed a trivial statement'),
    ),
    redis &&
      pingRedis(redis, timeoutMs).then(
        () => {
          redisReport?.up();
          return true;
        },
        (err: unknown) => {
          redisReport?.down(err);
          return false;
        },
      ),
  ]);
  const redisState = redisUp === undefined ? undefined : redisUp ? 'up' : 'down';
  if (storeProblem) {
    const others = redisState ? ` (redis: ${redisState})` : '';
    throw new AppError('store/unavailable', `Not ready: ${storeProblem}${others}`);
  }
  return {
    status: redisState === 'down' ? 'degraded' : 'ready',
    checks: redisState ? { store: 'up', redis: redisState } : { store: 'up' },
  };
}
