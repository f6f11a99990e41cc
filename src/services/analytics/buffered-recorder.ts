export interface RecorderOptions {
  /** How often the timer started by `start()` flushes; default 1000 ms. */
  flushIntervalMs?: number;
  /**
   * Distinct counters after which a flush starts at once instead of waiting for the timer; default half the
   * capacity (at most 100 000), so that a burst is written before it fills the capacity while the store answers.
   */
  maxBuffered?: number;
  /**
   * The most distinct counters held, buffered and being written together (default: the recorder's). While the
   * store fails they are kept for the next flush; once this many are held, an event that would add a counter is
   * dropped and counted (`dropped`), and events of counters already held are still counted.
   */
  capacity?: number;
  /** Called with the error of a flush that nobody awaits (timer, early flush); the counts stay buffered. */
  onError?: (err: unknown) => void;
}

/**
 * The flushing machinery of the analytics recorders (verification counts, rate-limit counts): a buffer of
 * counters that `record` fills synchronously, and flushes that write it to the store in batches.
 *
 * A flush swaps the buffer for an empty one and writes the old one (`write`, ONE transaction). When the
 * write fails, its counts are put back (`restore`, adding them to whatever was recorded meanwhile) and the
 * flush rejects, so the next flush writes them: nothing is lost and nothing is counted twice. (One window
 * remains, as with any client of a database: a COMMIT that succeeded but whose acknowledgement was lost is
 * retried and counted twice.)
 *
 * Flushes run one at a time, in call order. `start()` flushes on a timer that does not keep the process
 * alive (a tick is skipped while a flush runs); reaching `maxBuffered` distinct counters starts a flush at
 * once (unless one runs or the last one failed); `close()` stops the timer and flushes what is left.
 *
 * Memory is bounded by `capacity` counters, those of the batch being written included, so that a store outage
 * under load cannot grow the process without bound: a failed batch merged back never holds more than the two
 * did apart. Beyond it, what would be a new counter is dropped and counted; nothing held is ever dropped. After a
 * failed flush, the next one first asks the store something trivial where a write would go (`probe`) and takes
 * the buffer only once it answers, so that through an outage counts keep adding to the counters held instead
 * of needing new ones.
 *
 * A subclass asks `admit()` before adding a counter to `buffer` (and records nothing when it says no), and
 * calls `counted()` once for every counter it adds.
 */
export abstract class BufferedRecorder<B> {
  /** What `record` adds to; replaced by an empty one when a flush starts. */
  protected buffer: B;
  readonly #empty: () => B;
  readonly #intervalMs: number;
  readonly #maxBuffered: number;
  readonly #capacity: number;
  readonly #onError: (err: unknown) => void;
  /** Distinct counters in `buffer`. */
  #entries = 0;
  /** Distinct counters in the batch a flush is writing. */
  #writing = 0;
  #dropped = 0;
  /** The last flush queued; the next one starts after it settles. */
  #tail: Promise<void> = Promise.resolve();
  #inFlight = 0;
  #failing = false;
  #timer: NodeJS.Timeout | undefined;

  /** `what` names the counts in the default warning of a failed flush; `capacity` applies unless `opts` gives one. */
  constructor(empty: () => B, what: string, capacity: number, opts: RecorderOptions = {}) {
    this.#empty = empty;
    this.buffer = empty();
    this.#intervalMs = opts.flushIntervalMs ?? 1000;
    this.#capacity = opts.capacity ?? capacity;
    this.#maxBuffered = opts.maxBuffered ?? Math.min(100_000, Math.ceil(this.#capacity / 2));
    if (!(this.#capacity >= 1)) throw new RangeError(`${what}: capacity must be >= 1, got ${this.#capacity}`);
    this.#onError =
      opts.onError ??
      ((err) => process.emitWarning(`${what} flush failed; counts kept for the next flush: ${(err as Error)?.message ?? err}`));
  }

  /** Asks the store something trivial, where a write would go; rejects when it does not answer. */
  protected abstract probe(): Promise<void>;

  /** Writes `batch` in one transaction; rejects (having written nothing) when the store fails. */
  protected abstract write(batch: B): Promise<void>;

  /** Adds the counts of a failed `batch` back into `buffer`; returns how many counters that added to it. */
  protected abstract restore(batch: B): number;

  /** Whether a new counter fits within `capacity`; when it does not, the event is counted as dropped. */
  protected admit(): boolean {
    if (this.#entries + this.#writing < this.#capacity) return true;
    this.#dropped++;
    return false;
  }

  /** Notes one counter added to `buffer`; starts a flush when there are `maxBuffered` of them. */
  protected counted(): void {
    if (++this.#entries >= this.#maxBuffered && this.#inFlight === 0 && !this.#failing) this.flush().catch(this.#onError);
  }

  /** Distinct counters waiting for a flush (not those a running flush is writing). */
  get buffered(): number {
    return this.#entries;
  }

  /** Distinct counters held: waiting, and being written by a running flush. At most `capacity`. */
  get held(): number {
    return this.#entries + this.#writing;
  }

  /** Events dropped since this recorder was made, because `capacity` counters were held. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Writes everything buffered so far in one transaction; rejects (keeping the counts) when the store fails. */
  flush(): Promise<void> {
    this.#inFlight++;
    const run = this.#tail
      .then(() => this.#flushBuffered())
      .finally(() => {
        this.#inFlight--;
      });
    this.#tail = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  /** Flushes every `flushIntervalMs` (a timer that does not keep the process alive); a tick is skipped while a flush runs. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#inFlight === 0 && this.#entries > 0) this.flush().catch(this.#onError);
    }, this.#intervalMs);
    this.#timer.unref();
  }

  /** Stops the timer and flushes what is left. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }

  async #flushBuffered(): Promise<void> {
    if (this.#entries === 0) return;
    // After a failure, the buffer is taken only once the store answers: while a write waits for a store that is
    // down, counts of counters it holds would go to new counters in the next buffer, and fill the capacity twice.
    if (this.#failing) await this.probe();
    const batch = this.buffer;
    this.buffer = this.#empty();
    this.#writing = this.#entries;
    this.#entries = 0;
    try {
      await this.write(batch);
      this.#failing = false;
    } catch (err) {
      this.#entries += this.restore(batch);
      this.#failing = true;
      throw err;
    } finally {
      this.#writing = 0;
    }
  }
}
