import type { Executor } from '../../store/store.ts';
import { decrementCreditsIfEnough } from '../credits.ts';

interface Spend { cost: number; resolve(left: number | null): void; reject(err: unknown): void }

/**
 * Spends the credits of verifications, coalescing the spends of one key that are waiting at the same time
 * into ONE guarded statement (`decrementCreditsIfEnough` with their summed cost), with at most one
 * statement per key in flight from this process. Without it, concurrent verifications of one key each
 * send their own UPDATE of the same row: on PostgreSQL they queue on that row's lock and each pays a
 * commit of its own; on SQLite each pays a write.
 *
 * The result is exactly that of spending them one by one, in call order: when the summed cost fits, the
 * i-th spend gets `remaining before - (cost 1 + … + cost i)`, the count it would have seen had it run
 * alone at that point of the order; when it does not fit, the waiting spends are run one by one (each its
 * own guarded statement), in call order, except that a spend behind a refused one of no greater cost is
 * refused without a statement (the count was below its cost at that moment, within its call). The store
 * stays the only authority (other processes' spends interleave between statements), so N spends of cost 1
 * on R credits still succeed exactly min(N, R) times. A failing statement rejects every spend it carried.
 *
 * Spends called in one turn of the event loop wait for the end of that turn (`setImmediate`), so
 * verifications read from the sockets in the same turn share a statement; spends called while a key's
 * statement is in flight go into the next one.
 */
export class CreditSpender {
  readonly #db: Executor;
  /** Spends waiting for their key's next statement, in call order. */
  readonly #waiting = new Map<string, Spend[]>();
  /** Keys whose statements are running or scheduled. */
  readonly #active = new Set<string>();

  constructor(db: Executor) { this.#db = db; }

  /** Takes `cost` (> 0) credits of a key if it has that many; resolves to what is left, or null when refused. */
  spend(keyId: string, cost: number): Promise<number | null> {
    return new Promise((resolve, reject) => {
      const waiting = this.#waiting.get(keyId);
      if (waiting) waiting.push({ cost, resolve, reject });
      else this.#waiting.set(keyId, [{ cost, resolve, reject }]);
      if (!this.#active.has(keyId)) {
        this.#active.add(keyId);
        setImmediate(() => void this.#drain(keyId));
      }
    });
  }

  async #drain(keyId: string): Promise<void> {
    for (let batch = this.#waiting.get(keyId); batch; batch = this.#waiting.get(keyId)) {
      this.#waiting.delete(keyId);
      await this.#run(keyId, batch);
    }
    this.#active.delete(keyId);
  }

  /** Never rejects: failures go to the spends concerned. */
  async #run(keyId: string, batch: Spend[]): Promise<void> {
    const total = batch.reduce((sum, s) => sum + s.cost, 0);
    if (batch.length > 1 && Number.isSafeInteger(total)) {
      let left: number | null;
      try {
        left = await decrementCreditsIfEnough(this.#db, keyId, total);
      } catch (err) {
        for (const s of batch) s.reject(err);
        return;
      }
      if (left !== null) {
        let remaining = left + total; // what the key had before this statement
        for (const s of batch) {
          remaining -= s.cost;
          s.resolve(remaining);
        }
        return;
      }
      // Not enough for all of them: decide each on its own, as if never coalesced.
    }
    // A spend waiting behind a refused one of no greater cost is refused at that same moment, with no statement:
    // the count was below its cost then, which is within its call.
    let refusedCost = Infinity;
    for (const s of batch) {
      if (s.cost >= refusedCost) {
        s.resolve(null);
        continue;
      }
      try {
        const left = await decrementCreditsIfEnough(this.#db, keyId, s.cost);
        if (left === null) refusedCost = s.cost;
        s.resolve(left);
      } catch (err) {
        s.reject(err);
      }
    }
  }
}
