/**
 * The outcome of one guarded change of a counter: applied, with the value after it; or refused, with the
 * value then (`R` = number) or without it (`R` = undefined).
 */
export type GuardedOutcome<R extends number | undefined = number | undefined> =
  | { applied: true; value: number }
  | { applied: false; value: R };

/** One guarded statement: applies `amount` to the counter if the guard allows it (e.g. `remaining >= amount`). */
export type GuardedChange<R extends number | undefined> = (amount: number) => Promise<GuardedOutcome<R>>;

interface Waiting<R extends number | undefined> {
  amount: number;
  change: GuardedChange<R>;
  resolve(o: GuardedOutcome<R>): void;
  reject(err: unknown): void;
}

/**
 * Coalesces the guarded changes of one counter (a key's credits, a rate-limit window's count) that wait at
 * the same time into ONE guarded statement for their summed amount, with at most one statement per counter
 * in flight from this process. Without it, concurrent requests on one counter each send their own statement
 * on the same row: on PostgreSQL they queue on that row's lock and each pays a commit of its own; on SQLite
 * each pays a write; on Redis each pays a round trip.
 *
 * The outcome is exactly that of applying them one by one, in call order: when the summed amount is
 * allowed, the i-th change gets the value it would have seen had it run alone at that point of the order
 * (`value before + step × (amount 1 + … + amount i)`); when it is not, the waiting changes run one by one
 * (each its own statement), in call order, except that a change behind a refused one of no smaller amount
 * is refused without a statement (the guard refused as much at that moment, within its call), with the
 * value last reported (by the refused one, or by a change applied after it). The shared counter stays the
 * only authority (other processes' statements interleave between ours), so N changes of 1 against a bound
 * of R still pass exactly min(N, R) times. A failing statement rejects every change it carried.
 *
 * Changes called in one turn of the event loop wait for the end of that turn (`setImmediate`), so the
 * requests read from the sockets in the same turn share a statement; changes called while a counter's
 * statement is in flight go into the next one. A batch runs the statement of its first change: every
 * change of one counter must guard it the same way.
 */
export class CoalescedCounter<R extends number | undefined> {
  /** -1: changes take from the counter (credits); +1: they add to it (a rate-limit count). */
  readonly #step: 1 | -1;
  /** Changes waiting for their counter's next statement, in call order. */
  readonly #waiting = new Map<string, Array<Waiting<R>>>();
  /** Counters whose statements are running or scheduled. */
  readonly #active = new Set<string>();

  constructor(step: 1 | -1) {
    this.#step = step;
  }

  /** Applies `amount` (> 0) to the counter `key` through `change`, coalesced with the other changes of that counter waiting now. */
  change(key: string, amount: number, change: GuardedChange<R>): Promise<GuardedOutcome<R>> {
    return new Promise((resolve, reject) => {
      const waiting = this.#waiting.get(key);
      if (waiting) waiting.push({ amount, change, resolve, reject });
      else this.#waiting.set(key, [{ amount, change, resolve, reject }]);
      if (!this.#active.has(key)) {
        this.#active.add(key);
        setImmediate(() => void this.#drain(key));
      }
    });
  }

  async #drain(key: string): Promise<void> {
    for (let batch = this.#waiting.get(key); batch; batch = this.#waiting.get(key)) {
      this.#waiting.delete(key);
      await this.#run(batch);
    }
    this.#active.delete(key);
  }

  /** Never rejects: failures go to the changes concerned. */
  async #run(batch: Array<Waiting<R>>): Promise<void> {
    const total = batch.reduce((sum, w) => sum + w.amount, 0);
    if (batch.length > 1 && Number.isSafeInteger(total)) {
      let outcome: GuardedOutcome<R>;
      try {
        outcome = await batch[0].change(total);
      } catch (err) {
        for (const w of batch) w.reject(err);
        return;
      }
      if (outcome.applied) {
        let value = outcome.value - this.#step * total; // the counter before this statement
        for (const w of batch) {
          value += this.#step * w.amount;
          w.resolve({ applied: true, value });
        }
        return;
      }
      // Not allowed for all of them: decide each on its own, as if never coalesced.
    }
    let refused: { amount: number; value: R } | undefined;
    for (const w of batch) {
      if (refused && w.amount >= refused.amount) {
        w.resolve({ applied: false, value: refused.value });
        continue;
      }
      try {
        const outcome = await w.change(w.amount);
        if (!outcome.applied) refused = { amount: w.amount, value: outcome.value };
        // Where refusals report the counter, a later one reports it as this change left it.
        else if (refused?.value !== undefined) refused.value = outcome.value as R;
        w.resolve(outcome);
      } catch (err) {
        w.reject(err);
      }
    }
  }
}
