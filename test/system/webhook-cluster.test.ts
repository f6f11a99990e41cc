import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { until, verifiedPayloads, webhookReceiver } from '../helpers/webhook-receiver.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';
import { windowWithRoom } from '../helpers/timing.ts';

/**
 * Three server processes on one store (and Redis when KEYHOLD_TEST_REDIS_URL is set), 50 concurrent
 * verifications spread over them: key.credits.low, key.credits.exhausted, key.ratelimited and
 * ratelimit.exceeded each arrive exactly once, signed, whichever servers saw the crossing or the denials.
 */

const NODES = 3;
const CONCURRENT = 50;
const MASTER = `test:${Buffer.alloc(32, 9).toString('base64')}`;

for (const dialect of DIALECTS) {
  describe(`webhook crossings on a ${NODES}-node cluster (${dialect})`, () => {
    let db: Awaited<ReturnType<typeof freshStore>>;
    const nodes: ServerProcess[] = [];
    const root = newRootKey();
    let rx: Awaited<ReturnType<typeof webhookReceiver>>;
    before(async () => {
      db = await freshStore(dialect);
      rx = await webhookReceiver();
      const env = {
        KEYHOLD_WORKERS: '2',
        KEYHOLD_MASTER_KEYS: MASTER,
        KEYHOLD_WEBHOOK_ALLOW_PRIVATE: 'true',
        ...(process.env.KEYHOLD_TEST_REDIS_URL ? { REDIS_URL: process.env.KEYHOLD_TEST_REDIS_URL } : {}),
      };
      for (let i = 0; i < NODES; i++) nodes.push(await ServerProcess.start(db.url, root, env));
    });
    after(async () => {
      for (const n of nodes) await n.stop();
      await rx.close();
      await db.close();
    });

    test('each crossing and each window once, across the nodes', { timeout: 60_000 }, async () => {
      const [a] = nodes;
      const events = ['key.credits.low', 'key.credits.exhausted', 'key.ratelimited', 'ratelimit.exceeded'];
      const ep = await a.post<{ secret: string }>('/v1/webhooks.createEndpoint', { url: rx.url, events, creditsLowBelow: 10 }, root);
      assert.equal(ep.status, 200, JSON.stringify(ep.json));
      const api = await a.post<{ apiId: string }>('/v1/apis.createApi', { name: 'cluster' }, root);
      const credits = await a.post<{ key: string }>('/v1/keys.createKey', { apiId: api.json.apiId, remaining: 30 }, root);
      const limited = await a.post<{ key: string }>(
        '/v1/keys.createKey',
        { apiId: api.json.apiId, ratelimit: { type: 'consistent', limit: 5, duration: 60_000 } },
        root,
      );
      const spread = (path: string, body: unknown, key?: string) =>
        Promise.all(
          Array.from({ length: CONCURRENT }, (_, i) => nodes[i % NODES].post<{ valid?: boolean; success?: boolean }>(path, body, key)),
        );
      const spent = await spread('/v1/keys.verifyKey', { key: credits.json.key });
      assert.equal(spent.filter((r) => r.json.valid).length, 30);
      // Both limits count in windows aligned to the minute: each burst must fall in one window (exactly 5, then 3, pass).
      await windowWithRoom(60_000, 10_000);
      const rl = await spread('/v1/keys.verifyKey', { key: limited.json.key });
      assert.equal(rl.filter((r) => r.json.valid).length, 5);
      const ns = await spread('/v1/ratelimits.limit', { namespace: 'cluster', identifier: 'u1', limit: 3, duration: 60_000 }, root);
      assert.equal(ns.filter((r) => r.json.success).length, 3);

      await until('the four events', () => rx.got.length >= 4, 15_000);
      await new Promise((r) => setTimeout(r, 2000)); // late duplicates would arrive by now
      const got = verifiedPayloads(rx.got, ep.json.secret)
        .map((p) => p.type)
        .sort();
      assert.deepEqual(got, [...events].sort());
    });
  });
}
