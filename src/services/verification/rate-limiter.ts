import type { Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import type { Database } from '../../store/schema.ts';
import { CoalescedCounter } from './coalesced-counter.ts';
import { CLOCK_SKEW_MS, type Counters } from './rate-limit-counters.ts';
import { FastCounters } from './rate-limit-fast-counters.ts';
import { redisCounters } from './rate-limit-redis-counters.ts';
import { storeCounters } from './rate-limit-store-counters.ts';
import { withStoreFallback } from './rate-limit-failover.ts';
import type { AvailabilityListener } from '../../store/availability.ts';

/**
 * Fixed-window rate limiting for key verification.
 *
 * Window: `window = floor(now / duration)`, `reset = (window + 1) * duration` (epoch ms, the window's end).
 * Every (identifier, name, limit, duration, window) has its own counter, so a changed limit or duration
 * starts a fresh counter. A request passes iff `count + cost <= limit`, and then adds `cost`; a rejected
 * request adds nothing. `cost: 0` never consumes; it passes iff `count <= limit` and reports the state.
 * `remaining = max(0, limit - count after the call)`.
 *
 * Shared counters live in Redis when one is given (keys `keyhold:rl:<bucket>`, expiring at the window's
 * end plus CLOCK_SKEW_MS), otherwise in the store's `ratelimit_counters` (rows deleted in the background
 * once CLOCK_SKEW_MS past their window's end).
 *
 * Guarantees:
 * - `consistent`: each decision is made by ONE atomic operation on the shared counter (a Lua script in
 *   Redis; one guarded `INSERT … ON CONFLICT DO UPDATE … WHERE count + cost <= limit RETURNING count` in
 *   the store, the same statement on SQLite and PostgreSQL). Concurrent checks of one counter on one node
 *   share one operation for their summed cost, deciding exactly as one operation each in call order
 *   (CoalescedCounter). Exact under any concurrency and any number of processes: in one window the costs
 *   of passed requests never sum to more than `limit` (unless `fast` checks of the same limit add to the
 *   same counter), and a request is rejected only if `count + cost > limit` when it is decided; N
 *   concurrent cost-1 requests on a fresh window pass exactly min(N, limit) times. While Redis is
 *   unavailable, decisions are made on the store's counters instead (rate-limit-failover.ts: a window
 *   spanning the switch may admit up to twice its limit). Store errors reject the `check` promise: callers
 *   fail closed.
 * - `fast`: decided on this node with no I/O on the request path, from
 *   `last known shared count + increments not yet synced`. Every `syncIntervalMs` (default 250) the node
 *   adds its pending increments to the shared counter (unconditionally) and reads back the totals of the
 *   buckets it used since the previous sync. Exact on one node. Across nodes it is approximate: a node
 *   learns of the others' traffic at its next sync, so each node can over-admit by at most about one sync
 *   interval of its own traffic on that bucket (a node meeting a bucket for the first time, or again after
 *   being idle on it, decides from 0 / from what it last knew until that sync). Nothing admitted is
 *   forgotten: a failed sync puts the increments back and the next one retries; `close()` flushes.
 * - Requests of one `check` call are decided independently and concurrently (not all-or-nothing): a
 *   passed request keeps its cost even when another request of the same call is rejected.
 * - Windows come from the caller's clock (`now`, default `Date.now()`); nodes are expected to run NTP.
 *   Counters are kept CLOCK_SKEW_MS past their window's end so a node whose clock is a little ahead
 *   cannot delete a counter another node still uses.
 */

export interface LimitRequest {
  /** Identity id, or key id when the key has no identity. */
  identifier: string;
  /** The limit's name, e.g. "default". */
  name: string;
  /** Max cost per window (>= 0; 0 always rejects a cost > 0). */
  limit: number;
  /** Window length in ms (>= 1000). */
  duration: number;
  /** >= 0; cost 0 never consumes, only reports. */
  cost: number;
  type: 'fast' | 'consistent';
}

/** `reset` = end of the window, epoch ms. */
export interface LimitResult {
  passed: boolean;
  limit: number;
  remaining: number;
  reset: number;
}

export interface RateLimiter {
  /** Decides every request; results are in the same order as `requests`. */
  check(requests: LimitRequest[], now?: number): Promise<LimitResult[]>;
  /**
   * One `fast` request decided in memory at once, as `check` would decide it (no I/O, no promise: the hot
   * path of an `async` ratelimits.limit); undefined when `check` must decide it (a `consistent` request, or
   * a new bucket beyond the fast buckets held). Throws as `check` rejects.
   */
  checkInMemory(request: LimitRequest, now: number): LimitResult | undefined;
  /** Stops timers and flushes pending fast-mode counts (rejects if that last flush fails). */
  close(): Promise<void>;
}

/** The limiter as built: also lets its owner (tests, shutdown code) run a fast-mode sync now. */
export interface SyncingRateLimiter extends RateLimiter {
  /** Pushes pending fast-mode increments and pulls the totals of recently used buckets, now. */
  sync(): Promise<void>;
  /** Fast-mode increments never pushed: their window ended while the shared counter was unreachable (FastCounters.dropped). */
  readonly droppedFastIncrements: number;
  /** Fast-mode buckets held in memory (at most `maxFastBuckets`). */
  readonly fastBuckets: number;
}

export interface RateLimiterOptions {
  db: Kysely<Database>;
  redis?: Redis;
  /** How often fast-mode counts are synced with the shared counter (ms, default 250). */
  syncIntervalMs?: number;
  /** Fast-mode counters held in memory (default 100 000); requests for more are decided as `consistent`. */
  maxFastBuckets?: number;
  /** Told the outcome of every Redis call of a consistent decision (for the process' dependency health). */
  redisAvailability?: AvailabilityListener;
  /** Background failures (sync, expired-counter cleanup); they are retried, never thrown. */
  onError?: (err: unknown) => void;
}

/** How often expired store counters are deleted. */
export const CLEANUP_INTERVAL_MS = 60_000;

/**
 * The counter's name: identifier, name, limit, duration and window. Identifier and name are
 * percent-encoded, so `:` separates the parts unambiguously whatever they contain.
 */
export function counterBucket(identifier: string, name: string, limit: number, duration: number, window: number): string {
  return `${encodeURIComponent(identifier)}:${encodeURIComponent(name)}:${limit}:${duration}:${window}`;
}

/** Deletes store counters whose window ended before `before` (epoch ms); returns how many. */
export async function deleteExpiredRatelimitCounters(db: Kysely<Database>, before: number): Promise<number> {
  const res = await db.deleteFrom('ratelimit_counters').where('expires_at', '<', before).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/**
 * A limiter with shared counters in `redis` when given, else in `db`. It starts two unref'd timers (fast-mode
 * sync every `syncIntervalMs`, expired-counter cleanup every minute); `close()` stops them. It never closes
 * `db` or `redis`: their owner does, after `close()`.
 */
export function createRateLimiter(opts: RateLimiterOptions): SyncingRateLimiter {
  const counters = opts.redis ? redisCounters(opts.redis) : storeCounters(opts.db);
  const failover = opts.redis ? withStoreFallback(opts.redis, counters, storeCounters(opts.db), opts.redisAvailability) : undefined;
  const fast = new FastCounters(counters, opts.maxFastBuckets);
  const decideConsistent = consistentDecider(failover ?? counters);
  const onError = opts.onError ?? (() => {});
  const syncIntervalMs = opts.syncIntervalMs ?? 250;
  if (!(syncIntervalMs > 0)) throw new RangeError(`syncIntervalMs must be > 0, got ${syncIntervalMs}`);

  let closed = false;
  const stopTimers = startTimers(opts.db, fast, syncIntervalMs, onError);

  return {
    async check(requests, now = Date.now()) {
      if (closed) throw new Error('the rate limiter is closed');
      // Validate every request first, so an invalid batch consumes nothing.
      for (const r of requests) validate(r);
      if (!Number.isFinite(now)) throw new RangeError(`now must be a finite epoch ms, got ${now}`);
      return Promise.all(
        requests.map(async (r): Promise<LimitResult> => {
          const window = Math.floor(now / r.duration);
          const reset = (window + 1) * r.duration;
          const bucket = counterBucket(r.identifier, r.name, r.limit, r.duration, window);
          const inMemory = r.type === 'fast' ? fast.decide(bucket, r.cost, r.limit, reset) : undefined;
          const { passed, count } = inMemory ?? (await decideConsistent(bucket, r.cost, r.limit, reset));
          return { passed, limit: r.limit, remaining: Math.max(0, r.limit - count), reset };
        }),
      );
    },
    checkInMemory(r, now) {
      if (closed) throw new Error('the rate limiter is closed');
      if (r.type !== 'fast') return undefined;
      validate(r);
      if (!Number.isFinite(now)) throw new RangeError(`now must be a finite epoch ms, got ${now}`);
      const window = Math.floor(now / r.duration);
      const reset = (window + 1) * r.duration;
      const decided = fast.decide(counterBucket(r.identifier, r.name, r.limit, r.duration, window), r.cost, r.limit, reset);
      return decided && { passed: decided.passed, limit: r.limit, remaining: Math.max(0, r.limit - decided.count), reset };
    },
    sync: () => fast.sync(),
    get droppedFastIncrements() {
      return fast.dropped;
    },
    get fastBuckets() {
      return fast.size;
    },
    async close() {
      if (closed) return;
      closed = true;
      stopTimers();
      failover?.close();
      await fast.sync();
    },
  };
}

type Decision = { passed: boolean; count: number };

/**
 * Consistent decisions on `counters`; concurrent ones of one counter share an operation. Cost 0 only reads,
 * and a cost above the limit can never fit: neither changes the counter, so neither waits to be batched
 * (their `remaining` may then be from before the changes batched in the same turn).
 */
function consistentDecider(
  counters: Pick<Counters, 'addIfFits'>,
): (bucket: string, cost: number, limit: number, reset: number) => Promise<Decision> {
  const consistent = new CoalescedCounter<number>(1);
  return async (bucket, cost, limit, reset) => {
    if (cost === 0 || cost > limit) return counters.addIfFits(bucket, cost, limit, reset);
    const outcome = await consistent.change(bucket, cost, async (amount) => {
      // A batch summing to more than the limit cannot fit: its members are then decided one by one.
      if (amount > limit) return { applied: false, value: 0 };
      const { passed, count } = await counters.addIfFits(bucket, amount, limit, reset);
      return { applied: passed, value: count } as const;
    });
    return { passed: outcome.applied, count: outcome.value };
  };
}

/** Starts the limiter's unref'd background timers (fast-mode sync, expired-counter cleanup); returns what stops them. */
function startTimers(db: Kysely<Database>, fast: FastCounters, syncIntervalMs: number, onError: (err: unknown) => void): () => void {
  const syncTimer = setInterval(() => {
    if (!fast.idle) return; // the previous sync is still running: let it finish
    fast.sync().catch(onError);
  }, syncIntervalMs);
  syncTimer.unref();
  // Runs even with Redis: it clears rows left from before Redis was configured (a cheap no-op otherwise).
  const cleanupTimer = setInterval(() => {
    deleteExpiredRatelimitCounters(db, Date.now() - CLOCK_SKEW_MS).catch(onError);
  }, CLEANUP_INTERVAL_MS);
  cleanupTimer.unref();
  return () => {
    clearInterval(syncTimer);
    clearInterval(cleanupTimer);
  };
}

function validate(r: LimitRequest): void {
  if (typeof r.identifier !== 'string' || typeof r.name !== 'string') throw new TypeError('identifier and name must be strings');
  if (!Number.isSafeInteger(r.limit) || r.limit < 0) throw new RangeError(`limit must be an integer >= 0, got ${r.limit}`);
  if (!Number.isSafeInteger(r.duration) || r.duration < 1000)
    throw new RangeError(`duration must be an integer >= 1000 (ms), got ${r.duration}`);
  if (!Number.isSafeInteger(r.cost) || r.cost < 0) throw new RangeError(`cost must be an integer >= 0, got ${r.cost}`);
  if (r.type !== 'fast' && r.type !== 'consistent') throw new RangeError(`type must be "fast" or "consistent", got ${String(r.type)}`);
}
