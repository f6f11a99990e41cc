import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import type { Database } from '../../store/schema.ts';
import { IN_LIST_CHUNK } from '../../store/store.ts';
import { CoalescedCounter } from './coalesced-counter.ts';

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
 *   concurrent cost-1 requests on a fresh window pass exactly min(N, limit) times. Errors (store/Redis
 *   down) reject the `check` promise: callers fail closed.
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
export interface LimitResult { passed: boolean; limit: number; remaining: number; reset: number }

export interface RateLimiter {
  /** Decides every request; results are in the same order as `requests`. */
  check(requests: LimitRequest[], now?: number): Promise<LimitResult[]>;
  /** Stops timers and flushes pending fast-mode counts (rejects if that last flush fails). */
  close(): Promise<void>;
}

/** The limiter as built: also lets its owner (tests, shutdown code) run a fast-mode sync now. */
export interface SyncingRateLimiter extends RateLimiter {
  /** Pushes pending fast-mode increments and pulls the totals of recently used buckets, now. */
  sync(): Promise<void>;
}

export interface RateLimiterOptions {
  db: Kysely<Database>;
  redis?: Redis;
  /** How often fast-mode counts are synced with the shared counter (ms, default 250). */
  syncIntervalMs?: number;
  /** Background failures (sync, expired-counter cleanup); they are retried, never thrown. */
  onError?: (err: unknown) => void;
}

/** How long a counter outlives its window, to tolerate clocks of different nodes disagreeing. */
export const CLOCK_SKEW_MS = 10_000;
/** How often expired store counters are deleted. */
export const CLEANUP_INTERVAL_MS = 60_000;
/** Prefix of every Redis key of the limiter. */
export const REDIS_KEY_PREFIX = 'keyhold:rl:';

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
  const fast = new FastCounters(counters);
  const consistent = new CoalescedCounter<number>(1);
  /**
   * A consistent decision; concurrent ones of one counter share an operation. Cost 0 only reads, and a cost
   * above the limit can never fit: neither changes the counter, so neither waits to be batched (their
   * `remaining` may then be from before the changes batched in the same turn).
   */
  const decideConsistent = async (bucket: string, cost: number, limit: number, reset: number): Promise<{ passed: boolean; count: number }> => {
    if (cost === 0 || cost > limit) return counters.addIfFits(bucket, cost, limit, reset);
    const outcome = await consistent.change(bucket, cost, async (amount) => {
      // A batch summing to more than the limit cannot fit: its members are then decided one by one.
      if (amount > limit) return { applied: false, value: 0 };
      const { passed, count } = await counters.addIfFits(bucket, amount, limit, reset);
      return { applied: passed, value: count } as const;
    });
    return { passed: outcome.applied, count: outcome.value };
  };
  const onError = opts.onError ?? (() => {});
  const syncIntervalMs = opts.syncIntervalMs ?? 250;
  if (!(syncIntervalMs > 0)) throw new RangeError(`syncIntervalMs must be > 0, got ${syncIntervalMs}`);

  let closed = false;
  const syncTimer = setInterval(() => {
    if (!fast.idle) return; // the previous sync is still running: let it finish
    fast.sync().catch(onError);
  }, syncIntervalMs);
  syncTimer.unref();
  // Runs even with Redis: it clears rows left from before Redis was configured (a cheap no-op otherwise).
  const cleanupTimer = setInterval(() => {
    deleteExpiredRatelimitCounters(opts.db, Date.now() - CLOCK_SKEW_MS).catch(onError);
  }, CLEANUP_INTERVAL_MS);
  cleanupTimer.unref();

  return {
    async check(requests, now = Date.now()) {
      if (closed) throw new Error('the rate limiter is closed');
      // Validate every request first, so an invalid batch consumes nothing.
      for (const r of requests) validate(r);
      if (!Number.isFinite(now)) throw new RangeError(`now must be a finite epoch ms, got ${now}`);
      return Promise.all(requests.map(async (r): Promise<LimitResult> => {
        const window = Math.floor(now / r.duration);
        const reset = (window + 1) * r.duration;
        const bucket = counterBucket(r.identifier, r.name, r.limit, r.duration, window);
        const { passed, count } = r.type === 'consistent'
          ? await decideConsistent(bucket, r.cost, r.limit, reset)
          : fast.decide(bucket, r.cost, r.limit, reset);
        return { passed, limit: r.limit, remaining: Math.max(0, r.limit - count), reset };
      }));
    },
    sync: () => fast.sync(),
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(syncTimer);
      clearInterval(cleanupTimer);
      await fast.sync();
    },
  };
}

function validate(r: LimitRequest): void {
  if (typeof r.identifier !== 'string' || typeof r.name !== 'string') throw new TypeError('identifier and name must be strings');
  if (!Number.isSafeInteger(r.limit) || r.limit < 0) throw new RangeError(`limit must be an integer >= 0, got ${r.limit}`);
  if (!Number.isSafeInteger(r.duration) || r.duration < 1000) throw new RangeError(`duration must be an integer >= 1000 (ms), got ${r.duration}`);
  if (!Number.isSafeInteger(r.cost) || r.cost < 0) throw new RangeError(`cost must be an integer >= 0, got ${r.cost}`);
  if (r.type !== 'fast' && r.type !== 'consistent') throw new RangeError(`type must be "fast" or "consistent", got ${String(r.type)}`);
}

/** A shared counter store: Redis or the database. */
interface Counters {
  /** Atomically: adds `cost` iff `count + cost <= limit`. `count` is the value after the call. */
  addIfFits(bucket: string, cost: number, limit: number, reset: number): Promise<{ passed: boolean; count: number }>;
  /** Adds every item's `add` (> 0) unconditionally, all or nothing (at most IN_LIST_CHUNK items); returns the totals. */
  add(items: Array<{ bucket: string; add: number; reset: number }>): Promise<Map<string, number>>;
  /** The totals of these buckets (0 when absent). */
  read(buckets: string[]): Promise<Map<string, number>>;
}

function storeCounters(db: Kysely<Database>): Counters {
  const read = async (bucket: string): Promise<number> => {
    const row = await db.selectFrom('ratelimit_counters').select('count').where('bucket', '=', bucket).executeTakeFirst();
    return row ? Number(row.count) : 0;
  };
  return {
    async addIfFits(bucket, cost, limit, reset) {
      if (cost === 0 || cost > limit) {
        // Nothing to add (cost 0), or it cannot fit even an empty window: decide on a read.
        const count = await read(bucket);
        return { passed: count + cost <= limit, count };
      }
      // cost <= limit, so a first insert always fits; a conflicting row is updated only if the sum fits.
      // On PostgreSQL the row lock (the WHERE is re-checked against the latest row version), on SQLite the
      // single writer, make this exact under any concurrency.
      const row = await db.insertInto('ratelimit_counters')
        .values({ bucket, count: cost, expires_at: reset })
        .onConflict((oc) => oc.column('bucket')
          .doUpdateSet({ count: sql<number>`ratelimit_counters.count + excluded.count` })
          .where(sql<boolean>`ratelimit_counters.count + excluded.count <= ${limit}`))
        .returning('count')
        .executeTakeFirst();
      if (row) return { passed: true, count: Number(row.count) };
      return { passed: false, count: await read(bucket) };
    },
    async add(items) {
      // One statement. Sorted, so concurrent multi-row upserts of several nodes lock rows in the same
      // order (no deadlock on PostgreSQL).
      const sorted = [...items].sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : 0));
      const rows = await db.insertInto('ratelimit_counters')
        .values(sorted.map((a) => ({ bucket: a.bucket, count: a.add, expires_at: a.reset })))
        .onConflict((oc) => oc.column('bucket').doUpdateSet({ count: sql<number>`ratelimit_counters.count + excluded.count` }))
        .returning(['bucket', 'count'])
        .execute();
      return new Map(rows.map((r) => [r.bucket, Number(r.count)]));
    },
    async read(buckets) {
      const rows = await db.selectFrom('ratelimit_counters').select(['bucket', 'count']).where('bucket', 'in', buckets).execute();
      const totals = new Map(buckets.map((b) => [b, 0]));
      for (const r of rows) totals.set(r.bucket, Number(r.count));
      return totals;
    },
  };
}

interface Script { lua: string; sha: string }
const script = (lua: string): Script => ({ lua, sha: createHash('sha1').update(lua).digest('hex') });

/** KEYS[1] counter; ARGV cost, limit, expire-at (epoch ms). Returns {passed 0|1, count after}. */
const ADD_IF_FITS = script(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local cost = tonumber(ARGV[1])
if count + cost > tonumber(ARGV[2]) then return {0, count} end
if cost > 0 then
  count = redis.call('INCRBY', KEYS[1], cost)
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
return {1, count}
`);

/** KEYS counters; ARGV (add, expire-at) per key. Returns the totals. */
const ADD = script(`
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('INCRBY', key, ARGV[2 * i - 1])
  redis.call('PEXPIREAT', key, ARGV[2 * i])
end
return out
`);

/** EVALSHA, falling back to EVAL (which caches the script) when Redis does not know it yet. */
async function run(redis: Redis, s: Script, keys: string[], args: Array<string | number>): Promise<unknown> {
  try {
    return await redis.evalsha(s.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!String((err as Error)?.message).startsWith('NOSCRIPT')) throw err;
    return redis.eval(s.lua, keys.length, ...keys, ...args);
  }
}

function redisCounters(redis: Redis): Counters {
  return {
    async addIfFits(bucket, cost, limit, reset) {
      const [passed, count] = await run(redis, ADD_IF_FITS, [REDIS_KEY_PREFIX + bucket], [cost, limit, reset + CLOCK_SKEW_MS]) as [number, number];
      return { passed: passed === 1, count: Number(count) };
    },
    async add(items) {
      const out = await run(redis, ADD, items.map((c) => REDIS_KEY_PREFIX + c.bucket),
        items.flatMap((c) => [c.add, c.reset + CLOCK_SKEW_MS])) as number[];
      return new Map(items.map((c, j) => [c.bucket, Number(out[j])]));
    },
    async read(buckets) {
      const out = await redis.mget(buckets.map((b) => REDIS_KEY_PREFIX + b));
      return new Map(buckets.map((b, j) => [b, Number(out[j] ?? 0)]));
    },
  };
}

interface FastBucket {
  reset: number;
  /** The shared counter's total at the last sync (it includes what this node pushed before). */
  known: number;
  /** Admitted here, not yet pushed. */
  pending: number;
  /** Being pushed by the running sync. */
  inflight: number;
  /** Checked since the last sync: pull its total even with nothing to push. */
  touched: boolean;
}

/** Node-local fast-mode state and its background sync with the shared counters. */
class FastCounters {
  readonly #counters: Counters;
  readonly #buckets = new Map<string, FastBucket>();
  /** Syncs are serialized: each starts after the previous one ends. */
  #chain: Promise<void> = Promise.resolve();
  #queued = 0;

  constructor(counters: Counters) {
    this.#counters = counters;
  }

  /** No sync running or queued. */
  get idle(): boolean { return this.#queued === 0; }

  /** Synchronous, so decisions on one node are exact: nothing interleaves between reading and adding. */
  decide(bucket: string, cost: number, limit: number, reset: number): { passed: boolean; count: number } {
    let b = this.#buckets.get(bucket);
    if (!b) {
      b = { reset, known: 0, pending: 0, inflight: 0, touched: true };
      this.#buckets.set(bucket, b);
    }
    b.touched = true;
    const count = b.known + b.pending + b.inflight;
    if (count + cost > limit) return { passed: false, count };
    b.pending += cost;
    return { passed: true, count: count + cost };
  }

  sync(): Promise<void> {
    this.#queued++;
    const run = this.#chain.then(() => this.#syncOnce()).finally(() => { this.#queued--; });
    this.#chain = run.catch(() => {});
    return run;
  }

  async #syncOnce(): Promise<void> {
    const now = Date.now();
    const pushes: Array<{ bucket: string; b: FastBucket; add: number }> = [];
    const pulls: Array<{ bucket: string; b: FastBucket }> = [];
    for (const [bucket, b] of this.#buckets) {
      if (b.pending > 0) {
        pushes.push({ bucket, b, add: b.pending });
        b.inflight += b.pending;
        b.pending = 0;
        b.touched = false;
      } else if (b.touched) {
        pulls.push({ bucket, b });
        b.touched = false;
      } else if (b.reset + CLOCK_SKEW_MS < now && b.inflight === 0) {
        this.#buckets.delete(bucket); // its window is over and everything it admitted was pushed
      }
    }
    // Each push chunk is all or nothing, so a failed chunk goes back to pending (the next sync pushes it)
    // without pushing the others twice. The first error is reported after every chunk was tried.
    let failure: unknown;
    for (let i = 0; i < pushes.length; i += IN_LIST_CHUNK) {
      const chunk = pushes.slice(i, i + IN_LIST_CHUNK);
      try {
        const totals = await this.#counters.add(chunk.map(({ bucket, b, add }) => ({ bucket, add, reset: b.reset })));
        for (const { bucket, b, add } of chunk) {
          b.inflight -= add;
          b.known = totals.get(bucket) ?? b.known;
        }
      } catch (err) {
        for (const { b, add } of chunk) {
          b.inflight -= add;
          b.pending += add;
        }
        failure ??= err;
      }
    }
    for (let i = 0; i < pulls.length; i += IN_LIST_CHUNK) {
      const chunk = pulls.slice(i, i + IN_LIST_CHUNK);
      try {
        const totals = await this.#counters.read(chunk.map((p) => p.bucket));
        // Counters only grow within a window: a lower total (a counter lost in Redis) never lowers what we know.
        for (const { bucket, b } of chunk) b.known = Math.max(b.known, totals.get(bucket) ?? 0);
      } catch (err) {
        for (const { b } of chunk) b.touched = true;
        failure ??= err;
      }
    }
    if (failure !== undefined) throw failure;
  }
}
