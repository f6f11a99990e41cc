import { Worker } from 'node:worker_threads';
import type { WriteAside } from '../../store/store.ts';
import type { PackedVerifications } from './packed-verifications.ts';
import { withOwnYoungGeneration } from './worker-young-generation.ts';

/**
 * How long a batch may take before the thread is given up (terminated, the batch kept for the next flush): the
 * store's writes wait while it writes, so a thread that never answered would hold them for ever. A batch of 10,000
 * events takes well under a second; waiting for another process' lock fails after the store's busy timeout. (A
 * batch that committed just as it was given up is written again, as one whose COMMIT's answer was lost would be.)
 */
const ANSWER_WITHIN_MS = 30_000;

/**
 * The writer thread's young generation (V8's semi-spaces and their reserve), MB. With many distinct keys, 4 MB had
 * more of each batch's rows promoted and cost about 7% more CPU; 8 MB costs none measurable and about 10 MB less
 * RSS than the server's 16 (docs/performance.md).
 */
const YOUNG_GENERATION_MB = 8;

type Answer = { ok: true } | { ok: false; message: string; errcode?: number };

/** A write of the analytics writer thread that failed: the store's error, as isStoreUnavailable reads it. */
export class AnalyticsWriteError extends Error {
  readonly errcode: number | undefined;
  constructor(message: string, errcode: number | undefined) {
    super(message);
    this.errcode = errcode;
  }
}

/**
 * SQLite on a file: the recorder's batches written by a worker thread (analytics-writer-worker.ts) on a connection
 * of its own, instead of by the thread that answers verifications (a raw row, its roll-ups and SQLite's work on
 * them were about a fifth of a cached verification's CPU). Each batch is written while the store's own writer
 * holds no lock (`aside`): the store's transactions wait their turn meanwhile, as they would behind a transaction
 * of this process, and the thread never waits for SQLite's lock. The worker starts on the first batch and is
 * started again after it failed.
 */
export class AnalyticsWriterThread {
  readonly #aside: WriteAside;
  readonly #region: string;
  #worker: Worker | undefined;

  readonly #answerWithinMs: number;

  constructor(aside: WriteAside, region: string, answerWithinMs = ANSWER_WITHIN_MS) {
    this.#aside = aside;
    this.#region = region;
    this.#answerWithinMs = answerWithinMs;
  }

  /** Writes `batch` in one transaction; rejects (having written nothing) when the store or the thread fails. */
  write(batch: PackedVerifications): Promise<void> {
    return this.#aside.run(() => this.#send(batch));
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }

  #send(packed: PackedVerifications): Promise<void> {
    const worker = this.#started();
    return new Promise((resolve, reject) => {
      const settle = (err?: Error) => {
        clearTimeout(timer);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        worker.unref(); // idle, it keeps no process alive
        if (err) reject(err);
        else resolve();
      };
      const onMessage = (answer: Answer) => settle(answer.ok ? undefined : new AnalyticsWriteError(answer.message, answer.errcode));
      const onError = (err: Error) => {
        this.#forget(worker);
        settle(err);
      };
      const onExit = () => {
        this.#forget(worker);
        settle(new Error('the analytics writer thread ended without an answer'));
      };
      const timer = setTimeout(() => {
        this.#forget(worker);
        void worker.terminate();
        settle(new Error(`the analytics writer thread did not answer within ${this.#answerWithinMs} ms`));
      }, this.#answerWithinMs);
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
      worker.ref(); // a write under way keeps the process alive until it is answered
      worker.postMessage({ batch: packed });
    });
  }

  #started(): Worker {
    if (!this.#worker) {
      const { path, busyTimeoutMs } = this.#aside;
      this.#worker = withOwnYoungGeneration(
        () =>
          new Worker(new URL('./analytics-writer-worker.ts', import.meta.url), {
            workerData: { path, busyTimeoutMs, region: this.#region },
            // Its garbage is a batch's rows, dead once written: a small young generation will do.
            resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
          }),
      );
    }
    return this.#worker;
  }

  #forget(worker: Worker): void {
    if (this.#worker === worker) this.#worker = undefined;
  }
}
