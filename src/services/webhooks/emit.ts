import { newId } from '../../domain/ids.ts';
import type { EventType } from '../../domain/webhook-events.ts';
import { enqueue } from '../../jobs/queue.ts';
import type { Condition } from '../../store/insert-unless.ts';
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
    const deliveryId = newId('whdl');
    await tx
      .insertInto('webhook_deliveries')
      .values({
        id: deliveryId,
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
      })
      .execute();
    await scheduleAttempt(tx, deliveryId, now);
  }
  if (opts.changes) opts.changes.jobsEnqueued = true;
  return eventId;
}
