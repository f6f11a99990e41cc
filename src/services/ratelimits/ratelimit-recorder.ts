import { PostgresAdapter, sql, type Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import type { AnalyticsRatelimitRollupRow, AnalyticsRatelimitRow } from '../../store/schema-analytics.ts';
import { insertRecurringRows } from '../../store/bulk-statements.ts';
import { EventQueue } from '../analytics/event-queue.ts';
import { ArrayBacklog } from '../analytics/array-backlog.ts';
import { addRow, bucketOf, byId, GRAINS, upsertRollups } from '../analytics/rollups.ts';
import { ensureDayPartitions } from '../analytics/partitions.ts';
import type { RecorderOptions } from '../verification/verification-recorder.ts';

/** One rate-limit check (ratelimits.limit, v2 ratelimit.limit / multiLimit), as the limit path reports it. */
export interface RatelimitEvent {
  workspaceId: string;
  namespaceId: string;
  identifier: string;
  /** Whether the request was let through (`success: true`). */
  passed: boolean;
  time: number;
  requestId?: string;
  /** ms the check took. */
  latency?: number;
}

/** Events held at most by default (about 300 bytes each plus the identifier; docs/reliability.md). */
export const RATELIMIT_CAPACITY = 50_000;

const GROUP = ['workspace_id', 'time', 'namespace_id', 'identifier'] as const;
const SUMMED = ['passed', 'total'] as const;

/**
 * Records rate-limit checks as raw events (`analytics_ratelimits`) and their roll-ups per minute, hour, day and
 * month (`passed`, `total`), as the VerificationRecorder does verifications: queued in memory (bounded, the
 * oldest dropped), written in batches of ONE transaction each (raw rows and roll-up upserts together).
 */
export class RatelimitRecorder extends EventQueue<RatelimitEvent, RatelimitEvent[]> {
  readonly #db: Kysely<Database>;
  readonly #dialect: 'sqlite' | 'postgres';
  readonly #enabled: boolean;

  constructor(db: Kysely<Database>, opts: RecorderOptions = {}) {
    super('rate-limit analytics', RATELIMIT_CAPACITY, new ArrayBacklog(), opts);
    this.#db = db;
    this.#enabled = opts.enabled ?? true;
    this.#dialect = opts.dialect ?? (db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite');
  }

  /** Queues one check. O(1), no I/O. */
  record(e: RatelimitEvent): void {
    if (this.#enabled) this.enqueue(e);
  }

  /** In a transaction: on SQLite only the writer answers it, and only when no other process holds the write lock. */
  protected async probe(): Promise<void> {
    await this.#db.transaction().execute((tx) => sql`select 1`.execute(tx));
  }

  protected async write(batch: RatelimitEvent[]): Promise<void> {
    if (this.#dialect === 'postgres')
      await ensureDayPartitions(
        this.#db,
        'analytics_ratelimits',
        batch.map((e) => e.time),
      );
    const raw: AnalyticsRatelimitRow[] = batch.map((e) => ({
      request_id: e.requestId ?? '',
      time: e.time,
      workspace_id: e.workspaceId,
      namespace_id: e.namespaceId,
      identifier: e.identifier,
      passed: e.passed ? 1 : 0,
      latency: e.latency ?? 0,
    }));
    const maps = GRAINS.map(() => new Map<string, AnalyticsRatelimitRollupRow>());
    for (const e of batch) {
      GRAINS.forEach((grain, i) => {
        const time = bucketOf(e.time, grain);
        const row = {
          time,
          workspace_id: e.workspaceId,
          namespace_id: e.namespaceId,
          identifier: e.identifier,
          passed: e.passed ? 1 : 0,
          total: 1,
        };
        addRow(maps[i], `${e.workspaceId}\u0000${e.namespaceId}\u0000${e.identifier}\u0000${time}`, row, SUMMED);
      });
    }
    await this.#db.transaction().execute(async (tx) => {
      await insertRecurringRows(tx, 'analytics_ratelimits', raw);
      for (let i = 0; i < GRAINS.length; i++) {
        await upsertRollups(tx, `analytics_ratelimits_per_${GRAINS[i]}`, byId(maps[i]), GROUP, SUMMED);
      }
    });
  }
}
