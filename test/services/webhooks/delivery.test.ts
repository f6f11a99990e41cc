import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { startWebhookWorker } from '../../helpers/webhook-world.ts';
import type { Worker } from '../../../src/jobs/worker.ts';
import type { WebhookSettings } from '../../../src/config/webhooks.ts';
import { until, verifiedPayloads as verified, webhookReceiver as receiver } from '../../helpers/webhook-receiver.ts';

function suite(dialect: 'sqlite' | 'postgres', settings: WebhookSettings, body: (get: () => World) => void) {
  let w: World;
  let worker: Worker;
  before(async () => {
    w = await world(dialect, { app: { webhooks: settings } });
    worker = startWebhookWorker(w, settings, 4);
  });
  after(async () => {
    await worker.stop();
    await w.close();
  });
  body(() => w);
}

const PRIVATE: WebhookSettings = { allowPrivate: true, timeoutMs: 2000, retrySchedule: [0, 200, 200] };
const PUBLIC_ONLY: WebhookSettings = { allowPrivate: false, timeoutMs: 2000, retrySchedule: [0] };

async function endpoint(w: World, url: string, extra: Record<string, unknown> = {}) {
  const r = await w.post<{ endpointId: string; secret: string }>('/v1/webhooks.createEndpoint', { url, ...extra });
  assert.equal(r.status, 200, r.body);
  return r.json;
}

const deliveries = async (w: World, endpointId: string) =>
  (await w.get<{ deliveries: Array<Record<string, unknown>> }>('/v1/webhooks.listDeliveries', { endpointId })).json.deliveries;

for (const dialect of DIALECTS) {
  describe(`webhook delivery to a real receiver (${dialect})`, () =>
    suite(dialect, PRIVATE, (get) => {
      test('a test event arrives within 2 s, signed and verifiable with standardwebhooks; listDeliveries shows it delivered', async () => {
        const w = get();
        const rx = await receiver();
        const { endpointId, secret } = await endpoint(w, rx.url);
        const t0 = Date.now();
        const { json } = await w.post<{ eventId: string }>('/v1/webhooks.sendTestEvent', { endpointId });
        await until('the delivery', () => rx.got.length === 1, 2000);
        assert.ok(Date.now() - t0 < 2000);
        const [payload] = verified(rx.got, secret);
        assert.equal(payload.type, 'webhook.test');
        assert.deepEqual(payload.data, { endpointId });
        assert.equal(rx.got[0].headers['webhook-id'], json.eventId);
        assert.equal(rx.got[0].headers['content-type'], 'application/json');
        assert.ok(Math.abs(Number(rx.got[0].headers['webhook-timestamp']) - Date.now() / 1000) < 5);
        await until('delivered', async () => (await deliveries(w, endpointId))[0]?.status === 'delivered');
        const [d] = await deliveries(w, endpointId);
        assert.equal(d.attempts, 1);
        assert.equal(d.lastStatusCode, 200);
        assert.equal(typeof d.deliveredAt, 'number');
        await rx.close();
      });

      test('/metrics: delivery attempts by outcome, and the age of the oldest pending delivery', async () => {
        const w = get();
        const text = (await w.app.inject({ method: 'GET', url: '/metrics' })).body;
        assert.match(text, /keyhold_webhook_delivery_attempts_total\{outcome="delivered"\} [1-9]/);
        assert.match(text, /keyhold_webhook_oldest_pending_delivery_age_seconds \d/);
      });

      test('a receiver failing the first two attempts gets the third with the same webhook-id', async () => {
        const w = get();
        const rx = await receiver((n) => ({ status: n <= 2 ? 500 : 204 }));
        const { endpointId, secret } = await endpoint(w, rx.url);
        await w.post('/v1/webhooks.sendTestEvent', { endpointId });
        await until('three attempts', () => rx.got.length === 3);
        verified(rx.got, secret);
        assert.equal(new Set(rx.got.map((r) => r.headers['webhook-id'])).size, 1);
        await until('delivered', async () => (await deliveries(w, endpointId))[0]?.status === 'delivered');
        const [d] = await deliveries(w, endpointId);
        assert.equal(d.attempts, 3);
        assert.equal(d.lastStatusCode, 204);
        await rx.close();
      });

      test('410 disables the endpoint (disabledReason); a used-up schedule fails the delivery', async () => {
        const w = get();
        const gone = await receiver(() => ({ status: 410 }));
        const a = await endpoint(w, gone.url);
        await w.post('/v1/webhooks.sendTestEvent', { endpointId: a.endpointId });
        await until('failed', async () => (await deliveries(w, a.endpointId))[0]?.status === 'failed');
        assert.equal(gone.got.length, 1);
        const list = (await w.get<{ endpoints: Array<Record<string, unknown>> }>('/v1/webhooks.listEndpoints', {})).json.endpoints;
        const row = list.find((e) => e.endpointId === a.endpointId)!;
        assert.equal(row.enabled, false);
        assert.match(String(row.disabledReason), /410/);
        const failing = await receiver(() => ({ status: 503 }));
        const b = await endpoint(w, failing.url);
        await w.post('/v1/webhooks.sendTestEvent', { endpointId: b.endpointId });
        await until('failed', async () => (await deliveries(w, b.endpointId))[0]?.status === 'failed');
        assert.equal(failing.got.length, PRIVATE.retrySchedule.length);
        const [d] = await deliveries(w, b.endpointId);
        assert.equal(d.lastStatusCode, 503);
        assert.equal(d.nextAttemptAt, undefined);
        await gone.close();
        await failing.close();
      });

      test('after rotateSecret a delivery verifies under the new and the previous secret', async () => {
        const w = get();
        const rx = await receiver();
        const { endpointId, secret } = await endpoint(w, rx.url);
        const rotated = (await w.post<{ secret: string }>('/v1/webhooks.rotateSecret', { endpointId })).json.secret;
        await w.post('/v1/webhooks.sendTestEvent', { endpointId });
        await until('the delivery', () => rx.got.length === 1);
        verified(rx.got, secret);
        verified(rx.got, rotated);
        assert.equal(String(rx.got[0].headers['webhook-signature']).split(' ').length, 2);
        await rx.close();
      });

      test('a 302 to loopback is a failure: the redirect is not followed', async () => {
        const w = get();
        const target = await receiver();
        const rx = await receiver(() => ({ status: 302, headers: { location: target.url } }));
        const { endpointId } = await endpoint(w, rx.url);
        await w.post('/v1/webhooks.sendTestEvent', { endpointId });
        await until('failed', async () => (await deliveries(w, endpointId))[0]?.status === 'failed');
        assert.equal(target.got.length, 0);
        assert.match(String((await deliveries(w, endpointId))[0].lastError), /redirect/);
        await rx.close();
        await target.close();
      });
    }));

  describe(`webhook delivery refuses private addresses at delivery time (${dialect})`, () =>
    suite(dialect, PUBLIC_ONLY, (get) => {
      test('an endpoint whose host now resolves to loopback (or is a private literal) gets no request', async () => {
        const w = get();
        const rx = await receiver();
        for (const url of [
          `https://localhost:${rx.port}/hook`,
          `https://127.0.0.1:${rx.port}/hook`,
          `https://[::1]:${rx.port}/hook`,
          `http://93.184.216.34:${rx.port}/hook`,
        ]) {
          const { endpointId } = await endpoint(w, 'https://93.184.216.34/hook');
          // As if the name had been rebound, or the row changed, after the check at creation.
          await w.store.db.updateTable('webhook_endpoints').set({ url }).where('id', '=', endpointId).execute();
          await w.post('/v1/webhooks.sendTestEvent', { endpointId });
          await until(`failed ${url}`, async () => (await deliveries(w, endpointId))[0]?.status === 'failed');
          const [d] = await deliveries(w, endpointId);
          assert.equal(d.lastStatusCode, undefined, url);
          assert.match(String(d.lastError), /loopback|https|resolve/, url);
          await w.post('/v1/webhooks.deleteEndpoint', { endpointId });
        }
        assert.equal(rx.got.length, 0);
        await rx.close();
      });
    }));
}
