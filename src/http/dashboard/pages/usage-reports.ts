import { getExport } from '../../../services/usage/exports.ts';
import { listReports, type ReportView } from '../../../services/usage/reports.ts';
import type { Part } from '../html.ts';
import type { PageRouter } from '../context.ts';
import { facts, pager, table, when } from '../components.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';

const PATH = '/dashboard/usage-exports';
const PAGE_SIZE = 50;

const none = html`<span class="muted">—</span>`;

const reportRow = (r: ReportView): Part[] => [
  html`${when(r.periodStart)} – ${when(r.periodEnd)}`,
  r.status,
  String(r.subjects),
  String(r.skipped),
  `${r.requestsSent} / ${r.requests}${r.rejected ? ` (${r.rejected} rejected)` : ''}`,
  String(r.attempts),
  r.lastStatusCode === undefined ? none : String(r.lastStatusCode),
  r.lastError ?? none,
  when(r.nextAttemptAt),
  when(r.deliveredAt),
];

/** One usage export's reports, newest first (a report per period with usage): status, subjects, skipped, requests, attempts. */
export function reportPages(router: PageRouter): void {
  router.get(`${PATH}/:exportId`, async (ctx) => {
    const { exportId } = ctx.params;
    const exp = await getExport(ctx.deps.store.db, ctx.caller, { exportId });
    const page = await listReports(ctx.deps.store.db, ctx.caller, { exportId, limit: PAGE_SIZE, cursor: ctx.query.cursor });
    const main = html`${facts([
      ['Destination', exp.destination],
      ['URL', exp.url],
      ['Subject', exp.subject],
      ['Period', exp.period],
      ['Status', exp.enabled ? 'enabled' : 'disabled'],
      ['Reported until', when(exp.reportedUntil)],
    ])}
<p><a href="${PATH}">All usage exports</a></p>
${table(
  'Reports',
  ['Period', 'Status', 'Subjects', 'Skipped', 'Requests sent', 'Attempts', 'Last status code', 'Last error', 'Next attempt', 'Delivered'],
  page.reports.map(reportRow),
  'No reports yet: a report is written once a period with usage has closed and settled.',
)}
${pager(`${PATH}/${exportId}`, { cursor: ctx.query.cursor }, page.cursor)}`;
    return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Usage reports', main) };
  });
}
