import { notFound } from '../../domain/errors.ts';
import type { EventType } from '../../domain/webhook-events.ts';
import type { Executor } from '../../store/store.ts';
import type { WebhookEndpointRow } from '../../store/schema-webhooks.ts';
import { requirePermissions, type Caller } from '../caller.ts';

/** An endpoint as listEndpoints shows it: never its secret. */
export interface EndpointView {
  endpointId: string;
  url: string;
  events: EventType[];
  description?: string;
  enabled: boolean;
  disabledReason?: string;
  creditsLowBelow: number;
  expiringWithinDays: number;
  createdAt: number;
  updatedAt: number;
}

export const endpointView = (row: WebhookEndpointRow): EndpointView => ({
  endpointId: row.id,
  url: row.url,
  events: JSON.parse(row.events) as EventType[],
  ...(row.description === null ? {} : { description: row.description }),
  enabled: Number(row.enabled) === 1,
  ...(row.disabled_reason === null ? {} : { disabledReason: row.disabled_reason }),
  creditsLowBelow: Number(row.credits_low_below),
  expiringWithinDays: Number(row.expiring_within_days),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

/** The endpoint `endpointId` of the workspace; another workspace's, or none, is a 404. */
export async function requireEndpoint(db: Executor, workspaceId: string, endpointId: string): Promise<WebhookEndpointRow> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', endpointId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound('webhook endpoint', endpointId);
  return row;
}

/** requireEndpoint, then the caller's `webhook.<endpointId>.<action>` (a 403 naming it). */
export async function requireEndpointFor(
  db: Executor,
  caller: Caller,
  endpointId: string,
  action: 'read_endpoint' | 'update_endpoint' | 'delete_endpoint',
): Promise<WebhookEndpointRow> {
  const row = await requireEndpoint(db, caller.workspaceId, endpointId);
  requirePermissions(caller, `webhook.${row.id}.${action}`);
  return row;
}

/** The URL as audit records show it: scheme, host and path; a query string (which may hold a token) is left out. */
export const auditedUrl = (url: string): string => {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
};

/** The workspace of an endpoint (the operator names an endpoint alone); none is a 404. */
export async function workspaceOfEndpoint(db: Executor, endpointId: string): Promise<string> {
  const row = await db.selectFrom('webhook_endpoints').select('workspace_id').where('id', '=', endpointId).executeTakeFirst();
  if (!row) throw notFound('webhook endpoint', endpointId);
  return row.workspace_id;
}
