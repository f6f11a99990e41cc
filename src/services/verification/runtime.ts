import type { Redis } from 'ioredis';
import type { Store } from '../../store/store.ts';
import { openRedis } from '../../store/redis.ts';
import { changeBus, type Change, type ChangeListener } from '../changes.ts';
import { ChangeFeedPoller, RedisChangeBridge } from './change-listeners.ts';
import { refillDueKeys } from '../keys/credits.ts';
import { createRateLimiter, type RateLimiter } from './rate-limiter.ts';
import { VerificationRecorder } from './verification-recorder.ts';
import { KeyCache } from './key-cache.ts';
import { DependencyHealth } from '../dependency-health.ts';
import { Verifier } from './verifier.ts';

export interface RuntimeOptions {
  redisUrl?: string;
  /** Where background failures (Redis, analytics flushes, refill sweeps) are reported: the part of a pino logger used. */
  logger?: { warn(obj: object, msg: string): void };
  /** How often the change feed is polled (ms). */
  changePollMs?: number;
  /** How often due refills are swept (ms). */
  refillSweepMs?: number;
}

export interface Runtime {
  verifier: Verifier;
  cache: KeyCache;
  limiter: RateLimiter;
  recorder: VerificationRecorder;
  /** Whether the store and Redis answered this process' last calls (for /metrics and readiness). */
  health: DependencyHealth;
  close(): Promise<void>;
}

/**
 * The verification machinery of one server: key cache and its invalidation (this process' commits at
 * once; other processes' through Redis pub/sub when configured and the store's change feed always),
 * rate limiter, analytics recorder and the refill sweep.
 */
export async function createRuntime(store: Store, opts: RuntimeOptions = {}): Promise<Runtime> {
  const { db } = store;
  let redis: Redis | undefined;
  if (opts.redisUrl) {
    redis = openRedis(opts.redisUrl);
    redis.on('error', (err: Error) => opts.logger?.warn({ err: err.message }, 'redis error'));
  }
  const health = new DependencyHealth();
  const cache = new KeyCache();
  // Every cache of store state in this process: each change, from any source below, reaches all of them.
  const CACHES: ChangeListener[] = [cache];
  const invalidate = (changes: Change[]) => {
    for (const c of CACHES) c.invalidate(changes);
  };
  changeBus.on('committed', invalidate);
  const poller = new ChangeFeedPoller(db, invalidate, { intervalMs: opts.changePollMs });
  poller.start();
  const bridge = redis ? new RedisChangeBridge(redis, invalidate) : undefined;
  await bridge?.start();
  const limiter = createRateLimiter({ db, redis });
  const recorder = new VerificationRecorder(db, {
    onError: (err) => opts.logger?.warn({ err: (err as Error).message }, 'analytics flush failed; counts kept for the next flush'),
  });
  recorder.start();
  const sweep = setInterval(() => {
    refillDueKeys(db, Date.now()).catch((err: Error) => opts.logger?.warn({ err: err.message }, 'refill sweep failed'));
  }, opts.refillSweepMs ?? 60_000).unref();

  return {
    verifier: new Verifier({ db, cache, limiter, recorder }),
    cache,
    limiter,
    recorder,
    health,
    async close() {
      clearInterval(sweep);
      changeBus.off('committed', invalidate);
      await poller.stop();
      await bridge?.stop();
      await limiter.close();
      await recorder.close();
      redis?.disconnect();
    },
  };
}
