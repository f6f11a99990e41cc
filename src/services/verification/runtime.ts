import type { Redis } from 'ioredis';
import type { Store } from '../../store/store.ts';
import { openRedis, type RedisTracing } from '../../store/redis.ts';
import { isStoreUnavailable } from '../../store/errors.ts';
import type { AvailabilityListener } from '../../store/availability.ts';
import type { Notifications } from '../../store/dialects/postgres-notifications.ts';
import type { ChangeListener } from '../changes.ts';
import { startChangePropagation } from './change-listeners.ts';
import { refillDueKeys } from '../keys/credits.ts';
import { createRateLimiter, type RateLimiter } from './rate-limiter.ts';
import { VerificationRecorder } from './verification-recorder.ts';
import { KeyCache } from './key-cache.ts';
import { KeyRecordLoader } from './key-record.ts';
import { DependencyHealth, type Dependency } from '../dependency-health.ts';
import { checkReadiness, type ReadinessReport } from '../readiness.ts';
import { Verifier } from './verifier.ts';
import { NamespaceCache } from '../ratelimits/namespace-cache.ts';
import type { RatelimitContext } from '../ratelimits/limit.ts';
import { RatelimitRecorder } from '../ratelimits/ratelimit-recorder.ts';
import { ApiCache } from '../apis/api-cache.ts';

/** The part of a pino logger the runtime uses. */
export interface RuntimeLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface RuntimeOptions {
  redisUrl?: string;
  /** Where dependency outages (one line when one starts, one when it ends) and other background failures are reported. */
  logger?: RuntimeLogger;
  /** How often the change feed is polled (ms). */
  changePollMs?: number;
  /** How often due refills are swept (ms). */
  refillSweepMs?: number;
  /** Keys the verification cache holds at most (KEYHOLD_KEY_CACHE_SIZE). */
  keyCacheSize?: number;
  /** Capacities of the buffers that fill while the store or Redis is down; each has its default (tests use small ones). */
  capacities?: BufferCapacities;
  /** Caches made outside the runtime (the root-key guard's) that must hear of every change too. */
  caches?: ChangeListener[];
  /** Analytics recording: off records nothing; `region` of verification events (default on, `local`). */
  analytics?: { enabled: boolean; region: string };
  /** A span per Redis command (src/tracing.ts) when traces are on. */
  tracing?: RedisTracing;
  /** How long readiness waits for each dependency (ms; default READINESS_TIMEOUT_MS). */
  readinessTimeoutMs?: number;
}

/** How much each buffer that fills during an outage holds at most (docs/reliability.md). */
export interface BufferCapacities {
  /** Verification events: VERIFICATION_CAPACITY. */
  verifications?: number;
  /** Rate-limit check events: RATELIMIT_CAPACITY. */
  ratelimitDecisions?: number;
  /** Root keys whose last use waits for a write: ROOT_KEY_USAGE_CAPACITY (the RootKeyGuard's). */
  rootKeyUses?: number;
}

/** What one such buffer holds now, and the entries it dropped since the start because it was full. */
export interface BufferStats {
  held: number;
  dropped: number;
}

export interface Runtime {
  verifier: Verifier;
  cache: KeyCache;
  /** Live APIs, for keys.createKey. */
  apis: ApiCache;
  limiter: RateLimiter;
  recorder: VerificationRecorder;
  /** What ratelimits.limit decides with: the same limiter, the namespace cache and rate-limit analytics. */
  ratelimits: RatelimitContext;
  /**
   * Whether the store and Redis answered this process' last calls (for /metrics and readiness): every call to
   * the store, from requests and background loops alike, and every Redis call and connection event.
   */
  health: DependencyHealth;
  /** Checks the store and Redis now (GET /v1/readiness); throws 503 `store/unavailable` when the store does not answer. */
  readiness(): Promise<ReadinessReport>;
  /** PostgreSQL: the LISTEN connection that carries other processes' changes (undefined on SQLite). */
  notifications?: Notifications;
  /** The buffers that fill while a dependency is down, by the `what` of keyhold_dropped_total (read at scrape time). */
  buffers(): Record<string, BufferStats>;
  close(): Promise<void>;
}

/** What each dependency's outage means for this server, for the one log line that says it started. */
const OUTAGE_EFFECT: Record<Dependency, string> = {
  store: 'requests that need it are answered 503 store/unavailable until it returns',
  redis: "consistent rate limits decide on the store's counters and cache invalidation relies on the change feed until it returns",
};

/**
 * How long a dependency must go without a failed call before a successful one ends its outage. Without it, a
 * store that answers reads but not writes (SQLite locked by another process, a lock timeout) would start and
 * end an "outage" with every failed write. A success within that time ends the outage once it has passed.
 */
export const RECOVERY_QUIET_MS = 1_000;

/** Records a dependency's call outcomes in `health`, logging once when an outage starts and once when it ends. */
function availabilityReporter(health: DependencyHealth, dependency: Dependency, logger?: RuntimeLogger): AvailabilityListener {
  let lastFailure = Number.NEGATIVE_INFINITY;
  let deferred: NodeJS.Timeout | undefined;
  const up = (): void => {
    const now = Date.now();
    const quietFor = lastFailure + RECOVERY_QUIET_MS - now;
    if (quietFor > 0) {
      deferred ??= setTimeout(() => {
        deferred = undefined;
        up();
      }, quietFor).unref();
      return;
    }
    if (health.recordSuccess(dependency, now)) logger?.info({ dependency }, `${dependency} is available again`);
  };
  return {
    up,
    down(err) {
      lastFailure = Date.now();
      clearTimeout(deferred);
      deferred = undefined;
      if (health.recordError(dependency, lastFailure)) {
        logger?.warn(
          { dependency, err: (err as Error)?.message ?? String(err) },
          `${dependency} is unavailable: ${OUTAGE_EFFECT[dependency]}`,
        );
      }
    },
  };
}

/** A Redis client whose connection events and errors are recorded in `health`. */
function connectRedis(
  url: string,
  health: DependencyHealth,
  { logger, tracing }: RuntimeOptions,
): { redis: Redis; redisReport: AvailabilityListener } {
  const report = availabilityReporter(health, 'redis', logger);
  const redis = openRedis(url);
  tracing?.redis(redis);
  redis.on('error', (err: Error) => report.down(err));
  redis.on('ready', () => report.up());
  return { redis, redisReport: report };
}

/** The analytics recorders (verifications, ratelimits.limit decisions), flushing on their timers. */
function startRecorders(
  store: Store,
  opts: RuntimeOptions,
  warnUnlessOutage: (msg: string) => (err: unknown) => void,
): { recorder: VerificationRecorder; ratelimitRecorder: RatelimitRecorder } {
  const { db, caps } = store;
  const capacities = opts.capacities ?? {};
  const common = { dialect: caps.dialect, enabled: opts.analytics?.enabled ?? true, region: opts.analytics?.region };
  const recorder = new VerificationRecorder(db, {
    ...common,
    aside: store.writeAside,
    capacity: capacities.verifications,
    onError: warnUnlessOutage('analytics flush failed; events kept for the next flush'),
  });
  recorder.start();
  const ratelimitRecorder = new RatelimitRecorder(db, {
    ...common,
    capacity: capacities.ratelimitDecisions,
    onError: warnUnlessOutage('rate-limit analytics flush failed; events kept for the next flush'),
  });
  ratelimitRecorder.start();
  return { recorder, ratelimitRecorder };
}

/**
 * The verification machinery of one server: key cache and its invalidation (this process' commits at
 * once; other processes' pushed by PostgreSQL NOTIFY and by Redis pub/sub when configured, and the store's
 * change feed always),
 * rate limiter, analytics recorders (verifications, ratelimits.limit decisions), the namespace cache of
 * ratelimits.limit, and the refill sweep; and what the process knows of its dependencies.
 * Every loop here survives outages of the store and Redis and resumes when they return.
 */
export async function createRuntime(store: Store, opts: RuntimeOptions = {}): Promise<Runtime> {
  const { db } = store;
  const { logger } = opts;
  const health = new DependencyHealth();
  const stopObservingStore = store.onAvailability(availabilityReporter(health, 'store', logger));
  const warn = (msg: string) => (err: unknown) => logger?.warn({ err: (err as Error)?.message ?? String(err) }, msg);
  // Failures of the background loops while the store is unavailable are that outage's, logged once above.
  const warnUnlessOutage = (msg: string) => (err: unknown) => {
    if (!isStoreUnavailable(err)) warn(msg)(err);
  };
  const { redis, redisReport } = opts.redisUrl ? connectRedis(opts.redisUrl, health, opts) : {};
  const cache = new KeyCache({ maxEntries: opts.keyCacheSize });
  // Every cache of store state in this process: each change, from any source below, reaches all of them.
  const namespaces = new NamespaceCache();
  const apis = new ApiCache();
  const changes = await startChangePropagation(store, redis, [cache, namespaces, apis, ...(opts.caches ?? [])], opts.changePollMs);
  const limiter = createRateLimiter({ db, redis, redisAvailability: redisReport });
  const { recorder, ratelimitRecorder } = startRecorders(store, opts, warnUnlessOutage);
  const sweepFailed = warnUnlessOutage('refill sweep failed');
  const sweep = setInterval(() => {
    refillDueKeys(db, Date.now()).catch(sweepFailed);
  }, opts.refillSweepMs ?? 60_000).unref();

  return {
    verifier: new Verifier({ db, cache, records: new KeyRecordLoader(db, store.caps.dialect), limiter, recorder }),
    cache,
    apis,
    limiter,
    recorder,
    ratelimits: { db, limiter, namespaces, recorder: ratelimitRecorder },
    health,
    readiness: () => checkReadiness(store, { redis, redisReport, timeoutMs: opts.readinessTimeoutMs }),
    notifications: changes.notifications,
    buffers: () => ({
      verifications: { held: recorder.held, dropped: recorder.dropped },
      ratelimit_decisions: { held: ratelimitRecorder.held, dropped: ratelimitRecorder.dropped },
      fast_ratelimit_increments: { held: limiter.fastBuckets, dropped: limiter.droppedFastIncrements },
    }),
    async close() {
      clearInterval(sweep);
      await changes.stop();
      // The last flushes fail when a dependency is down: say what is lost, and close the rest anyway.
      await limiter.close().catch(warn('could not flush fast rate-limit counts on close; they are lost'));
      await recorder.close().catch(warn('could not flush analytics on close; they are lost'));
      await ratelimitRecorder.close().catch(warn('could not flush rate-limit analytics on close; they are lost'));
      stopObservingStore();
      redis?.disconnect();
    },
  };
}
