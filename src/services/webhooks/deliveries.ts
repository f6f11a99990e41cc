import { AppError, notFound } from '../../domain/errors.ts';
import { announceJobs } from '../../jobs/queue.ts';
import type { Db } from '../../store/store.ts';
import type { WebhookDeliveryRow } from '../../store/schema-webhooks.ts';
import { callerAudit, recordAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { DEFAULT_PAGE_SIZE, ownedRowsWithin, splitPage } from '../pagination.ts';
import { requireEndpointFor } from './endpoint-records.ts';
import { emitEvent, scheduleAttempt } from './emit.ts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryView {
  deliveryId: string;
  eventId: string;
  type: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode?: number;
  lastError?: string;
  nextAttemptAt?: number;
  createdAt: number;
  deliveredAt?: number;
}

/** The columns an outbox row (a webhook delivery, a usage report) keeps of its attempts. */
type AttemptColumns = Pick<
  WebhookDeliveryRow,
  'attempts' | 'last_status_code' | 'last_error' | 'next_attempt_at' | 'created_at' | 'delivered_at'
>;

/** What an outbox row's attempts came to, as the API shows it (the members of DeliveryView and usage's ReportView alike). */
export const attemptsView = (r: AttemptColumns) => ({
  attempts: Number(r.attempts),
  ...(r.last_status_code === null ? {} : { lastStatusCode: Number(r.last_status_code) }),
  ...(r.last_error === null ? {} : { lastError: r.last_error }),
  ...(r.next_attempt_at === null ? {} : { nextAttemptAt: Number(r.next_attempt_at) }),
  createdAt: Number(r.created_at),
  ...(r.delivered_at === null ? {} : { deliveredAt: Number(r.delivered_at) }),
});

export const deliveryView = (r: WebhookDeliveryRow): DeliveryView => ({
  deliveryId: r.id,
  eventId: r.event_id,
  type: r.type,
  status: r.status as DeliveryStatus,
  ...attemptsView(r),
});

/** webhooks.listDeliveries: an endpoint's deliveries, newest first, with cursor pagination. Needs `webhook.<endpointId>.read_endpoint`. */
export async function listDeliveries(
  db: Db,
  caller: Caller,
  q: { endpointId: string; status?: DeliveryStatus; limit?: number; cursor?: string },
): Promise<{ deliveries: DeliveryView[]; cursor?: string }> {
  await requireEndpointFor(db, caller, q.endpointId, 'read_endpoint');
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  // With a status: index webhook_deliveries_status (endpoint_id, status, id).
  const status = { column: 'status', value: q.status };
  const rows = await ownedRowsWithin(db.selectFrom('webhook_deliveries').selectAll(), 'endpoint_id', q.endpointId, status, {
    after: q.cursor,
    order: 'desc',
  })
    .limit(limit + 1)
    .execute();
  const { page, cursor } = splitPage(rows, limit);
  return { deliveries: page.map(deliveryView), ...(cursor === undefined ? {} : { cursor }) };
}

/**
 * webhooks.retryDelivery: one more attempt, at once, of a delivery that failed (or is waiting for its next
 * attempt); it keeps its event, so the same `webhook-id`. A delivered one is a 412. Needs `webhook.<endpointId>.update_endpoint`.
 */
export async function retryDelivery(db: Db, caller: Caller, input: { deliveryId: string }): Promise<Record<string, never>> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', input.deliveryId)
    .where('workspace_id', '=', caller.workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound('webhook delivery', input.deliveryId);
  requirePermissions(caller, `webhook.${row.endpoint_id}.update_endpoint`);
  if (row.status === 'delivered') throw new AppError('state/precondition-failed', `delivery ${row.id} was delivered already`);
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    await tx
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now, updated_at: now })
      .where('id', '=', row.id)
      .execute();
    await scheduleAttempt(tx, row.id, now);
    await recordAudit(tx, [callerAudit(caller, 'webhook.retry_delivery', { type: 'webhookDelivery', id: row.id })], now);
  });
  announceJobs();
  return {};
}

/** webhooks.sendTestEvent: a `webhook.test` event to this endpoint alone. Needs `webhook.<endpointId>.update_endpoint`. */
export async function sendTestEvent(db: Db, caller: Caller, input: { endpointId: string }): Promise<{ eventId: string }> {
  await requireEndpointFor(db, caller, input.endpointId, 'update_endpoint');
  const eventId = await db.transaction().execute(async (tx) => {
    const id = await emitEvent(
      tx,
      caller.workspaceId,
      'webhook.test',
      { endpointId: input.endpointId },
      { endpointIds: [input.endpointId] },
    );
    await recordAudit(tx, [callerAudit(caller, 'webhook.send_test_event', { type: 'webhookEndpoint', id: input.endpointId })]);
    return id!;
  });
  announceJobs();
  return { eventId };
}
