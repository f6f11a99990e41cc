import { EventEmitter } from 'node:events';
import { sql } from 'kysely';
import { newId } from '../domain/ids.ts';
import type { Executor, Store, Tx } from '../store/store.ts';
import type { JobRow } from '../store/schema.ts';

/**
 * The durable job queue, in the store's `jobs` table.
 *
 * Life of a job: `enqueue` inserts it `pending` inside the caller's transaction (so it exists exactly when
 * the caller's writes do). `claim` moves ready jobs to `running`, stamping `locked_by`/`locked_at` and
 * incrementing `attempts`; on PostgreSQL with `FOR UPDATE SKIP LOCKED` so workers never wait on, or take,
 * each other's jobs; on SQLite the claiming UPDATE is one write transaction, and SQLite has one writer.
 * `process` runs the task in ONE transaction that also deletes the job (fenced on the claim: id, `running`,
 * `locked_by`, `attempts`), so the task's effects and the job's completion commit together or not at all.
 * A throwing task rolls back and the job goes back to `pending` with exponential backoff, or to `failed`
 * (kept, with `last_error`) when its attempts are used up. A worker that dies leaves its job `running`;
 * `recoverStale` returns jobs whose lock (refreshed by heartbeats while they run) is older than the
 * visibility timeout to `pending`. Completed jobs are deleted: their outcome lives in the task's own rows.
 */

/**
 * Every task and the payload it takes: the typed task registry. A task's own module adds its entry by module
 * augmentation (`declare module '…/jobs/queue.ts' { interface TaskPayloads { 'name': Payload } }`), so the
 * queue depends on no task.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by module augmentation
export interface TaskPayloads {}
export type TaskName = keyof TaskPayloads;

export interface Job<P = unknown> {
  id: string;
  task: TaskName;
  payload: P;
  /** Including the current one. */
  attempts: number;
  maxAttempts: number;
  runAt: number;
  lockedAt: number;
  lockedBy: string;
  createdAt: number;
  /** Set when the stored payload is not JSON (a damaged row): such a job fails at once, without `giveUp`. */
  payloadError?: string;
}

export interface TaskDefinition<P> {
  /**
   * Does the work inside `tx`, the transaction that also completes the job: both commit or neither.
   * Throwing rolls everything back and retries the job with backoff (PermanentJobError: no retry).
   */
  run(tx: Tx, payload: P, job: Job<P>): Promise<void>;
  /** Runs in the transaction that marks the job failed for good, so the task can record the outcome. */
  giveUp?(tx: Tx, payload: P, reason: string, job: Job<P>): Promise<void>;
}

export type TaskRegistry = { [K in TaskName]?: TaskDefinition<TaskPayloads[K]> };

/** Thrown by a task for a failure that another attempt cannot fix: the job fails at once. */
export class PermanentJobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PermanentJobError';
  }
}

export const DEFAULT_MAX_ATTEMPTS = 10;

export interface EnqueueOptions {
  runAt?: number;
  maxAttempts?: number;
  now?: number;
}

/** Inserts a pending job with `db`, normally the caller's transaction. Call `announceJobs()` after the commit. */
export async function enqueue<K extends TaskName>(
  db: Executor,
  task: K,
  payload: TaskPayloads[K],
  opts: EnqueueOptions = {},
): Promise<string> {
  const now = opts.now ?? Date.now();
  const id = newId('job');
  await db
    .insertInto('jobs')
    .values({
      id,
      task,
      payload: JSON.stringify(payload),
      status: 'pending',
      attempts: 0,
      max_attempts: opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      run_at: opts.runAt ?? now,
      locked_at: null,
      locked_by: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

/** Process-wide: `enqueued` is emitted after a commit that enqueued jobs, so this process' workers poll at once. */
export const jobEvents = new EventEmitter();
jobEvents.setMaxListeners(0);
export const announceJobs = (): void => {
  jobEvents.emit('enqueued');
};

/**
 * Claims up to `n` ready jobs of `tasks` for `workerId`. Concurrency guarantee: a pending job is claimed by
 * exactly one caller, across processes: row locks with SKIP LOCKED where the store has them
 * (`caps.skipLocked`), otherwise the store's single writer.
 */
export async function claim(store: Store, workerId: string, n: number, tasks: readonly string[], now = Date.now()): Promise<Job[]> {
  if (n <= 0 || tasks.length === 0) return [];
  const ready = store.db
    .selectFrom('jobs')
    .select('id')
    .where('status', '=', 'pending')
    .where('run_at', '<=', now)
    .where('task', 'in', tasks)
    .orderBy('run_at')
    .orderBy('id')
    .limit(n)
    .$if(store.caps.skipLocked, (q) => q.forUpdate().skipLocked());
  const rows = await store.db
    .updateTable('jobs')
    .set({ status: 'running', locked_at: now, locked_by: workerId, attempts: sql<number>`attempts + 1`, updated_at: now })
    // By id only: the rows are pending (and, with SKIP LOCKED, locked) by construction; adding `status` here
    // would let SQLite plan the UPDATE on the status index and read every pending job.
    .where('id', 'in', ready)
    .returningAll()
    .execute();
  return rows.map(toJob).sort((a, b) => a.runAt - b.runAt || (a.id < b.id ? -1 : 1));
}

function toJob(row: JobRow): Job {
  let payload: unknown;
  let payloadError: string | undefined;
  try {
    payload = JSON.parse(row.payload);
  } catch (err) {
    payloadError = `the payload is not JSON: ${(err as Error).message}`;
  }
  return {
    id: row.id,
    task: row.task as TaskName,
    payload,
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    runAt: Number(row.run_at),
    lockedAt: Number(row.locked_at),
    lockedBy: row.locked_by!,
    createdAt: Number(row.created_at),
    ...(payloadError ? { payloadError } : {}),
  };
}

/** The outcome of processing one claimed job. `lost`: its lock expired and it was taken over, so nothing of this run was kept. */
export type Outcome = 'completed' | 'retried' | 'failed' | 'lost';

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
        await definition.run(tx, job.payload, job);
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
