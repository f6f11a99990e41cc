import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { startWebhookWorker } from '../../helpers/webhook-world.ts';
import { until } from '../../helpers/webhook-receiver.ts';
import type { Worker } from '../../../src/jobs/worker.ts';
import { attempt } from '../../../src/services/webhooks/attempt.ts';
import { nextDelay } from '../../../src/services/webhooks/delivery-rules.ts';
import { isBlockedAddress } from '../../../src/services/webhooks/url-safety.ts';
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule, type WebhookSettings, webhooksFrom } from '../../../src/config/webhooks.ts';

const SETTINGS: WebhookSettings = { allowPrivate: true, timeoutMs: 300, retrySchedule: [0] };

/** A loopback server whose handler is `handle`. */
async function serve(handle: Parameters<typeof createServer>[1]): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('webhook delivery rules', () => {
  test('the retry schedule: Standard Webhooks by default, replaced by KEYHOLD_WEBHOOK_RETRY_SCHEDULE, jitter within ±10 %', () => {
    assert.deepEqual(
      DEFAULT_RETRY_SCHEDULE.map((ms) => ms / 1000),
      [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400],
    );
    assert.deepEqual(parseRetrySchedule('0s,1s,2s'), [0, 1000, 2000]);
    assert.deepEqual(parseRetrySchedule('500ms, 5m,2h,1d'), [500, 300_000, 7_200_000, 86_400_000]);
    for (const bad of ['', '5', '1x', '-1s', '1.5s']) assert.equal(typeof parseRetrySchedule(bad), 'string', bad);
    assert.equal(nextDelay([0, 1000], 0), 0);
    assert.equal(nextDelay([0, 1000], 2), undefined);
    const delays = Array.from({ length: 200 }, () => nextDelay([0, 10_000], 1)!);
    assert.ok(delays.every((d) => d >= 9000 && d <= 11_000));
    assert.ok(new Set(delays).size > 10, 'the delays are jittered');
  });

  test('KEYHOLD_WEBHOOK_* settings are parsed, and invalid ones named', () => {
    const problems: string[] = [];
    const s = webhooksFrom(
      { KEYHOLD_WEBHOOK_ALLOW_PRIVATE: 'true', KEYHOLD_WEBHOOK_TIMEOUT_MS: '2500', KEYHOLD_WEBHOOK_RETRY_SCHEDULE: '0s,1s' },
      problems,
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(s, { allowPrivate: true, timeoutMs: 2500, retrySchedule: [0, 1000] });
    webhooksFrom(
      { KEYHOLD_WEBHOOK_ALLOW_PRIVATE: 'yes', KEYHOLD_WEBHOOK_TIMEOUT_MS: '0', KEYHOLD_WEBHOOK_RETRY_SCHEDULE: 'soon' },
      problems,
    );
    assert.equal(problems.length, 3);
    for (const [i, name] of ['ALLOW_PRIVATE', 'TIMEOUT_MS', 'RETRY_SCHEDULE'].entries()) assert.match(problems[i], new RegExp(name));
  });

  test('blocked addresses: loopback, private, link-local, unspecified, mapped IPv4; public ones pass', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
    ])
      assert.ok(isBlockedAddress(a), a);
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) assert.ok(!isBlockedAddress(a), a);
  });

  test('an answer that does not come within the timeout is a failed attempt', async () => {
    const slow = await serve(() => {});
    const t0 = Date.now();
    const r = await attempt(slow.url, {}, '{}', SETTINGS);
    assert.match(String(r.error), /within 300 ms/);
    assert.ok(Date.now() - t0 < 2000);
    await slow.close();
  });

  test('at most 64 KiB of an answer is read: an endless 200 answer is a success, at once', async () => {
    let sent = 0;
    const endless = await serve((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 97);
      const more = () => {
        while (!res.destroyed && res.write(chunk)) sent += chunk.length;
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    });
    const r = await attempt(endless.url, {}, '{}', { ...SETTINGS, timeoutMs: 5000 });
    assert.deepEqual(r, { statusCode: 200 });
    await endless.close();
    assert.ok(sent < 10 * 1024 * 1024, `${sent} bytes were written before the connection was dropped`);
  });
});

for (const dialect of DIALECTS) {
  describe(`an endpoint whose every attempt failed for 5 days is disabled (${dialect})`, () => {
    let w: World;
    let worker: Worker;
    before(async () => {
      w = await world(dialect, { app: { webhooks: SETTINGS } });
      worker = startWebhookWorker(w, SETTINGS);
    });
    after(async () => {
      await worker.stop();
      await w.close();
    });

    test('failing since 5 days: the next failed attempt disables it; one failure alone does not', async () => {
      const down = await serve((_req, res) => res.writeHead(500).end());
      const { json } = await w.post<{ endpointId: string }>('/v1/webhooks.createEndpoint', { url: down.url });
      const endpointId = json.endpointId;
      const view = async () =>
        (await w.get<{ endpoints: Array<Record<string, unknown>> }>('/v1/webhooks.listEndpoints', {})).json.endpoints.find(
          (e) => e.endpointId === endpointId,
        )!;
      const failed = async (n: number) =>
        (
          await w.store.db
            .selectFrom('webhook_deliveries')
            .select('id')
            .where('endpoint_id', '=', endpointId)
            .where('status', '=', 'failed')
            .execute()
        ).length === n;
      await w.post('/v1/webhooks.sendTestEvent', { endpointId });
      await until('the first failure', () => failed(1));
      assert.equal((await view()).enabled, true);
      await w.store.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: Date.now() - 5 * 86_400_000 - 1000 })
        .where('id', '=', endpointId)
        .execute();
      await w.post('/v1/webhooks.sendTestEvent', { endpointId });
      await until('the second failure', () => failed(2));
      assert.equal((await view()).enabled, false);
      assert.match(String((await view()).disabledReason), /5 days/);
      await down.close();
    });
  });
}
