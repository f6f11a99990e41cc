import { newId } from '../../domain/ids.ts';
import type { EventType } from '../../domain/webhook-events.ts';
import { enqueue, jobRow } from '../../jobs/queue.ts';
import { insertOf, insertTogether } from '../../store/insert-together.ts';
import type { Condition } from '../../store/insert-unless.ts';
import type { WebhookDeliveryRow } from '../../store/schema-webhooks.ts';
import type { Executor } from '../../store/store.ts';
import type { ChangeSet } from '../changes.ts';

/** The payload of a `webhook.deliver` job: one attempt of one delivery. */
export interface DeliverPayload {
  deliveryId: string;
  /**
   * The delivery's `next_attempt_at` this attempt was scheduled as: an attempt whose delivery has been
   * rescheduled since (retryDelivery) does nothing, so a delivery never has two attempts at once.
   */
  at: number;
}

declare module '../../jobs/queue.ts' {
  interface TaskPayloads {
    'webhook.deliver': DeliverPayload;
  }
}

/** A delivery job never fails for the queue: the delivery records its own attempts and schedule. */
export const DELIVERY_JOB_ATTEMPTS = 3;

/**
 * Schedules an attempt of a delivery as a job, with `db` (the transaction that creates or retries the
 * delivery, so the attempt exists exactly when the delivery does). Call `announceJobs()` after the commit.
 */
export async function scheduleAttempt(db: Executor, deliveryId: string, runAt: number): Promise<void> {
  await enqueue(db, 'webhook.deliver', { deliveryId, at: runAt }, { runAt, maxAttempts: DELIVERY_JOB_ATTEMPTS });
}

/** The enabled endpoints of the workspace that receive `type`: read before a change, to know whether it emits anything. */
export async function subscribedEndpoints(db: Executor, workspaceId: string, type: EventType): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'events'])
    .where('workspace_id', '=', workspaceId)
    .where('enabled', '=', 1)
    .execute();
  return rows.filter((e) => (JSON.parse(e.events) as string[]).includes(type)).map((e) => e.id);
}

/**
 * A condition that holds when some enabled endpoint of the workspace may receive `type`: for a change that
 * emits nothing in the common case, written with insertTogetherUnless so that the check costs no statement of
 * its own. It holds for every endpoint subscribedEndpoints names (the events are stored as a JSON array of
 * event names, in which each name appears quoted); where it holds, the change reads them and emits as usual.
 */
export const mayReceive = (workspaceId: string, type: EventType): Condition => ({
  sql: 'select 1 from webhook_endpoints where workspace_id = ? and enabled = 1 and events like ?',
  parameters: [workspaceId, `%${JSON.stringify(type)}%`],
});

export interface EmitOptions {
  /** The endpoints to deliver to (a test event's one, or subscribedEndpoints read before); default: those subscribed now. */
  endpointIds?: string[];
  now?: number;
  /** The transaction's change set: its workers are woken after the commit (transact). Without it, call announceJobs(). */
  changes?: ChangeSet;
  /** Names the occurrence: an event whose key was written already (by any server) is not written again. */
  dedupeKey?: string;
}

/**
 * The outbox: records an event of the workspace with `tx`, the transaction of the change that causes it, and
 * a delivery with its first attempt for every endpoint that receives it. A rolled-back change leaves neither;
 * a committed one is delivered, across restarts. Nothing is written when no endpoint receives the event.
 * Returns the event id (`evt_…`), or undefined then.
 */
export async function emitEvent(
  tx: Executor,
  workspaceId: string,
  type: EventType,
  data: Record<string, unknown>,
  opts: EmitOptions = {},
): Promise<string | undefined> {
  const now = opts.now ?? Date.now();
  const endpoints = opts.endpointIds ?? (await subscribedEndpoints(tx, workspaceId, type));
  if (endpoints.length === 0) return undefined;
  const eventId = newId('evt');
  const body = JSON.stringify({ type, timestamp: new Date(now).toISOString(), data });
  const written = await tx
    .insertInto('webhook_events')
    .values({ id: eventId, workspace_id: workspaceId, type, body, dedupe_key: opts.dedupeKey ?? null, created_at: now })
    .onConflict((oc) => oc.column('dedupe_key').doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!written) return undefined;
  for (const endpointId of endpoints) {
    const delivery = deliveryRow(workspaceId, endpointId, eventId, type, now);
    await tx.insertInto('webhook_deliveries').values(delivery).execute();
    await scheduleAttempt(tx, delivery.id, now);
  }
  if (opts.changes) opts.changes.jobsEnqueued = true;
  return eventId;
}

/** Events written per statement group by emitEvents. */
const EMIT_CHUNK = 200;

/**
 * emitEvent for many events of one type at once (a batch deletion's key.deleted, one per key): the same rows
 * (an event, and a delivery with its first attempt per endpoint subscribed now), inserted together
 * EMIT_CHUNK events at a time. Events of a batch have no dedupe key. Returns how many events were written.
 */
export async function emitEvents(
  tx: Executor,
  workspaceId: string,
  type: EventType,
  datas: ReadonlyArray<Record<string, unknown>>,
  opts: Pick<EmitOptions, 'now' | 'changes'> = {},
): Promise<number> {
  if (datas.length === 0) return 0;
  const now = opts.now ?? Date.now();
  const endpoints = await subscribedEndpoints(tx, workspaceId, type);
  if (endpoints.length === 0) return 0;
  for (let i = 0; i < datas.length; i += EMIT_CHUNK) {
    const events = datas.slice(i, i + EMIT_CHUNK).map((data) => ({
      id: newId('evt'),
      workspace_id: workspaceId,
      type,
      body: JSON.stringify({ type, timestamp: new Date(now).toISOString(), data }),
      dedupe_key: null,
      created_at: now,
    }));
    const deliveries = events.flatMap((e) => endpoints.map((endpointId) => deliveryRow(workspaceId, endpointId, e.id, type, now)));
    const jobs = deliveries.map((d) =>
      jobRow('webhook.deliver', { deliveryId: d.id, at: now }, { runAt: now, maxAttempts: DELIVERY_JOB_ATTEMPTS, now }),
    );
    await insertTogether(tx, [insertOf('webhook_events', events), insertOf('webhook_deliveries', deliveries), insertOf('jobs', jobs)]);
  }
  if (opts.changes) opts.changes.jobsEnqueued = true;
  return datas.length;
}

/** A new pending delivery of an event to one endpoint, its first attempt due at `now`. */
function deliveryRow(workspaceId: string, endpointId: string, eventId: string, type: EventType, now: number): WebhookDeliveryRow {
  return {
    id: newId('whdl'),
    workspace_id: workspaceId,
    endpoint_id: endpointId,
    event_id: eventId,
    type,
    status: 'pending',
    attempts: 0,
    last_status_code: null,
    last_error: null,
    next_attempt_at: now,
    created_at: now,
    updated_at: now,
    delivered_at: null,
  };
}
