import type {
  AnalyticsKeyVerificationByApiRow,
  AnalyticsKeyVerificationRollupRow,
  AnalyticsKeyVerificationRow,
} from '../../store/schema-analytics.ts';
import type { Db } from '../../store/store.ts';
import { insertRecurringRows } from '../../store/bulk-statements.ts';
import { moveLastUsedForward } from '../../store/last-used.ts';
import type { VerificationEvent } from '../verification/verification-recorder.ts';
import { addRow, bucketOf, byId, coarsen, GRAINS, type Grain, storedTags, upsertRollups } from './rollups.ts';
import { VERIFICATION_FORMS, type VerificationForm } from './rollup-forms.ts';
import { ensureDayPartitions } from './partitions.ts';

// What a batch of verification events writes, wherever it runs: in the recorder's process (PostgreSQL, an
// in-memory SQLite), or in the analytics writer thread (SQLite on a file, analytics-writer-worker.ts).

const NO_TAGS: readonly string[] = [];

/** Writes `batch` in ONE transaction: the raw rows, the roll-ups and their forms, and the keys' last_used_at. */
export async function writeVerifications(
  db: Db,
  batch: VerificationEvent[],
  region: string,
  dialect: 'sqlite' | 'postgres',
): Promise<void> {
  if (dialect === 'postgres') await ensureDayPartitions(db, 'analytics_key_verifications', times(batch));
  // Every row is built before the transaction: on SQLite it holds the one write lock while it runs.
  const raw = batch.map((e) => rawRow(e, region, dialect));
  const rollups = rollupRows(batch, dialect);
  const forms = GRAINS.map((grain) => formRows(grain, rollups[grain]));
  const latest = latestByKey(batch);
  await db.transaction().execute(async (tx) => {
    await insertRecurringRows(tx, 'analytics_key_verifications', raw);
    for (const grain of GRAINS) await upsertRollups(tx, `analytics_key_verifications_per_${grain}`, rollups[grain], GROUP, SUMMED);
    for (const form of forms.flat()) await upsertRollups(tx, form.table, form.rows, form.group, SUMMED);
    await moveLastUsedForward(tx, 'keys', latest);
  });
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
