import { newId } from '../../domain/ids.ts';
import { PERIOD_MS, type UsagePeriod } from '../../domain/usage-exports.ts';
import type { RetentionConfig } from '../../config/retention.ts';
import { announceJobs } from '../../jobs/queue.ts';
import type { Db } from '../../store/store.ts';
import type { UsageExportRow } from '../../store/schema-usage.ts';
import { bucketOf } from '../analytics/rollups.ts';
import { periodUsage } from './report-content.ts';
import { scheduleSend } from './send-task.ts';

/** How often each server looks for periods to report. */
export const USAGE_SCAN_INTERVAL_MS = 5_000;
/** Periods one scan reports per export at most, oldest first (after an outage the next scans go on). */
const MAX_PERIODS_PER_SCAN = 60;
/** Exports one scan looks at, at most, the longest due first. */
const MAX_EXPORTS_PER_SCAN = 100;
const DAY_MS = 86_400_000;

export interface ScanSettings {
  settleMs: number;
  /** The roll-ups' retention: a period older than its grain's roll-ups is not reported (there is nothing to report it from). */
  retention?: RetentionConfig;
}

/** How long the roll-up a period is summed from is kept (ms; 0: forever). */
function keptMs(period: UsagePeriod, retention: RetentionConfig | undefined): number {
  if (!retention) return 0;
  const days =
    period === 'minute' ? retention.analyticsMinuteDays : period === 'hour' ? retention.analyticsDays : retention.analyticsDayDays;
  return days * DAY_MS;
}

/**
 * The next period of `exp` to report: its cursor, or, when the roll-ups of the periods since have been pruned, the
 * oldest period still kept.
 */
function nextPeriod(exp: UsageExportRow, settings: ScanSettings, now: number): number {
  const period = exp.period as UsagePeriod;
  const kept = keptMs(period, settings.retention);
  const start = Number(exp.next_period_start);
  return kept > 0 ? Math.max(start, bucketOf(now - kept, period) + PERIOD_MS[period]) : start;
}

/**
 * Reports `exp`'s next period if it has closed and settled: its usage is read first (outside any transaction), then
 * one transaction claims the period by moving the export's cursor past it — only if the cursor is still where it was
 * read (another server that claimed it first moved it: this one then writes nothing) — and writes the report, with
 * its first attempt as a job, when some subject used anything. Returns whether the period was claimed.
 */
async function claimNextPeriod(db: Db, exp: UsageExportRow, settings: ScanSettings, now: number): Promise<boolean> {
  const periodMs = PERIOD_MS[exp.period as UsagePeriod];
  const start = nextPeriod(exp, settings, now);
  if (start + periodMs > now - settings.settleMs) return false;
  const { content, skipped } = await periodUsage(db, exp, start);
  return db.transaction().execute(async (tx) => {
    const claimed = await tx
      .updateTable('usage_exports')
      .set({ next_period_start: start + periodMs, next_period_end: start + 2 * periodMs })
      .where('id', '=', exp.id)
      .where('enabled', '=', 1)
      .where('next_period_start', '=', exp.next_period_start)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) return false;
    exp.next_period_start = start + periodMs;
    if (content.records.length === 0 && skipped === 0) return true;
    const id = newId('urep');
    // The report is written, and its first attempt due, at the clock's time (`now` only judges which periods have closed).
    const at = Date.now();
    await tx
      .insertInto('usage_reports')
      .values({
        id,
        workspace_id: exp.workspace_id,
        export_id: exp.id,
        period_start: start,
        period_end: start + periodMs,
        status: 'pending',
        content: JSON.stringify(content),
        subjects: content.records.length,
        skipped,
        requests_sent: 0,
        attempts: 0,
        last_status_code: null,
        last_error: null,
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
        delivered_at: null,
      })
      .execute();
    await scheduleSend(tx, id, at);
    return true;
  });
}

/**
 * One scan: every enabled export whose next period has closed reports its closed periods in order, up to
 * MAX_PERIODS_PER_SCAN each. Returns the periods claimed by this server.
 */
export async function reportDuePeriods(db: Db, settings: ScanSettings, now = Date.now()): Promise<number> {
  const due = await db
    .selectFrom('usage_exports')
    .selectAll()
    .where('enabled', '=', 1)
    .where('next_period_end', '<=', now - settings.settleMs)
    .orderBy('next_period_end')
    .limit(MAX_EXPORTS_PER_SCAN)
    .execute();
  let claimed = 0;
  for (const exp of due) {
    for (let i = 0; i < MAX_PERIODS_PER_SCAN; i++) {
      if (!(await claimNextPeriod(db, exp, settings, now))) break;
      claimed++;
    }
  }
  if (claimed > 0) announceJobs();
  return claimed;
}

/**
 * Scans every `intervalMs` until the returned function is called (it resolves once a scan in flight has ended, so the
 * store can close after it); a failed scan is reported to `onError`, and the next one goes on.
 */
export function startUsageScans(
  db: Db,
  settings: ScanSettings,
  onError: (err: unknown) => void,
  intervalMs = USAGE_SCAN_INTERVAL_MS,
): () => Promise<void> {
  let inFlight: Promise<void> | undefined;
  const timer = setInterval(() => {
    inFlight ??= reportDuePeriods(db, settings)
      .then(() => undefined, onError)
      .finally(() => {
        inFlight = undefined;
      });
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await inFlight;
  };
}
