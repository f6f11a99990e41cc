import type {
  AnalyticsKeyVerificationByApiRow,
  AnalyticsKeyVerificationByKeyRow,
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
    return { table, group, rows: form === 'by_key' ? byKeyRows(rows) : coarsen(rows, group, SUMMED) };
  });
}

/**
 * The `by_key` form of one grain's roll-up rows: each group without its tags, summed. The rows come in rollupRows'
 * order (head, time, then tags), so the rows of one by_key group are neighbours and one pass sums them, in that
 * order: no map, no second sort (with many keys that form has about as many rows as the roll-up). It spells out
 * VERIFICATION_FORMS.by_key's columns (the literal is checked against the form's row type): a loop over the group's
 * names, as coarsen's, cost 3-17% more of a batch's JavaScript (bench/recording-rows.ts).
 */
function byKeyRows(rows: readonly AnalyticsKeyVerificationRollupRow[]): AnalyticsKeyVerificationByKeyRow[] {
  const out: AnalyticsKeyVerificationByKeyRow[] = [];
  let last: AnalyticsKeyVerificationByKeyRow | undefined;
  for (const r of rows) {
    if (
      last !== undefined &&
      last.key_id === r.key_id &&
      last.time === r.time &&
      last.outcome === r.outcome &&
      last.identity_id === r.identity_id &&
      last.external_id === r.external_id &&
      last.key_space_id === r.key_space_id &&
      last.workspace_id === r.workspace_id
    ) {
      last.count += r.count;
      last.spent_credits += r.spent_credits;
      last.latency_sum += r.latency_sum;
      continue;
    }
    last = {
      workspace_id: r.workspace_id,
      time: r.time,
      key_space_id: r.key_space_id,
      key_id: r.key_id,
      identity_id: r.identity_id,
      external_id: r.external_id,
      outcome: r.outcome,
      count: r.count,
      spent_credits: r.spent_credits,
      latency_sum: r.latency_sum,
    };
    out.push(last);
  }
  return out;
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

/** A minute row and its id's head: the members of its group before the time, the key's id first. */
interface Minute {
  head: string;
  row: AnalyticsKeyVerificationRollupRow;
}

/**
 * The batch summed per roll-up group, per grain, ordered by id: `${head}\u0000${time}\u0000${tags}`, the head being
 * the key, workspace, API, identity, external id and outcome. The key's id first: ids differ early, so sorting
 * (byId) compares little of each. The time before the tags: every row of one group of the by_key form (the group
 * without tags) starts with the same `${head}\u0000${time}\u0000`, and, as no member holds a NUL, no other group's
 * does, so they are neighbours (byKeyRows). (A NUL could only come from SQLite rows older than the guard that
 * refuses it in every body; PostgreSQL's text cannot hold one. SQLite sums an upsert's repeated rows one after the
 * other, so a by_key group split in two would still be counted right.) Per event only its minute row is found (one
 * id, one Map lookup; nothing when it is the previous event's); the hour, day and month rows are sums of the minute
 * rows, far fewer than the events whenever a key is verified more than once a minute.
 */
function rollupRows(
  batch: VerificationEvent[],
  dialect: 'sqlite' | 'postgres',
): Record<(typeof GRAINS)[number], AnalyticsKeyVerificationRollupRow[]> {
  const minutes = new Map<string, Minute>();
  let last: VerificationEvent | undefined;
  let minute: Minute | undefined;
  for (const e of batch) {
    const time = bucketOf(e.time, 'minute');
    // A key verified again and again comes in runs: an event of the previous one's group and minute goes to its
    // row without building its id (two strings per event: most of a batch's garbage when one key is hot).
    if (minute === undefined || minute.row.time !== time || !sameGroup(last!, e)) {
      minute = minuteRow(minutes, e, time, dialect);
      last = e;
    }
    minute.row.count += 1;
    minute.row.spent_credits += e.spentCredits ?? 0;
    minute.row.latency_sum += e.latency ?? 0;
  }
  const sorted = byId(minutes);
  const coarser = (grain: Grain) => {
    // Summed in the minute rows' order, the coarser rows come out in order too whenever a key's tags are the same
    // all bucket long, and the sort (a merge sort, which finds runs already in order) then costs a pass.
    const rows = new Map<string, AnalyticsKeyVerificationRollupRow>();
    for (const { head, row } of sorted) {
      const time = bucketOf(row.time, grain);
      addRow(rows, `${head}\u0000${time}\u0000${row.tags}`, { ...row, time }, SUMMED);
    }
    return byId(rows);
  };
  return { minute: sorted.map((m) => m.row), hour: coarser('hour'), day: coarser('day'), month: coarser('month') };
}

/** The minute row of `e`'s group at `time` (its bucket), added to `minutes` (summing nothing yet) if new. */
function minuteRow(minutes: Map<string, Minute>, e: VerificationEvent, time: number, dialect: 'sqlite' | 'postgres'): Minute {
  const tags = e.tags ?? NO_TAGS;
  const stored = tags.length === 0 ? (dialect === 'postgres' ? '{}' : '[]') : storedTags(tags, dialect);
  const head = `${e.keyId}\u0000${e.workspaceId}\u0000${e.apiId}\u0000${e.identityId ?? ''}\u0000${e.externalId ?? ''}\u0000${e.code}`;
  const id = `${head}\u0000${time}\u0000${stored}`;
  let minute = minutes.get(id);
  if (minute === undefined) {
    const row = {
      time,
      workspace_id: e.workspaceId,
      key_space_id: e.apiId,
      identity_id: e.identityId ?? '',
      external_id: e.externalId ?? '',
      key_id: e.keyId,
      outcome: e.code,
      tags: stored,
      count: 0,
      spent_credits: 0,
      latency_sum: 0,
    };
    minute = { head, row };
    minutes.set(id, minute);
  }
  return minute;
}

/**
 * Whether two events fall in one roll-up group (but for the time): the members of the minute row's id. Tags compare
 * as the same array (a packed batch gives one array per tag set) or both none; equal tags in two arrays are left to
 * the id.
 */
function sameGroup(a: VerificationEvent, b: VerificationEvent): boolean {
  return (
    a.keyId === b.keyId &&
    a.code === b.code &&
    a.workspaceId === b.workspaceId &&
    a.apiId === b.apiId &&
    (a.identityId ?? '') === (b.identityId ?? '') &&
    (a.externalId ?? '') === (b.externalId ?? '') &&
    (a.tags === b.tags || ((a.tags?.length ?? 0) === 0 && (b.tags?.length ?? 0) === 0))
  );
}

function latestByKey(batch: VerificationEvent[]): Map<string, number> {
  const latest = new Map<string, number>();
  for (const e of batch) if (!(latest.get(e.keyId)! >= e.time)) latest.set(e.keyId, e.time);
  return latest;
}
