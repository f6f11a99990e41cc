import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';

/**
 * Paces background writes that work through a backlog in steps (the retention pass's deletes, giving a
 * SQLite file's free pages back). Sizes the batches and the pauses between them. Each batch is one delete statement; it
 * should take about `targetMs`: the size halves after a batch that took longer and doubles after a full one
 * that took under half of it, between `min` and `max` rows. After each batch the pass rests `restFactor`
 * times as long as the batch took (at least `minRestMs`), so pruning takes at most 1 / (1 + restFactor) of
 * the writer: on SQLite, whose statements run on the event loop, that is the share of the process' time a
 * backlog of any size can take from requests.
 */
export interface PaceOptions {
  targetMs: number;
  restFactor: number;
  minRestMs: number;
  min: number;
  max: number;
}

/** SQLite: batches of ~1 ms with nine times as long between them (a request waits at most ~1 ms for one). */
export const EVENT_LOOP_PACE: PaceOptions = { targetMs: 1, restFactor: 9, minRestMs: 2, min: 20, max: 5_000 };
/** PostgreSQL: the statement runs in the database server; batches of ~50 ms, resting as long again. */
export const SERVER_PACE: PaceOptions = { targetMs: 50, restFactor: 1, minRestMs: 5, min: 100, max: 20_000 };

export class BatchPace {
  #size: number;
  readonly #o: PaceOptions;

  constructor(options: PaceOptions) {
    this.#o = options;
    this.#size = Math.min(options.max, Math.max(options.min, 200));
  }

  get size(): number {
    return this.#size;
  }

  /** Takes a finished batch into account; returns how long to rest before the next one (ms). */
  after(rows: number, ms: number): number {
    const o = this.#o;
    if (ms > o.targetMs) this.#size = Math.max(o.min, Math.floor(this.#size / 2));
    else if (ms < o.targetMs / 2 && rows === this.#size) this.#size = Math.min(o.max, this.#size * 2);
    return Math.max(o.minRestMs, ms * o.restFactor);
  }
}

/** One paced step's outcome: how many units (rows, pages) it did, and whether any are left. */
export interface StepResult {
  done: number;
  more: boolean;
}

/**
 * Works through a backlog: calls `step(size)` with the pace's current batch size, rests as the pace says after
 * each step, and ends when a step reports nothing more or `shouldStop` answers true (checked before each
 * step). Returns the units done.
 */
export async function runPaced(
  options: PaceOptions,
  shouldStop: () => boolean,
  step: (size: number) => Promise<StepResult>,
): Promise<number> {
  const pace = new BatchPace(options);
  let total = 0;
  while (!shouldStop()) {
    const started = performance.now();
    const { done, more } = await step(pace.size);
    total += done;
    if (!more) break;
    await sleep(pace.after(done, performance.now() - started));
  }
  return total;
}
