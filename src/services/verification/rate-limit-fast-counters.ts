import { IN_LIST_CHUNK } from '../../store/store.ts';
import { CLOCK_SKEW_MS, type Counters } from './rate-limit-counters.ts';

/**
 * The `fast` mode of the rate limiter (see rate-limiter.ts): decisions on this node with no I/O on the
 * request path, from `last known shared count + increments not yet synced`, and the sync that pushes
 * those increments to the shared counters and pulls back their totals.
 */

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
export class FastCounters {
  readonly #counters: Counters;
  readonly #buckets = new Map<string, FastBucket>();
  /** Syncs are serialized: each starts after the previous one ends. */
  #chain: Promise<void> = Promise.resolve();
  #queued = 0;
  #dropped = 0;

  readonly #maxBuckets: number;

  /**
   * `maxBuckets` bounds the memory of fast mode whatever identifiers, limits and windows callers choose (a
   * bucket lives until its window ends, up to 366 days): a request for a bucket beyond it is not decided here
   * (`decide` answers undefined) and the limiter decides it on the shared counter instead, exactly.
   */
  constructor(counters: Counters, maxBuckets = 100_000) {
    this.#counters = counters;
    this.#maxBuckets = maxBuckets;
  }

  /**
   * Increments admitted here and never pushed: their window had ended (CLOCK_SKEW_MS ago) while the shared
   * counter was unreachable. Pushed then, they could no longer change any decision, so they are let go.
   */
  get dropped(): number {
    return this.#dropped;
  }

  /** Buckets held (at most `maxBuckets`). */
  get size(): number {
    return this.#buckets.size;
  }

  /** No sync running or queued. */
  get idle(): boolean {
    return this.#queued === 0;
  }

  /**
   * Synchronous, so decisions on one node are exact: nothing interleaves between reading and adding. Undefined
   * when the bucket is new and `maxBuckets` are held: the caller decides it on the shared counter.
   */
  decide(bucket: string, cost: number, limit: number, reset: number): { passed: boolean; count: number } | undefined {
    let b = this.#buckets.get(bucket);
    if (!b) {
      if (this.#buckets.size >= this.#maxBuckets) return undefined;
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
    const run = this.#chain
      .then(() => this.#syncOnce())
      .finally(() => {
        this.#queued--;
      });
    this.#chain = run.catch(() => {});
    return run;
  }

  async #syncOnce(): Promise<void> {
    const now = Date.now();
    const pushes: Array<{ bucket: string; b: FastBucket; add: number }> = [];
    const pulls: Array<{ bucket: string; b: FastBucket }> = [];
    for (const [bucket, b] of this.#buckets) {
      if (b.reset + CLOCK_SKEW_MS < now && b.inflight === 0) {
        // Its window is over: what it admitted was pushed, or can no longer matter (counted, then let go).
        this.#dropped += b.pending;
        this.#buckets.delete(bucket);
      } else if (b.pending > 0) {
        pushes.push({ bucket, b, add: b.pending });
        b.inflight += b.pending;
        b.pending = 0;
        b.touched = false;
      } else if (b.touched) {
        pulls.push({ bucket, b });
        b.touched = false;
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
