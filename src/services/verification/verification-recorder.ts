import { PostgresAdapter, sql, type Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import type { WriteAside } from '../../store/store.ts';
import { AnalyticsWriterThread } from '../analytics/analytics-writer-thread.ts';
import { writeVerifications } from '../analytics/verification-writes.ts';
import { VERIFY_CODES, type VerifyCode } from '../../domain/verify-codes.ts';
import { EventQueue, type EventQueueOptions } from '../analytics/event-queue.ts';
import { VerificationBacklog } from '../analytics/verification-backlog.ts';
import { unpackVerifications, type PackedVerifications } from '../analytics/packed-verifications.ts';

export interface RecorderOptions extends EventQueueOptions {
  /** The `region` of every event (KEYHOLD_REGION; default `local`). */
  region?: string;
  /** false (KEYHOLD_ANALYTICS=off): `record` records nothing. Default true. */
  enabled?: boolean;
  /** Which store (default: the one `db` talks to): tags are text[] on PostgreSQL, JSON text on SQLite; raw tables are partitioned on PostgreSQL. */
  dialect?: 'sqlite' | 'postgres';
  /** SQLite on a file (Store.writeAside): batches are written by the analytics writer thread, not by this one. */
  aside?: WriteAside;
}

/** One verification of a known key (every outcome but NOT_FOUND), as the verification path reports it. */
export interface VerificationEvent {
  keyId: string;
  workspaceId: string;
  apiId: string;
  identityId: string | null;
  externalId?: string | null;
  code: VerifyCode;
  time: number;
  requestId?: string;
  tags?: readonly string[];
  /** Credits this verification took (0 when it took none). */
  spentCredits?: number;
  /** ms the verification took. */
  latency?: number;
}

export { HOUR_MS } from '../analytics/hourly-sums.ts';

/** Events held at most by default (VerificationBacklog: 14-37 MB when full; docs/reliability.md, "When the store or Redis fails"). */
export const VERIFICATION_CAPACITY = 100_000;

/** The outcomes recorded. NOT_FOUND is not among them: such a verification has no key of a workspace. */
export const RECORDED_CODES = VERIFY_CODES.filter((c): c is Exclude<VerifyCode, 'NOT_FOUND'> => c !== 'NOT_FOUND');
export type RecordedCode = (typeof RECORDED_CODES)[number];

/**
 * Records verifications as raw events (`analytics_key_verifications`) and their roll-ups per minute, hour, day
 * and month, off the hot path (DESIGN "Hot path"): `record` queues the event (synchronous, no I/O; a full queue
 * drops its oldest, counted), and each flush writes the queue in ONE transaction: the raw rows (multi-row
 * inserts), the roll-ups aggregated in memory and upserted (`count = count + excluded.count`), and every key's
 * `last_used_at` moved forward to its latest verification (never back). A failed flush writes nothing and puts
 * its events back (EventQueue). Events become visible within `flushIntervalMs` once `start()` was called.
 * The writes are writeVerifications', run by this thread, or, given `aside` (SQLite on a file), by the analytics
 * writer thread, so that a flush never holds the event loop that answers verifications.
 */
export class VerificationRecorder extends EventQueue<VerificationEvent, PackedVerifications> {
  readonly #db: Kysely<Database>;
  readonly #region: string;
  readonly #dialect: 'sqlite' | 'postgres';
  readonly #enabled: boolean;
  readonly #thread: AnalyticsWriterThread | undefined;

  constructor(db: Kysely<Database>, opts: RecorderOptions = {}) {
    super('verification analytics', VERIFICATION_CAPACITY, new VerificationBacklog(), opts);
    this.#db = db;
    this.#enabled = opts.enabled ?? true;
    this.#region = opts.region ?? 'local';
    this.#dialect = opts.dialect ?? (db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite');
    this.#thread = opts.aside && this.#enabled ? new AnalyticsWriterThread(opts.aside, this.#region) : undefined;
  }

  /** Queues one verification; NOT_FOUND is ignored. O(1), no I/O. */
  record(e: VerificationEvent): void {
    if (e.code === 'NOT_FOUND' || !this.#enabled) return;
    this.enqueue(e);
  }

  /** In a transaction: on SQLite only the writer answers it, and only when no other process holds the write lock. */
  protected async probe(): Promise<void> {
    await this.#db.transaction().execute((tx) => sql`select 1`.execute(tx));
  }

  protected write(batch: PackedVerifications): Promise<void> {
    if (this.#thread) return this.#thread.write(batch);
    return writeVerifications(this.#db, unpackVerifications(batch), this.#region, this.#dialect);
  }

  /** Stops the timer, flushes what is left, and ends the writer thread. */
  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      await this.#thread?.close();
    }
  }
}
