import type { World } from '../helpers/harness.ts';

/**
 * A webhook endpoint (to a public address no test reaches) with one delivery of a test event, for the seeds;
 * undefined when `endpointId` is still there (a workspace holds few endpoints: reseeding everything must not
 * reach that bound). It receives test events only: the fuzz's verifications and rate limits must not write
 * events in the background.
 */
export async function seedWebhook(
  w: World,
  root: string,
  endpointId?: string,
): Promise<{ endpointId: string; deliveryId: string } | undefined> {
  if (endpointId && (await w.store.db.selectFrom('webhook_endpoints').select('id').where('id', '=', endpointId).executeTakeFirst()))
    return undefined;
  const created = await w.post<{ endpointId: string }>(
    '/v1/webhooks.createEndpoint',
    { url: 'https://93.184.216.34/fuzz', events: ['webhook.test'] },
    root,
  );
  if (created.status !== 200) throw new Error(`seeding: webhooks.createEndpoint answered ${created.status} ${created.body}`);
  const sent = await w.post<{ eventId: string }>('/v1/webhooks.sendTestEvent', { endpointId: created.json.endpointId }, root);
  if (sent.status !== 200) throw new Error(`seeding: webhooks.sendTestEvent answered ${sent.status} ${sent.body}`);
  const delivery = await w.store.db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('event_id', '=', sent.json.eventId)
    .executeTakeFirstOrThrow();
  return { endpointId: created.json.endpointId, deliveryId: delivery.id };
}
