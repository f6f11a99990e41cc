export interface EventQueueOptions {
  /** How often the timer started by `start()` flushes; default 1000 ms (events are visible within 5 s). */
  flushIntervalMs?: number;
  /** Events queued after which a flush starts at once instead of waiting for the timer, and the most one transaction writes; default min(10 000, capacity / 2). */
  maxBatch?: number;
  /**
   * The most events held, queued and being written together (default: the recorder's). A full queue drops its
   * OLDEST event for each new one and counts it (`dropped`); a failed batch goes back in front of the queue and
   * is trimmed the same way.
   */
  capacity?: number;
  /** Called with the error of a flush that nobody awaits (timer, early flush); the events stay queued. */
  onError?: (err: unknown) => void;
}

/**
 * Where an EventQueue holds its events: appended one at a time, taken from the front in batches. A batch (B) is
 * what `write` is given: an array of the events (ArrayBacklog), or their columns (VerificationBacklog).
 */
export interface Backlog<E, B> {
  /** Events held. */
  readonly length: number;
  push(e: E): void;
  /** Forgets the oldest `n` (n <= length). */
  dropOldest(n: number): void;
  /** Removes the oldest `n` (n <= length) and returns them as one batch, oldest first. */
  take(n: number): B;
  /** Puts a batch that `take` returned back in front of the events held (it is older than all of them). */
  putBack(batch: B): void;
}

/**
 * The flushing machinery of the analytics recorders: a bounded queue of raw events that `record` appends to
 * synchronously (no I/O), and flushes that write it to the store in batches (`write`: ONE transaction, raw rows
 * and roll-ups together).
 *
 * A flush takes the whole queue and writes it. When the write fails, its events are put back in front of what
 * was recorded meanwhile (oldest first) and the flush rejects, so the next flush writes them: nothing is written
 * twice (but for a COMMIT whose acknowledgement was lost). After a failed flush, the next one first asks the
 * store something trivial (`probe`) and takes the queue only once it answers.
 *
 * Memory is bounded by `capacity` events, those being written included: beyond it the oldest queued event is
 * dropped and counted. Flushes run one at a time, in call order; `start()` flushes on a timer that does not keep
 * the process alive; `maxBatch` queued events start a flush at once (unless one runs or the last one failed);
 * `close()` stops the timer and flushes what is left.
 */
export abstract class EventQueue<E, B> {
  /** The queued events (not those a running flush is writing). */
  readonly #backlog: Backlog<E, B>;
  readonly #intervalMs: number;
  readonly #maxBatch: number;
  readonly #capacity: number;
  readonly #onError: (err: unknown) => void;
  #writing = 0;
  #dropped = 0;
  #tail: Promise<void> = Promise.resolve();
  #inFlight = 0;
  #failing = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(what: string, capacity: number, backlog: Backlog<E, B>, opts: EventQueueOptions = {}) {
    this.#backlog = backlog;
    this.#intervalMs = opts.flushIntervalMs ?? 1000;
    this.#capacity = opts.capacity ?? capacity;
    this.#maxBatch = opts.maxBatch ?? Math.max(1, Math.min(10_000, Math.ceil(this.#capacity / 2)));
    if (!(this.#capacity >= 1)) throw new RangeError(`${what}: capacity must be >= 1, got ${this.#capacity}`);
    this.#onError =
      opts.onError ??
      ((err) => process.emitWarning(`${what} flush failed; events kept for the next flush: ${(err as Error)?.message ?? err}`));
  }

  /** Asks the store something trivial, where a write would go; rejects when it does not answer. */
  protected abstract probe(): Promise<void>;

  /** Writes `batch` (oldest first) in one transaction; rejects (having written nothing) when the store fails. */
  protected abstract write(batch: B): Promise<void>;

  /** Queues one event: O(1), no I/O. A full queue drops its oldest event (counted in `dropped`). */
  protected enqueue(e: E): void {
    this.#backlog.push(e);
    if (this.#backlog.length + this.#writing > this.#capacity) this.#dropOldest(1);
    if (this.#backlog.length >= this.#maxBatch && this.#inFlight === 0 && !this.#failing) this.flush().catch(this.#onError);
  }

  #dropOldest(n: number): void {
    const k = Math.min(n, this.#backlog.length);
    this.#backlog.dropOldest(k);
    this.#dropped += k;
  }

  /** Events waiting for a flush (not those a running flush is writing). */
  get buffered(): number {
    return this.#backlog.length;
  }

  /** Events held: waiting, and being written by a running flush. At most `capacity`. */
  get held(): number {
    return this.buffered + this.#writing;
  }

  /** Events dropped since this recorder was made, because `capacity` were held (the oldest went). */
  get dropped(): number {
    return this.#dropped;
  }

  /** Writes everything queued so far, in transactions of at most `maxBatch` events; rejects (keeping the events) when the store fails. */
  flush(): Promise<void> {
    this.#inFlight++;
    const run = this.#tail
      .then(() => this.#flushQueued())
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
      if (this.#inFlight === 0 && this.buffered > 0) this.flush().catch(this.#onError);
    }, this.#intervalMs);
    this.#timer.unref();
  }

  /** Stops the timer and flushes what is left. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }

  /**
   * Writes what is queued, at most `maxBatch` events per transaction (oldest first): a backlog (a flush slower
   * than the events coming in, a store back from an outage) is written in bounded batches, so what one write
   * builds in memory (rows, roll-up maps, statement parameters) stays bounded too. Events queued meanwhile wait
   * for the next flush.
   */
  async #flushQueued(): Promise<void> {
    if (this.buffered === 0) return;
    if (this.#failing) await this.probe();
    for (let batches = Math.ceil(this.buffered / this.#maxBatch); batches > 0 && this.buffered > 0; batches--) {
      await this.#writeBatch();
    }
  }

  async #writeBatch(): Promise<void> {
    this.#writing = Math.min(this.#backlog.length, this.#maxBatch);
    const batch = this.#backlog.take(this.#writing);
    try {
      await this.write(batch);
      this.#failing = false;
    } catch (err) {
      // Back in front of what came meanwhile (less what was dropped meanwhile); the oldest go first when both do
      // not fit.
      this.#backlog.putBack(batch);
      this.#writing = 0;
      const over = this.#backlog.length - this.#capacity;
      if (over > 0) this.#dropOldest(over);
      this.#failing = true;
      throw err;
    } finally {
      this.#writing = 0;
    }
  }
}
