import { AppError } from '../../domain/errors.ts';
import { auditLogsOldestFirst, type ExportWindow } from '../../services/audit/export-audit-logs.ts';
import { verificationsOldestFirst } from '../../services/analytics/export-verifications.ts';
import { requireWorkspace } from '../../services/lookups.ts';
import type { Db } from '../../store/store.ts';
import { type CommandGroup, type OptionSpec, epochMsOption, requiredOption, UsageError } from '../command.ts';

const WINDOW_OPTIONS: Record<string, OptionSpec> = {
  workspace: { type: 'string', required: true, value: 'W', description: 'the workspace whose records to export' },
  since: { type: 'string', value: 'MS', description: 'only records from this time on, in epoch milliseconds (inclusive)' },
  until: { type: 'string', value: 'MS', description: 'only records before this time, in epoch milliseconds (exclusive)' },
};

/** The workspace and window of an export, checked before a line is written: a bad one is a usage error (exit 2). */
async function exportScope(db: Db, values: Record<string, unknown>): Promise<{ workspaceId: string; window: ExportWindow }> {
  const workspaceId = requiredOption(values, 'workspace');
  const window = { since: epochMsOption(values, 'since'), until: epochMsOption(values, 'until') };
  if (window.since !== undefined && window.until !== undefined && window.since >= window.until)
    throw new UsageError('--since must be before --until');
  try {
    await requireWorkspace(db, workspaceId);
  } catch (e) {
    if (e instanceof AppError) throw new UsageError(`workspace ${workspaceId} not found`);
    throw e;
  }
  return { workspaceId, window };
}

async function* jsonLines(pages: AsyncIterable<object[]>): AsyncGenerator<string[]> {
  for await (const page of pages) yield page.map((record) => JSON.stringify(record));
}

/**
 * Taking records elsewhere (a SIEM, a warehouse, S3) before retention removes them: NDJSON on stdout, oldest
 * first, read a page at a time and written at the pace stdout takes it, so memory stays flat however many.
 */
export const EXPORT_COMMANDS: CommandGroup = {
  'export audit': {
    summary: "Writes the workspace's audit records to stdout as NDJSON, oldest first, each as audit.listLogs returns it.",
    options: WINDOW_OPTIONS,
    prints: '{"id","time","event","actor","target",…}',
    streams: true,
    async run({ store }, values) {
      const { workspaceId, window } = await exportScope(store.db, values);
      return { lines: jsonLines(auditLogsOldestFirst(store.db, workspaceId, window)) };
    },
  },
  'export verifications': {
    summary:
      "Writes the workspace's verification counts per key and UTC hour to stdout as NDJSON, oldest first, with analytics.getVerifications' field names.",
    options: WINDOW_OPTIONS,
    prints: '{"time","apiId","keyId","valid",…,"total"}',
    streams: true,
    async run({ store }, values) {
      const { workspaceId, window } = await exportScope(store.db, values);
      return { lines: jsonLines(verificationsOldestFirst(store.db, workspaceId, window)) };
    },
  },
};
