import { newId } from '../../domain/ids.ts';
import { REPORT_STATUSES, type ReportStatus } from '../../domain/usage-exports.ts';
import { operatorCaller } from '../../services/caller.ts';
import { requireWorkspace } from '../../services/lookups.ts';
import { listExports } from '../../services/usage/exports.ts';
import { listReports } from '../../services/usage/reports.ts';
import { type CommandGroup, UsageError, integerOption, requiredOption, stringOption } from '../command.ts';

const iso = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());

const WORKSPACE = { type: 'string', required: true, value: 'W', description: 'the workspace (ws_…)' } as const;

/** `keyhold usage …`: a workspace's usage exports and their reports (docs/usage-billing.md). */
export const USAGE_COMMANDS: CommandGroup = {
  'usage list': {
    summary: "Lists a workspace's usage exports (never their tokens).",
    options: { workspace: WORKSPACE },
    prints: '{"exports":[{"exportId","destination","url","subject","period","outcomes","enabled","reportedUntil",…}…]}',
    async run({ store, actor }, values) {
      const workspaceId = requiredOption(values, 'workspace');
      await requireWorkspace(store.db, workspaceId);
      const r = await listExports(store.db, operatorCaller(workspaceId, actor, newId('req')));
      const lines = r.exports.map(
        (e) =>
          `${e.exportId}  ${e.enabled ? 'enabled' : 'disabled'}  ${e.destination}  ${e.subject} per ${e.period}  ${e.url}  reported until ${iso(e.reportedUntil)}`,
      );
      return { json: r, text: lines.join('\n') || 'no usage exports' };
    },
  },
  'usage reports': {
    summary: "Lists a usage export's reports (one per period with usage), newest first.",
    options: {
      workspace: WORKSPACE,
      export: { type: 'string', required: true, value: 'E', description: 'the usage export (uexp_…)' },
      status: { type: 'string', value: 'S', description: 'only pending, delivered or failed ones' },
      limit: { type: 'string', value: 'N', description: 'at most N reports (1..100, default 100)' },
      cursor: { type: 'string', value: 'C', description: 'the cursor printed with the previous page' },
    },
    prints:
      '{"reports":[{"reportId","periodStart","periodEnd","status","subjects","skipped","requests","requestsSent","rejected","attempts",…}…],"cursor"?}',
    async run({ store, actor }, values) {
      const workspaceId = requiredOption(values, 'workspace');
      const exportId = requiredOption(values, 'export');
      const status = stringOption(values, 'status') as ReportStatus | undefined;
      if (status !== undefined && !REPORT_STATUSES.includes(status))
        throw new UsageError(`--status must be one of ${REPORT_STATUSES.join(', ')}`);
      const limit = integerOption(values, 'limit', 100, 1, 100);
      await requireWorkspace(store.db, workspaceId);
      const caller = operatorCaller(workspaceId, actor, newId('req'));
      const r = await listReports(store.db, caller, { exportId, status, limit, cursor: stringOption(values, 'cursor') });
      const lines = r.reports.map(
        (p) =>
          `${p.reportId}  ${iso(p.periodStart)}..${iso(p.periodEnd)}  ${p.status}  ${p.subjects} subject(s)  ${p.skipped} skipped  ${p.requestsSent}/${p.requests} request(s) (${p.rejected} rejected)  ${p.attempts} attempt(s)  last ${p.lastStatusCode ?? '-'}  next ${iso(p.nextAttemptAt)}`,
      );
      return { json: r, text: `${lines.join('\n') || 'no reports'}${r.cursor ? `\nmore: --cursor ${r.cursor}` : ''}` };
    },
  },
};
