import type { Db } from '../../store/store.ts';
import { auditLogView, type AuditLogView } from './list-audit-logs.ts';

/** A window of time: `since` inclusive, `until` exclusive, in epoch milliseconds; either end may be open. */
export interface ExportWindow {
  since?: number;
  until?: number;
}

/**
 * Rows read per statement: enough that a statement's cost is spread (an index seek), few enough that what is
 * alive at any moment stays small (a larger page measured more RSS growth over a long export).
 */
export const EXPORT_PAGE_ROWS = 100;

/**
 * Every audit record of the workspace in the window, oldest first (by id, which sorts by creation time), as
 * audit.listLogs answers them, a page (an array) at a time: one await per page rather than per record, whose
 * promises would be most of the garbage of a long export. Read by keyset (`id > last`) on the (workspace_id, id) index,
 * so memory stays flat and each page costs the same however far into the log it is; the next page is read
 * only when the consumer has taken the previous one (an async generator), so a slow reader slows the reads.
 */
export async function* auditLogsOldestFirst(
  db: Db,
  workspaceId: string,
  window: ExportWindow,
  pageRows = EXPORT_PAGE_ROWS,
): AsyncGenerator<AuditLogView[]> {
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
    if (rows.length) yield rows.map(auditLogView);
    if (rows.length < pageRows) return;
    after = rows[rows.length - 1].id;
  }
}
