import type { Vault } from '../../crypto/vault.ts';
import type { Job, TaskDefinition } from '../../jobs/queue.ts';
import type { Db, Tx } from '../../store/store.ts';
import type { WebhookDeliveryRow, WebhookEndpointRow } from '../../store/schema-webhooks.ts';
import { attempt, type AttemptResult, type SendTracing } from './attempt.ts';
import { scheduleAttempt, type DeliverPayload } from './emit.ts';
import type { WebhookSettings } from '../../config/webhooks.ts';
import { FAILING_DISABLE_MS, nextDelay } from './delivery-rules.ts';
import { signatureHeader } from './signing.ts';

/** Attempts recorded by this process, by outcome (for /metrics): delivered, retried later, failed for good. */
export const deliveryOutcomes = { delivered: 0, retried: 0, failed: 0 };

/** When the oldest pending delivery was created (epoch ms), or null: one read of the pending deliveries' index. */
export async function oldestPendingDelivery(db: Db): Promise<number | null> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.min('created_at').as('oldest'))
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest);
}

/** What `prepare` found: nothing to do, or the outcome of the attempt it made. */
type Prepared = { skip: true } | { skip: false; result: AttemptResult; at: number };

/** The delivery this job attempts, if it is still this job's to attempt (pending, not rescheduled since). */
async function currentDelivery(db: Db | Tx, payload: DeliverPayload): Promise<WebhookDeliveryRow | undefined> {
  const row = await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', payload.deliveryId).executeTakeFirst();
  return row && row.status === 'pending' && Number(row.next_attempt_at) === payload.at ? row : undefined;
}

/** The endpoint's signing secrets: the current one, and the previous one while the rotation overlap lasts. */
async function secretsOf(db: Db, vault: Vault, endpoint: WebhookEndpointRow, now: number): Promise<string[]> {
  const sealed = [{ dataKeyId: endpoint.secret_data_key_id, ciphertext: endpoint.secret_ciphertext }];
  if (endpoint.previous_secret_ciphertext && endpoint.previous_secret_data_key_id && Number(endpoint.previous_secret_until) > now)
    sealed.push({ dataKeyId: endpoint.previous_secret_data_key_id, ciphertext: endpoint.previous_secret_ciphertext });
  return vault.decrypt(db, endpoint.workspace_id, sealed);
}

/** One attempt of a delivery, over the network, outside any transaction (a span of its own when traced). */
async function prepare(
  db: Db,
  vault: Vault,
  settings: WebhookSettings,
  payload: DeliverPayload,
  tracing: SendTracing | undefined,
): Promise<Prepared> {
  const delivery = await currentDelivery(db, payload);
  if (!delivery) return { skip: true };
  const endpoint = await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', delivery.endpoint_id).executeTakeFirst();
  if (!endpoint) return { skip: true };
  const at = Date.now();
  if (Number(endpoint.enabled) !== 1) return { skip: false, result: { error: 'the endpoint is disabled' }, at };
  const event = await db.selectFrom('webhook_events').select('body').where('id', '=', delivery.event_id).executeTakeFirstOrThrow();
  const timestamp = Math.floor(at / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Keyhold-Webhooks/1',
    'webhook-id': delivery.event_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(await secretsOf(db, vault, endpoint, at), delivery.event_id, timestamp, event.body),
  };
  const send = (sent: Record<string, string>) => attempt(endpoint.url, sent, event.body, settings);
  return { skip: false, result: await (tracing ? tracing.send(endpoint.url, headers, send) : send(headers)), at };
}

const ok = (r: AttemptResult) => r.statusCode !== undefined && r.statusCode >= 200 && r.statusCode < 300;

/** Records the attempt: delivered, or the next attempt scheduled, or failed for good; and what it says of the endpoint. */
async function record(tx: Tx, settings: WebhookSettings, payload: DeliverPayload, prepared: Prepared): Promise<Outcome | undefined> {
  if (prepared.skip) return undefined;
  const delivery = await currentDelivery(tx, payload);
  if (!delivery) return undefined;
  const { result, at } = prepared;
  const attempts = Number(delivery.attempts) + 1;
  const common = { attempts, last_status_code: result.statusCode ?? null, updated_at: at };
  const endpoints = tx.updateTable('webhook_endpoints').where('id', '=', delivery.endpoint_id);
  if (ok(result)) {
    await tx
      .updateTable('webhook_deliveries')
      .set({ ...common, status: 'delivered', last_error: null, next_attempt_at: null, delivered_at: at })
      .where('id', '=', delivery.id)
      .execute();
    await endpoints.set({ failing_since: null }).execute();
    return 'delivered';
  }
  const gone = result.statusCode === 410;
  const delay = gone || result.error === 'the endpoint is disabled' ? undefined : nextDelay(settings.retrySchedule, attempts);
  const next = delay === undefined ? null : at + delay;
  await tx
    .updateTable('webhook_deliveries')
    .set({ ...common, status: next === null ? 'failed' : 'pending', last_error: result.error ?? null, next_attempt_at: next })
    .where('id', '=', delivery.id)
    .execute();
  if (next !== null) await scheduleAttempt(tx, delivery.id, next);
  const outcome = next === null ? 'failed' : 'retried';
  if (gone) {
    await endpoints.set({ enabled: 0, disabled_reason: 'the endpoint answered 410 Gone', updated_at: at }).execute();
    return outcome;
  }
  const endpoint = await tx
    .selectFrom('webhook_endpoints')
    .select(['failing_since', 'enabled'])
    .where('id', '=', delivery.endpoint_id)
    .executeTakeFirst();
  if (!endpoint || Number(endpoint.enabled) !== 1) return outcome;
  const since = endpoint.failing_since === null ? at : Number(endpoint.failing_since);
  if (at - since >= FAILING_DISABLE_MS)
    await endpoints.set({ enabled: 0, disabled_reason: 'every attempt failed for 5 days', updated_at: at }).execute();
  else if (endpoint.failing_since === null) await endpoints.set({ failing_since: at }).execute();
  return outcome;
}

type Outcome = keyof typeof deliveryOutcomes;

/** The `webhook.deliver` task: an attempt over the network (prepare), then its outcome recorded with the job's completion. */
export function deliveryTask(
  db: Db,
  vault: Vault | undefined,
  settings: WebhookSettings,
  tracing?: SendTracing,
): TaskDefinition<DeliverPayload> {
  return {
    prepare: (payload: DeliverPayload, _job: Job<DeliverPayload>) =>
      vault ? prepare(db, vault, settings, payload, tracing) : Promise.resolve<Prepared>({ skip: true }),
    // Counted when recorded (a transaction that then fails to commit is counted too: rare, and retried).
    run: async (tx, payload, _job, prepared) => {
      const outcome = await record(tx, settings, payload, prepared as Prepared);
      if (outcome) deliveryOutcomes[outcome]++;
    },
  };
}
