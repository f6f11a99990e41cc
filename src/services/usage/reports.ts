import { OPENMETER_BATCH, type ReportStatus } from '../../domain/usage-exports.ts';
import type { Db } from '../../store/store.ts';
import type { UsageReportRow } from '../../store/schema-usage.ts';
import type { Caller } from '../caller.ts';
import { DEFAULT_PAGE_SIZE, ownedRowsWithin, splitPage } from '../pagination.ts';
import { requireExportFor } from './export-records.ts';
import { attemptsView } from '../webhooks/deliveries.ts';

/** A report as usage.listReports shows it (not its records: they are the billing system's to show). */
export interface ReportView {
  reportId: string;
  exportId: string;
  periodStart: number;
  periodEnd: number;
  status: ReportStatus;
  /** Subjects with a record in the period; `skipped`: those left out (Stripe: no customer id in the meta field). */
  subjects: number;
  skipped: number;
  /** Requests the report is sent in; how many of them are done (accepted, or refused for good); how many were refused for good. */
  requests: number;
  requestsSent: number;
  rejected: number;
  attempts: number;
  lastStatusCode?: number;
  lastError?: string;
  nextAttemptAt?: number;
  createdAt: number;
  deliveredAt?: number;
}

const reportView = (r: UsageReportRow, requests: number): ReportView => ({
  reportId: r.id,
  exportId: r.export_id,
  periodStart: Number(r.period_start),
  periodEnd: Number(r.period_end),
  status: r.status as ReportStatus,
  subjects: Number(r.subjects),
  skipped: Number(r.skipped),
  requests,
  requestsSent: Number(r.requests_sent),
  rejected: Number(r.rejected ?? 0),
  ...attemptsView(r),
});

/** usage.listReports: an export's reports, newest first, with cursor pagination. Needs `usage.<exportId>.read_export`. */
export async function listReports(
  db: Db,
  caller: Caller,
  q: { exportId: string; status?: ReportStatus; limit?: number; cursor?: string },
): Promise<{ reports: ReportView[]; cursor?: string }> {
  const exp = await requireExportFor(db, caller, q.exportId, 'read_export');
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  const reports = db
    .selectFrom('usage_reports')
    .select(['id', 'export_id', 'period_start', 'period_end', 'status', 'subjects', 'skipped', 'requests_sent', 'rejected', 'attempts'])
    .select(['last_status_code', 'last_error', 'next_attempt_at', 'created_at', 'updated_at', 'delivered_at', 'workspace_id']);
  // With a status: index usage_reports_status (export_id, status, id).
  const status = { column: 'status', value: q.status };
  const rows = await ownedRowsWithin(reports, 'export_id', q.exportId, status, { after: q.cursor, order: 'desc' })
    .limit(limit + 1)
    .execute();
  const { page, cursor } = splitPage(rows, limit);
  const perRequest = exp.destination === 'stripe' ? 1 : OPENMETER_BATCH;
  return {
    reports: page.map((r) => reportView({ ...r, content: '' }, Math.ceil(Number(r.subjects) / perRequest))),
    ...(cursor === undefined ? {} : { cursor }),
  };
}
