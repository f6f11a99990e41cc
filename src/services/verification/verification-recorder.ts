import { PostgresAdapter, sql, type Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import type {
  AnalyticsKeyVerificationByApiRow,
  AnalyticsKeyVerificationRollupRow,
  AnalyticsKeyVerificationRow,
} from '../../store/schema-analytics.ts';
import { IN_LIST_CHUNK, type Db } from '../../store/store.ts';
import { fixedShapeChunks, insertRecurringRows } from '../../store/bulk-statements.ts';
import { VERIFY_CODES, type VerifyCode } from '../../domain/verify-codes.ts';
import { EventQueue, type EventQueueOptions } from '../analytics/event-queue.ts';
import { addRow, bucketOf, byId, coarsen, GRAINS, type Grain, storedTags, upsertRollups } from '../analytics/rollups.ts';
import { VERIFICATION_FORMS, type VerificationForm } from '../analytics/rollup-forms.ts';
import { ensureDayPartitions } from '../analytics/partitions.ts';

export interface RecorderOptions extends EventQueueOptions {
  /** The `region` of every event (KEYHOLD_REGION; default `local`). */
  region?: string;
  /** false (KEYHOLD_ANALYTICS=off): `record` records nothing. Default true. */
  enabled?: boolean;
  /** Which store (default: the one `db` talks to): tags are text[] on PostgreSQL, JSON text on SQLite; raw tables are partitioned on PostgreSQL. */
  dialect?: 'sqlite' | 'postgres';
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

export const HOUR_MS = 3_600_000;

/** Events held at most by default (about 300 bytes each: 30 MB; docs/reliability.md, "When the store or Redis fails"). */
export const VERIFICATION_CAPACITY = 100_000;

/** The outcomes recorded. NOT_FOUND is not among them: such a verification has no key of a workspace. */
export const RECORDED_CODES = VERIFY_CODES.filter((c): c is Exclude<VerifyCode, 'NOT_FOUND'> => c !== 'NOT_FOUND');
export type RecordedCode = (typeof RECORDED_CODES)[number];

const NO_TAGS: readonly string[] = [];

/**
 * Records verifications as raw events (`analytics_key_verifications`) and their roll-ups per minute, hour, day
 * and month, off the hot path (DESIGN "Hot path"): `record` queues the event (synchronous, no I/O; a full queue
 * drops its oldest, counted), and each flush writes the queue in ONE transaction: the raw rows (multi-row
 * inserts), the roll-ups aggregated in memory and upserted (`count = count + excluded.count`), and every key's
 * `last_used_at` moved forward to its latest verification (never back). A failed flush writes nothing and puts
 * its events back (EventQueue). Events become visible within `flushIntervalMs` once `start()` was called.
 */
export class VerificationRecorder extends EventQueue<VerificationEvent> {
  readonly #db: Kysely<Database>;
  readonly #region: string;
  readonly #dialect: 'sqlite' | 'postgres';
  readonly #enabled: boolean;

  constructor(db: Kysely<Database>, opts: RecorderOptions = {}) {
    super('verification analytics', VERIFICATION_CAPACITY, opts);
    this.#db = db;
    this.#enabled = opts.enabled ?? true;
    this.#region = opts.region ?? 'local';
    this.#dialect = opts.dialect ?? (db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite');
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

  protected async write(batch: VerificationEvent[]): Promise<void> {
    if (this.#dialect === 'postgres') await ensureDayPartitions(this.#db, 'analytics_key_verifications', times(batch));
    // Every row is built before the transaction: on SQLite it holds the one write lock while it runs.
    const raw = batch.map((e) => rawRow(e, this.#region, this.#dialect));
    const rollups = rollupRows(batch, this.#dialect);
    const forms = GRAINS.map((grain) => formRows(grain, rollups[grain]));
    const latest = latestByKey(batch);
    await this.#db.transaction().execute(async (tx) => {
      await insertRecurringRows(tx, 'analytics_key_verifications', raw);
      for (const grain of GRAINS) await upsertRollups(tx, `analytics_key_verifications_per_${grain}`, rollups[grain], GROUP, SUMMED);
      for (const form of forms.flat()) await upsertRollups(tx, form.table, form.rows, form.group, SUMMED);
      await moveLastUsed(tx, latest);
    });
  }
}

/** The rows of each coarser form of one grain's roll-up rows (rollup-forms.ts), with its table and group. */
function formRows(grain: Grain, rows: AnalyticsKeyVerificationRollupRow[]) {
  return FORMS.map((form) => {
    // Typed as the coarsest form: upsertRollups writes the columns the rows have.
    const group = VERIFICATION_FORMS[form] as ReadonlyArray<keyof AnalyticsKeyVerificationByApiRow>;
    const table = `analytics_key_verifications_per_${grain}_${form}` as `analytics_key_verifications_per_${Grain}_by_api`;
    return { table, group, rows: coarsen(rows, group, SUMMED) };
  });
}

function* times(batch: ReadonlyArray<{ time: number }>): Iterable<number> {
  for (const e of batch) yield e.time;
}

function rawRow(e: VerificationEvent, region: string, dialect: 'sqlite' | 'postgres'): AnalyticsKeyVerificationRow {
  return {
    request_id: e.requestId ?? '',
    time: e.time,
    workspace_id: e.workspaceId,
    key_space_id: e.apiId,
    identity_id: e.identityId ?? '',
    external_id: e.externalId ?? '',
    key_id: e.keyId,
    region,
    outcome: e.code,
    tags: storedTags(e.tags ?? NO_TAGS, dialect),
    spent_credits: e.spentCredits ?? 0,
    latency: e.latency ?? 0,
  };
}

const GROUP = ['workspace_id', 'time', 'key_space_id', 'key_id', 'identity_id', 'external_id', 'outcome', 'tags'] as const;
const SUMMED = ['count', 'spent_credits', 'latency_sum'] as const;
const FORMS = Object.keys(VERIFICATION_FORMS) as VerificationForm[];

/**
 * The batch summed per roll-up group, per grain, ordered by group. Per event only its minute row is found (one
 * id, one Map lookup); the hour, day and month rows are sums of the minute rows, far fewer than the events
 * whenever a key is verified more than once a minute.
 */
function rollupRows(
  batch: VerificationEvent[],
  dialect: 'sqlite' | 'postgres',
): Record<(typeof GRAINS)[number], AnalyticsKeyVerificationRollupRow[]> {
  // Minute rows by id: the group, then the minute (`${group}\u0000${time}`).
  const minutes = new Map<string, AnalyticsKeyVerificationRollupRow>();
  for (const e of batch) {
    const tags = e.tags ?? NO_TAGS;
    const stored = tags.length === 0 ? (dialect === 'postgres' ? '{}' : '[]') : storedTags(tags, dialect);
    // The key's id first: ids differ early, so sorting the groups (byId) compares little of each.
    const group = `${e.keyId}\u0000${e.workspaceId}\u0000${e.apiId}\u0000${e.identityId ?? ''}\u0000${e.externalId ?? ''}\u0000${e.code}\u0000${stored}`;
    const time = bucketOf(e.time, 'minute');
    const id = `${group}\u0000${time}`;
    const had = minutes.get(id);
    if (had) {
      had.count += 1;
      had.spent_credits += e.spentCredits ?? 0;
      had.latency_sum += e.latency ?? 0;
      continue;
    }
    minutes.set(id, {
      time,
      workspace_id: e.workspaceId,
      key_space_id: e.apiId,
      identity_id: e.identityId ?? '',
      external_id: e.externalId ?? '',
      key_id: e.keyId,
      outcome: e.code,
      tags: stored,
      count: 1,
      spent_credits: e.spentCredits ?? 0,
      latency_sum: e.latency ?? 0,
    });
  }
  const coarser = (grain: Grain) => {
    const rows = new Map<string, AnalyticsKeyVerificationRollupRow>();
    for (const [id, row] of minutes) {
      const time = bucketOf(row.time, grain);
      // The minute row's group is its id without the minute (the time is the last member).
      addRow(rows, `${id.slice(0, id.lastIndexOf('\u0000'))}\u0000${time}`, { ...row, time }, SUMMED);
    }
    return byId(rows);
  };
  return { minute: byId(minutes), hour: coarser('hour'), day: coarser('day'), month: coarser('month') };
}

function latestByKey(batch: VerificationEvent[]): Map<string, number> {
  const latest = new Map<string, number>();
  for (const e of batch) if (!(latest.get(e.keyId)! >= e.time)) latest.set(e.keyId, e.time);
  return latest;
}

/** Each key's last_used_at becomes the later of its stored value and `latest` (keys in id order: a shared lock order). */
async function moveLastUsed(tx: Db, latest: Map<string, number>): Promise<void> {
  const keyIds = [...latest.keys()].sort();
  for (const ids of fixedShapeChunks(keyIds, IN_LIST_CHUNK)) {
    // The CAST gives PostgreSQL the parameter's type (a bare parameter in CASE would be text).
    const at = sql<number>`(case ${sql.ref('id')} ${sql.join(
      ids.map((id) => sql`when ${id} then cast(${latest.get(id)!} as bigint)`),
      sql` `,
    )} end)`;
    await tx
      .updateTable('keys')
      .set({ last_used_at: at })
      .where('id', 'in', ids)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
      .execute();
  }
}
