import { sql } from 'kysely';
import type { Store } from '../store/store.ts';
import { claim, PermanentJobError, toJob, type Job, type TaskDefinition, type TaskRegistry } from './queue.ts';

/*
 * A worker process' view of the durable job queue (queue.ts describes the life of a job): processing a
 * claimed job in the transaction that deletes it, retries with backoff, heartbeats and stale-lock recovery.
 */

/** The outcome of processing one claimed job. `lost`: its lock expired and it was taken over, so nothing of this run was kept. */
export type Outcome = 'completed' | 'retried' | 'failed' | 'lost';

/** The options of a JobQueue. */
export interface QueueOptions {
  /** Retry delay base: a job that failed its attempt `a` runs again after `backoffBaseMs · 2^a` (capped). Default 1 s. */
  backoffBaseMs?: number;
  /** Longest retry delay. Default 1 h. */
  maxBackoffMs?: number;
  /** Visibility timeout: a running job whose lock is older goes back to pending. Default 30 s. */
  staleMs?: number;
  /** The clock (tests control it). */
  now?: () => number;
}

class LostLock extends Error {}

const MAX_ERROR_CHARS = 2000;
const describeError = (err: unknown): string =>
  (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(0, MAX_ERROR_CHARS);

/** The queue as one worker process sees it: the store, the tasks it can run, its backoff and visibility timeout. */
export class JobQueue {
  readonly store: Store;
  readonly tasks: TaskRegistry;
  readonly backoffBaseMs: number;
  readonly maxBackoffMs: number;
  readonly staleMs: number;
  readonly now: () => number;

  constructor(store: Store, tasks: TaskRegistry, opts: QueueOptions = {}) {
    this.store = store;
    this.tasks = tasks;
    this.backoffBaseMs = opts.backoffBaseMs ?? 1000;
    this.maxBackoffMs = opts.maxBackoffMs ?? 3_600_000;
    this.staleMs = opts.staleMs ?? 30_000;
    this.now = opts.now ?? Date.now;
  }

  get taskNames(): string[] {
    return Object.keys(this.tasks);
  }

  /** Delay before the next attempt of a job that has made `attempts` attempts. */
  backoff(attempts: number): number {
    return Math.min(this.backoffBaseMs * 2 ** attempts, this.maxBackoffMs);
  }

  claim(workerId: string, n: number): Promise<Job[]> {
    return claim(this.store, workerId, n, this.taskNames, this.now());
  }

  #definition(job: Job): TaskDefinition<unknown> | undefined {
    return this.tasks[job.task] as TaskDefinition<unknown> | undefined;
  }

  /** Runs a claimed job: its task and its deletion commit together; on failure it is retried or failed. */
  async process(job: Job): Promise<{ outcome: Outcome; error?: string }> {
    const definition = this.#definition(job);
    try {
      if (!definition) throw new PermanentJobError(`no task "${job.task}" in this worker`);
      if (job.payloadError) throw new PermanentJobError(job.payloadError);
      const prepared = definition.prepare ? await definition.prepare(job.payload, job) : undefined;
      await this.store.db.transaction().execute(async (tx) => {
        // First statement: the fence. It takes the job's row lock, so a second holder of this job (after a
        // lock expiry) waits here and then finds nothing to delete.
        const done = await tx
          .deleteFrom('jobs')
          .where('id', '=', job.id)
          .where('status', '=', 'running')
          .where('locked_by', '=', job.lockedBy)
          .where('attempts', '=', job.attempts)
          .executeTakeFirst();
        if (Number(done.numDeletedRows) !== 1) throw new LostLock();
        await definition.run(tx, job.payload, job, prepared);
      });
      return { outcome: 'completed' };
    } catch (err) {
      if (err instanceof LostLock) return { outcome: 'lost' };
      return { outcome: await this.fail(job, err), error: describeError(err) };
    }
  }

  /** Records a failed attempt: back to pending with backoff, or failed for good (the task's `giveUp` runs in that transaction). */
  async fail(job: Job, err: unknown): Promise<Outcome> {
    const now = this.now();
    const message = describeError(err);
    const permanent = err instanceof PermanentJobError || job.attempts >= job.maxAttempts;
    const giveUp = permanent && !job.payloadError ? this.#definition(job)?.giveUp : undefined;
    const record = (lastError: string, withGiveUp: boolean) =>
      this.store.db.transaction().execute(async (tx): Promise<Outcome> => {
        const updated = await tx
          .updateTable('jobs')
          .set(
            permanent
              ? { status: 'failed', locked_at: null, locked_by: null, last_error: lastError, updated_at: now }
              : {
                  status: 'pending',
                  locked_at: null,
                  locked_by: null,
                  last_error: lastError,
                  run_at: now + this.backoff(job.attempts),
                  updated_at: now,
                },
          )
          .where('id', '=', job.id)
          .where('status', '=', 'running')
          .where('locked_by', '=', job.lockedBy)
          .where('attempts', '=', job.attempts)
          .executeTakeFirst();
        if (Number(updated.numUpdatedRows) !== 1) return 'lost';
        if (withGiveUp && giveUp) await giveUp(tx, job.payload, message, job);
        return permanent ? 'failed' : 'retried';
      });
    try {
      return await record(message, true);
    } catch (giveUpErr) {
      if (!giveUp) throw giveUpErr;
      // The task could not record its outcome: the job still fails (it must not come back forever), with both errors kept.
      return record(`${message}; giveUp failed: ${describeError(giveUpErr)}`.slice(0, MAX_ERROR_CHARS), false);
    }
  }

  /** Refreshes the lock of a running job; false when it is no longer this claim's (completed, or taken over). */
  async heartbeat(job: Job): Promise<boolean> {
    const r = await this.store.db
      .updateTable('jobs')
      .set({ locked_at: this.now() })
      .where('id', '=', job.id)
      .where('status', '=', 'running')
      .where('locked_by', '=', job.lockedBy)
      .where('attempts', '=', job.attempts)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /**
   * Stale-lock recovery: running jobs whose lock is older than the visibility timeout (their worker died or
   * stalled) go back to pending, at once; ones that have used up their attempts fail for good instead
   * (a job that kills its worker every time must not loop forever).
   */
  async recoverStale(): Promise<{ requeued: number; failed: number }> {
    const now = this.now();
    const cutoff = now - this.staleMs;
    const requeued = await this.store.db
      .updateTable('jobs')
      .set({
        status: 'pending',
        locked_at: null,
        locked_by: null,
        run_at: now,
        updated_at: now,
        last_error: sql<string>`'lock expired: the worker ' || locked_by || ' stopped or stalled'`,
      })
      .where('status', '=', 'running')
      .where('locked_at', '<', cutoff)
      .whereRef('attempts', '<', 'max_attempts')
      .executeTakeFirst();
    const exhausted = await this.store.db
      .selectFrom('jobs')
      .selectAll()
      .where('status', '=', 'running')
      .where('locked_at', '<', cutoff)
      .whereRef('attempts', '>=', 'max_attempts')
      .where('task', 'in', this.taskNames.length ? this.taskNames : [''])
      .execute();
    let failed = 0;
    for (const row of exhausted) {
      const job = toJob(row);
      const outcome = await this.fail(
        job,
        new PermanentJobError(
          `lock expired on the last attempt (${job.attempts} of ${job.maxAttempts}): the worker ${job.lockedBy} stopped or stalled`,
        ),
      );
      if (outcome === 'failed') failed++;
    }
    return { requeued: Number(requeued.numUpdatedRows), failed };
  }
}
