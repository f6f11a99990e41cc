import { newId } from '../../domain/ids.ts';
import type { Executor } from '../../store/store.ts';
import { insertRows } from '../../store/bulk-statements.ts';
import type { AuditLogRow } from '../../store/schema.ts';
import { actorOf, type Actor, type Caller } from '../caller.ts';

export interface AuditEntry {
  workspaceId: string;
  event: string;
  actor: Actor;
  target: { type: string; id: string };
  requestId?: string;
  description?: string;
  /** What changed; never a secret. */
  diff?: Record<string, unknown>;
}

/** An audit entry of something the caller did: workspace, actor and request id come from the caller. */
export const callerAudit = (
  caller: Caller,
  event: string,
  target: AuditEntry['target'],
  details: Pick<AuditEntry, 'description' | 'diff'> = {},
): AuditEntry => ({ workspaceId: caller.workspaceId, event, actor: actorOf(caller), target, requestId: caller.requestId, ...details });

/**
 * Appends audit records; call it with the transaction of the change it describes so both commit together.
 * Any number of them (apis.deleteKeys records one per key): in statements within the bound-parameter limits.
 */
export async function recordAudit(db: Executor, entries: AuditEntry[], now = Date.now()): Promise<void> {
  await insertRows(db, 'audit_logs', auditRows(entries, now));
}

/** The audit_logs rows of `entries`, for a caller that inserts them together with the rows they describe. */
export const auditRows = (entries: AuditEntry[], now = Date.now()): AuditLogRow[] =>
  entries.map((e) => ({
    id: newId('log'),
    workspace_id: e.workspaceId,
    event: e.event,
    actor_type: e.actor.type,
    actor_id: e.actor.id,
    target_type: e.target.type,
    target_id: e.target.id,
    request_id: e.requestId ?? null,
    description: e.description ?? null,
    diff: e.diff ? JSON.stringify(e.diff) : null,
    created_at: now,
  }));
