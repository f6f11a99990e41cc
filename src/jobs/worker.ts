import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import type { Store } from '../store/store.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import { JobQueue, type Outcome } from './job-queue.ts';
import { jobEvents, type Job, type TaskRegistry } from './queue.ts';

/** The part of a pino logger the worker uses. */
export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WorkerOptions {
  /** Names this worker's claims (`jobs.locked_by`); default `<host>:<pid>:<random>`. */
  id?: string;
  /** Jobs run at once. Default 4. */
  concurrency?: number;
  /** How often the queue is polled when idle (ms). Jobs enqueued by this process wake the worker at once. Default 1000. */
  pollMs?: number;
  /** How often a running job's lock is refreshed (ms). Default a third of the queue's visibility timeout. */
  heartbeatMs?: number;
  logger?: WorkerLogger;
  /** A span per job run (src/tracing.ts) when traces are on. */
  tracing?: JobTracing;
}

/** What traces a job run: `run` is the run, its result's outcome the span's. */
export interface JobTracing {
  job<T extends { outcome: string }>(job: Job, run: () => Promise<T>): Promise<T>;
}

export type WorkerStats = Record<Outcome, number>;

/**
 * Runs jobs from a queue: claims as many as it has free slots, runs them concurrently, and keeps going
 * while jobs are ready; otherwise it sleeps until the poll interval passes or this process enqueues a job.
 * It also recovers stale locks (jobs of dead workers) every half visibility timeout.
 * `stop()` stops claiming and resolves once the jobs in flight have finished.
 */
export class Worker {
  readonly id: string;
  readonly stats: WorkerStats = { completed: 0, retried: 0, failed: 0, lost: 0 };
  readonly #queue: JobQueue;
  readonly #concurrency: number;
  readonly #pollMs: number;
  readonly #heartbeatMs: number;
  readonly #logger?: WorkerLogger;
  readonly #tracing?: JobTracing;
  readonly #inflight = new Set<Promise<void>>();
  #loop?: Promise<void>;
  #stopping = false;
  #wake: () => void = () => {};
  #lastRecovery = -Infinity;
  /** The store was unavailable at the last poll (logged once per outage, not once per poll). */
  #storeDown = false;
  readonly #onEnqueued = () => this.wake();

  constructor(queue: JobQueue, opts: WorkerOptions = {}) {
    this.#queue = queue;
    this.id = opts.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.#concurrency = Math.max(1, opts.concurrency ?? 4);
    this.#pollMs = opts.pollMs ?? 1000;
    this.#heartbeatMs = opts.heartbeatMs ?? Math.max(100, Math.floor(queue.staleMs / 3));
    this.#logger = opts.logger;
    this.#tracing = opts.tracing;
  }

  get running(): boolean {
    return this.#loop !== undefined && !this.#stopping;
  }

  start(): void {
    if (this.#loop) return;
    this.#stopping = false;
    jobEvents.on('enqueued', this.#onEnqueued);
    this.#loop = this.#run();
  }

  /** Stops claiming; resolves when every job in flight has finished (completed, or released for retry). */
  async stop(): Promise<void> {
    if (!this.#loop) return;
    this.#stopping = true;
    jobEvents.off('enqueued', this.#onEnqueued);
    this.wake();
    await this.#loop;
    this.#loop = undefined;
  }

  /** Polls now instead of at the end of the current sleep. */
  wake(): void {
    this.#wake();
  }

  /**
   * For tests and one-shot runs: processes jobs until none is ready and none is in flight (recovering stale
   * locks first). Not to be mixed with `start()`.
   */
  async runUntilIdle(): Promise<WorkerStats> {
    await this.#recover(true);
    for (;;) {
      const jobs = await this.#queue.claim(this.id, this.#concurrency);
      if (jobs.length === 0) return this.stats;
      await Promise.all(jobs.map((job) => this.#execute(job)));
    }
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      let claimedAll = false;
      try {
        await this.#recover(false);
        const free = this.#concurrency - this.#inflight.size;
        if (free > 0) {
          const jobs = await this.#queue.claim(this.id, free);
          for (const job of jobs) this.#track(this.#execute(job));
          claimedAll = jobs.length === free;
          this.#polled();
        }
      } catch (err) {
        this.#polled(err);
      }
      if (this.#stopping) break;
      // Full claim: more may be ready, go again as soon as a slot is free. Otherwise sleep until polled or woken.
      if (claimedAll && this.#inflight.size < this.#concurrency) continue;
      await this.#sleep(claimedAll);
    }
    await Promise.all(this.#inflight);
  }

  /** Logs a failed poll, but a store outage only when it starts and when it ends: the loop polls on through it. */
  #polled(err?: unknown): void {
    const down = err !== undefined && isStoreUnavailable(err);
    if (down) {
      if (!this.#storeDown)
        this.#logger?.warn({ err: (err as Error).message, worker: this.id }, 'store unavailable; polling on until it returns');
    } else {
      if (this.#storeDown) this.#logger?.info({ worker: this.id }, 'store available again; jobs resume');
      if (err !== undefined) this.#logger?.warn({ err: (err as Error).message, worker: this.id }, 'job queue poll failed; retrying');
    }
    this.#storeDown = down;
  }

  #sleep(untilSlotFree: boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        if (this.#wake === done) this.#wake = () => {};
        resolve();
      };
      const timer = setTimeout(done, untilSlotFree ? 2 ** 31 - 1 : this.#pollMs);
      this.#wake = done;
      // A finished job frees a slot: claim again at once when the last claim took everything it could.
      if (untilSlotFree || this.#inflight.size >= this.#concurrency) {
        Promise.race(this.#inflight).then(done, done);
      }
      if (untilSlotFree && this.#inflight.size === 0) done();
    });
  }

  #track(p: Promise<void>): void {
    this.#inflight.add(p);
    void p.finally(() => this.#inflight.delete(p));
  }

  async #recover(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.#lastRecovery < Math.max(1000, this.#queue.staleMs / 2)) return;
    this.#lastRecovery = now;
    const { requeued, failed } = await this.#queue.recoverStale();
    if (requeued || failed) this.#logger?.warn({ requeued, failed, worker: this.id }, 'recovered jobs whose worker stopped or stalled');
  }

  async #execute(job: Job): Promise<void> {
    let beating = false;
    const heartbeat = setInterval(() => {
      if (beating) return;
      beating = true;
      this.#queue
        .heartbeat(job)
        .catch(() => {})
        .finally(() => {
          beating = false;
        });
    }, this.#heartbeatMs);
    try {
      const run = () => this.#queue.process(job);
      const { outcome, error } = await (this.#tracing ? this.#tracing.job(job, run) : run());
      this.stats[outcome]++;
      if (outcome === 'retried' || outcome === 'failed') {
        this.#logger?.[outcome === 'failed' ? 'error' : 'warn'](
          { job: job.id, task: job.task, attempt: job.attempts, error, worker: this.id },
          outcome === 'failed' ? 'job failed for good' : 'job failed; will retry',
        );
      } else if (outcome === 'lost') {
        this.#logger?.warn({ job: job.id, task: job.task, worker: this.id }, 'job lock expired while running; its work was rolled back');
      }
    } catch (err) {
      // Recording the failure itself failed (store unreachable): the lock expires and the job is recovered.
      this.#logger?.error({ job: job.id, task: job.task, err: (err as Error).message, worker: this.id }, 'could not record a job outcome');
    } finally {
      clearInterval(heartbeat);
    }
  }
}

/**
 * `keyhold worker`: runs a worker on `store` until SIGTERM or SIGINT, then stops it gracefully (the jobs in
 * flight finish) and returns what it did. Logs JSON lines on stderr. A second signal kills the process at
 * once; its jobs are then recovered by another worker once their lock is older than the visibility timeout.
 */
export async function runWorkerUntilSignal(
  store: Store,
  tasks: TaskRegistry,
  opts: { concurrency: number; visibilityTimeoutMs: number; logger?: WorkerLogger },
): Promise<{ workerId: string } & WorkerStats> {
  const logger = opts.logger ?? pino({ base: undefined }, pino.destination({ fd: 2, sync: true }));
  const worker = new Worker(new JobQueue(store, tasks, { staleMs: opts.visibilityTimeoutMs }), { concurrency: opts.concurrency, logger });
  worker.start();
  logger.info(
    { worker: worker.id, concurrency: opts.concurrency, visibilityTimeoutMs: opts.visibilityTimeoutMs, database: store.describe },
    'worker started; stop it with SIGTERM or Ctrl-C',
  );
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      logger.info({ worker: worker.id, signal }, 'worker stopping: finishing the jobs in flight');
      resolve();
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  await worker.stop();
  return { workerId: worker.id, ...worker.stats };
}
