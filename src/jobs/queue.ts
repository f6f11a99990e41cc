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
 * The rest is JobQueue's (job-queue.ts): `process` runs the task in ONE transaction that also deletes the
 * job (fenced on the claim: id, `running`, `locked_by`, `attempts`), so the task's effects and the job's
 * completion commit together or not at all.
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
   * Work done before the transaction, outside it (a network call must not hold the store's writer): its
   * result is handed to `run`. A run that is lost after it (a crash before the commit) does it again.
   */
  prepare?(payload: P, job: Job<P>): Promise<unknown>;
  /**
   * Does the work inside `tx`, the transaction that also completes the job: both commit or neither.
   * Throwing rolls everything back and retries the job with backoff (PermanentJobError: no retry).
   */
  run(tx: Tx, payload: P, job: Job<P>, prepared?: unknown): Promise<void>;
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
  const row = jobRow(task, payload, opts);
  await db.insertInto('jobs').values(row).execute();
  return row.id;
}

/** The row of a new pending job (enqueue's), for a caller that inserts many together. */
export function jobRow<K extends TaskName>(task: K, payload: TaskPayloads[K], opts: EnqueueOptions = {}): JobRow {
  const now = opts.now ?? Date.now();
  return {
    id: newId('job'),
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
  };
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

/** A claimed job as the queue hands it out, from its row; a payload that is not JSON becomes `payloadError`. */
export function toJob(row: JobRow): Job {
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

/** How many jobs wait, run and have failed for good, and since when the oldest pending one waits (for /metrics). */
export interface JobQueueStats {
  pending: number;
  running: number;
  failed: number;
  /** When the oldest pending job was enqueued (epoch ms), or null when none is pending. */
  oldestPendingCreatedAt: number | null;
}

/** The queue's depth by status, in one grouped read of the `jobs` table (completed jobs are deleted, so it stays small). */
export async function jobQueueStats(db: Executor): Promise<JobQueueStats> {
  const rows = await db
    .selectFrom('jobs')
    .select(['status', (eb) => eb.fn.countAll<number | string>().as('n'), (eb) => eb.fn.min('created_at').as('oldest')])
    .groupBy('status')
    .execute();
  const stats: JobQueueStats = { pending: 0, running: 0, failed: 0, oldestPendingCreatedAt: null };
  for (const row of rows) {
    if (row.status === 'pending' || row.status === 'running' || row.status === 'failed') stats[row.status] = Number(row.n);
    if (row.status === 'pending' && row.oldest !== null) stats.oldestPendingCreatedAt = Number(row.oldest);
  }
  return stats;
}
