import type { Db } from '../../store/store.ts';
import { auditLogView, type AuditLogView } from './list-audit-logs.ts';

/** A window of time: `since` inclusive, `until` exclusive, in epoch milliseconds; either end may be open. */
export interface ExportWindow {
  since?: number;
  until?: number;
}

/** Rows read per statement: large enough that a statement's cost is spread, small enough to keep memory flat. */
export const EXPORT_PAGE_ROWS = 1000;

/**
 * Every audit record of the workspace in the window, oldest first (by id, which sorts by creation time), as
 * audit.listLogs answers them. Read a page at a time by keyset (`id > last`) on the (workspace_id, id) index,
 * so memory stays flat and each page costs the same however far into the log it is; the next page is read
 * only when the consumer has taken the previous one (an async generator), so a slow reader slows the reads.
 */
export async function* auditLogsOldestFirst(
  db: Db,
  workspaceId: string,
  window: ExportWindow,
  pageRows = EXPORT_PAGE_ROWS,
): AsyncGenerator<AuditLogView> {
  let after: string | undefined;
  for (;;) {
    const rows = await db
      .selectFrom('audit_logs')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .$if(after !== undefined, (q) => q.where('id', '>', after!))
      .$if(window.since !== undefined, (q) => q.where('created_at', '>=', window.since!))
      .$if(window.until !== undefined, (q) => q.where('created_at', '<', window.until!))
      .orderBy('id', 'asc')
      .limit(pageRows)
      .execute();
    for (const row of rows) yield auditLogView(row);
    if (rows.length < pageRows) return;
    after = rows[rows.length - 1].id;
  }
}
