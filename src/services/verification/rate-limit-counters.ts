/**
 * The shared counters of the rate limiter (see rate-limiter.ts): one per bucket, in Redis
 * (rate-limit-redis-counters.ts) or in the store (rate-limit-store-counters.ts).
 */

/** How long a counter outlives its window, to tolerate clocks of different nodes disagreeing. */
export const CLOCK_SKEW_MS = 10_000;

/** A shared counter store: Redis or the database. */
export interface Counters {
  /** Atomically: adds `cost` iff `count + cost <= limit`. `count` is the value after the call. */
  addIfFits(bucket: string, cost: number, limit: number, reset: number): Promise<{ passed: boolean; count: number }>;
  /** Adds every item's `add` (> 0) unconditionally, all or nothing (at most IN_LIST_CHUNK items); returns the totals. */
  add(items: Array<{ bucket: string; add: number; reset: number }>): Promise<Map<string, number>>;
  /** The totals of these buckets (0 when absent). */
  read(buckets: string[]): Promise<Map<string, number>>;
}
