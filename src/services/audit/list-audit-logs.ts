import { parseJson } from '../../domain/json.ts';
import type { Db } from '../../store/store.ts';
import type { AuditLogRow } from '../../store/schema.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { ownedRows, splitPage } from '../pagination.ts';

export interface AuditQuery {
  limit: number;
  cursor?: string;
  event?: string;
  targetId?: string;
  since?: number;
  until?: number;
}
export interface AuditLogView {
  id: string;
  time: number;
  event: string;
  actor: { type: string; id: string };
  target: { type: string; id: string };
  requestId?: string;
  description?: string;
  diff?: Record<string, unknown>;
}

/** The workspace's audit records, newest first, `limit` at a time; `cursor` is returned when older records remain. */
export async function listAuditLogs(db: Db, workspaceId: string, q: AuditQuery): Promise<{ logs: AuditLogView[]; cursor?: string }> {
  let query = db.selectFrom('audit_logs').selectAll();
  if (q.since !== undefined) query = query.where('created_at', '>=', q.since);
  if (q.until !== undefined) query = query.where('created_at', '<', q.until);
  // The index of the narrowest filter: audit_logs_target_id (workspace_id, target_id, id), audit_logs_event
  // (workspace_id, event, id), audit_logs_workspace (workspace_id, id).
  const newestFirst = { after: q.cursor, order: 'desc' } as const;
  if (q.targetId) {
    if (q.event) query = query.where('event', '=', q.event);
    query = ownedRows(query.where('workspace_id', '=', workspaceId), 'target_id', q.targetId, newestFirst);
  } else if (q.event) query = ownedRows(query.where('workspace_id', '=', workspaceId), 'event', q.event, newestFirst);
  else query = ownedRows(query, 'workspace_id', workspaceId, newestFirst);
  const rows = await query.limit(q.limit + 1).execute();
  const { page, cursor } = splitPage(rows, q.limit);
  return { logs: page.map(auditLogView), cursor };
}

/** An audit record as audit.listLogs answers it (and `keyhold export audit` writes it). */
export function auditLogView(r: AuditLogRow): AuditLogView {
  return {
    id: r.id,
    time: r.created_at,
    event: r.event,
    actor: { type: r.actor_type, id: r.actor_id },
    target: { type: r.target_type, id: r.target_id },
    requestId: r.request_id ?? undefined,
    description: r.description ?? undefined,
    diff: parseJson(r.diff) ?? undefined,
  };
}

/** audit.listLogs over HTTP: needs `api.*.read_audit` (the log spans every API of the workspace). */
export async function listAuditLogsFor(db: Db, caller: Caller, q: AuditQuery) {
  requirePermissions(caller, 'api.*.read_audit');
  return listAuditLogs(db, caller.workspaceId, q);
}

/**
 * The events of the workspace's latest 10,000 audit records, by name: what the dashboard's event filter
 * suggests (any event can still be typed). Bounded, so a long log costs no more than that to read.
 */
export async function auditEvents(db: Db, caller: Caller): Promise<string[]> {
  requirePermissions(caller, 'api.*.read_audit');
  const recent = ownedRows(db.selectFrom('audit_logs').select('event'), 'workspace_id', caller.workspaceId, { order: 'desc' })
    .limit(10_000)
    .as('recent');
  const rows = await db.selectFrom(recent).select('recent.event').distinct().orderBy('recent.event').execute();
  return rows.map((r) => r.event);
}
