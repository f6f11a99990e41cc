import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { until, verifiedPayloads, webhookReceiver } from '../helpers/webhook-receiver.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';
import { openStore } from '../../src/store/store.ts';

/**
 * An event committed is delivered across kill -9 (the outbox). (1) A server whose worker is off commits a test
 * event and is killed with SIGKILL before anything delivers it; a server started on the same database
 * delivers it. (2) A server is killed while its attempt waits for the receiver's answer (after the commit,
 * before the outcome is recorded); the next server takes the job over once its lock is older than the
 * visibility timeout (30 s) and delivers it again, with the same webhook-id. (3) A verification takes a key's
 * credits below the endpoint's threshold and the server is killed before the event is delivered — on
 * PostgreSQL before the crossing the spend recorded is even turned into an event (webhook_events is held
 * locked meanwhile) —; a server started on the same database delivers key.credits.low, once.
 */

const MASTER = `test:${Buffer.alloc(32, 9).toString('base64')}`;
const env = (workers: number) => ({
  KEYHOLD_WORKERS: String(workers),
  KEYHOLD_MASTER_KEYS: MASTER,
  KEYHOLD_WEBHOOK_ALLOW_PRIVATE: 'true',
  KEYHOLD_WEBHOOK_TIMEOUT_MS: '120000',
});

for (const dialect of DIALECTS) {
  describe(`webhook deliveries across kill -9 (${dialect})`, () => {
    let db: Awaited<ReturnType<typeof freshStore>>;
    const servers: ServerProcess[] = [];
    const root = newRootKey();
    const start = async (workers: number) => {
      const s = await ServerProcess.start(db.url, root, env(workers));
      servers.push(s);
      return s;
    };
    before(async () => {
      db = await freshStore(dialect);
    });
    after(async () => {
      for (const s of servers) await s.stop();
      await db.close();
    });

    const setUp = async (server: ServerProcess, url: string) => {
      const created = await server.post<{ endpointId: string; secret: string }>('/v1/webhooks.createEndpoint', { url }, root);
      assert.equal(created.status, 200, JSON.stringify(created.json));
      const sent = await server.post<{ eventId: string }>('/v1/webhooks.sendTestEvent', { endpointId: created.json.endpointId }, root);
      assert.equal(sent.status, 200, JSON.stringify(sent.json));
      return { ...created.json, eventId: sent.json.eventId };
    };

    test('killed after the commit, before any attempt: the next server delivers it', { timeout: 60_000 }, async () => {
      const rx = await webhookReceiver();
      const first = await start(0);
      const { secret, eventId } = await setUp(first, rx.url);
      await first.kill();
      assert.equal(rx.got.length, 0);
      const second = await start(1);
      await until('the delivery after the restart', () => rx.got.length === 1, 10_000);
      assert.equal(verifiedPayloads(rx.got, secret)[0].type, 'webhook.test');
      assert.equal(rx.got[0].headers['webhook-id'], eventId);
      await second.stop();
      await rx.close();
    });

    test('a credit crossing committed, killed before its event was written or delivered: delivered after the restart', {
      timeout: 60_000,
    }, async () => {
      const rx = await webhookReceiver();
      const first = await start(0);
      const created = await first.post<{ secret: string }>(
        '/v1/webhooks.createEndpoint',
        { url: rx.url, events: ['key.credits.low'], creditsLowBelow: 5 },
        root,
      );
      const api = await first.post<{ apiId: string }>('/v1/apis.createApi', { name: 'crossing-crash' }, root);
      const key = await first.post<{ keyId: string; key: string }>('/v1/keys.createKey', { apiId: api.json.apiId, remaining: 5 }, root);
      // PostgreSQL: the spend's own statement records the crossing; the step that turns it into an event waits on this lock.
      const holder = dialect === 'postgres' ? openStore(db.url) : undefined;
      let release = () => {};
      const held = new Promise<void>((r) => (release = r));
      let locked = () => {};
      const lockTaken = new Promise<void>((r) => (locked = r));
      const holding = holder?.db.transaction().execute(async (tx) => {
        await sql`lock table webhook_events in access exclusive mode`.execute(tx);
        locked();
        await held;
      });
      if (!holder) locked();
      await lockTaken;
      const verified = await first.post<{ valid: boolean; remaining: number }>('/v1/keys.verifyKey', { key: key.json.key }, root);
      assert.deepEqual([verified.json.valid, verified.json.remaining], [true, 4]);
      if (holder) {
        await new Promise((r) => setTimeout(r, 300));
        assert.equal((await db.store.db.selectFrom('webhook_credit_crossings').select('key_id').execute()).length, 1);
      }
      await first.kill();
      release();
      await holding;
      await holder?.close();
      assert.equal(rx.got.length, 0);
      const second = await start(1);
      await until('key.credits.low after the restart', () => rx.got.length === 1, 15_000);
      await new Promise((r) => setTimeout(r, 500));
      const got = verifiedPayloads(rx.got, created.json.secret);
      assert.deepEqual(
        got.map((p) => [p.type, p.data]),
        [['key.credits.low', { keyId: key.json.keyId, apiId: api.json.apiId, remaining: 4, threshold: 5 }]],
      );
      await second.stop();
      await rx.close();
    });

    if (dialect === 'sqlite')
      test('killed while an attempt waits for its answer: delivered again after the restart, same webhook-id', {
        timeout: 90_000,
      }, async () => {
        const rx = await webhookReceiver((n) => (n === 1 ? 'hang' : { status: 200 }));
        const first = await start(1);
        const { secret, eventId, endpointId } = await setUp(first, rx.url);
        await until('the first attempt', () => rx.got.length === 1, 10_000);
        await first.kill();
        const second = await start(1);
        await until('the attempt after the restart', () => rx.got.length === 2, 60_000);
        verifiedPayloads(rx.got, secret);
        assert.deepEqual(
          rx.got.map((r) => r.headers['webhook-id']),
          [eventId, eventId],
        );
        await until('delivered', async () => {
          const r = await second.get<{ deliveries: Array<{ status: string }> }>('/v1/webhooks.listDeliveries', { endpointId }, root);
          return r.json.deliveries[0]?.status === 'delivered';
        });
        await second.stop();
        await rx.close();
      });
  });
}
