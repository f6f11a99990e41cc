import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, type World } from '../../helpers/harness.ts';
import { until, verifiedPayloads, type webhookReceiver } from '../../helpers/webhook-receiver.ts';
import { deliveringWorld } from '../../helpers/webhook-world.ts';
import { windowWithRoom } from '../../helpers/timing.ts';

const CONCURRENT = 50;

/**
 * Events of verifications arrive once per crossing, also when 50 verifications of the key run at once:
 * key.credits.low (below the endpoint's threshold) and key.credits.exhausted, key.ratelimited and
 * ratelimit.exceeded (the first denial of a window), key.credits.refilled.
 */
for (const dialect of DIALECTS) {
  describe(`verification crossings, once each under ${CONCURRENT} concurrent verifications (${dialect})`, () => {
    let w: World;
    let close: () => Promise<void>;
    let rx: Awaited<ReturnType<typeof webhookReceiver>>;
    let secret: string;
    let apiId: string;
    before(async () => {
      const events = ['key.credits.low', 'key.credits.exhausted', 'key.credits.refilled', 'key.ratelimited', 'ratelimit.exceeded'];
      ({ w, rx, secret, close } = await deliveringWorld(dialect, { events, creditsLowBelow: 10 }));
      apiId = await w.createApi('crossings');
    });
    after(() => close?.());

    /** The payloads received of `type` about `id` (after a pause in which late duplicates would arrive). */
    const received = async (type: string, match: (data: Record<string, unknown>) => boolean, wanted: number) => {
      const of = () => verifiedPayloads(rx.got, secret).filter((p) => p.type === type && match(p.data));
      await until(`${wanted} ${type}`, () => of().length >= wanted, 3000);
      await new Promise((r) => setTimeout(r, 400));
      return of();
    };
    const verifyAll = (body: Record<string, unknown>) =>
      Promise.all(Array.from({ length: CONCURRENT }, () => w.post('/v1/keys.verifyKey', body)));

    test('credits: key.credits.low once when remaining goes below 10, key.credits.exhausted once at 0', async () => {
      const { key, keyId } = await w.createKey({ apiId, remaining: 30 });
      const answers = await verifyAll({ key });
      assert.equal(answers.filter((a) => a.json.valid).length, 30);
      const low = await received('key.credits.low', (d) => d.keyId === keyId, 1);
      assert.equal(low.length, 1);
      assert.deepEqual(low[0].data, { keyId, apiId, remaining: 9, threshold: 10 });
      assert.equal((await received('key.credits.exhausted', (d) => d.keyId === keyId, 1)).length, 1);
      // An ordinary verification above the threshold emits nothing.
      const other = await w.createKey({ apiId, remaining: 1000 });
      await verifyAll({ key: other.key });
      await new Promise((r) => setTimeout(r, 300));
      assert.ok(!rx.got.some((r) => r.body.includes(other.keyId)));
    });

    test("rate limits: key.ratelimited once for the window's first denial", async () => {
      const { key, keyId } = await w.createKey({ apiId, ratelimit: { type: 'consistent', limit: 5, duration: 60_000 } });
      // The window is the minute (aligned to it): the burst must fall in one window, or more than 5 pass and two denials are firsts.
      await windowWithRoom(60_000, 10_000);
      const answers = await verifyAll({ key });
      assert.equal(answers.filter((a) => String(a.json.code) === 'RATE_LIMITED').length, CONCURRENT - 5);
      const events = await received('key.ratelimited', (d) => d.keyId === keyId, 1);
      assert.equal(events.length, 1);
      assert.equal(events[0].data.name, 'default');
    });

    test('ratelimits.limit: ratelimit.exceeded once per identifier and window', async () => {
      const body = { namespace: 'crossings', identifier: 'user_1', limit: 3, duration: 60_000 };
      await windowWithRoom(60_000, 10_000); // the burst in one window of the minute
      const answers = await Promise.all(Array.from({ length: CONCURRENT }, () => w.post('/v1/ratelimits.limit', body)));
      assert.equal(answers.filter((a) => String(a.json.success) === 'false').length, CONCURRENT - 3);
      const events = await received('ratelimit.exceeded', (d) => d.identifier === 'user_1', 1);
      assert.equal(events.length, 1);
    });

    test('key.credits.refilled when a verification refills the key', async () => {
      const { key, keyId } = await w.createKey({ apiId, remaining: 1, refill: { interval: 'daily', amount: 50 } });
      await w.store.db
        .updateTable('keys')
        .set({ last_refill_at: Date.now() - 3 * 86_400_000 })
        .where('id', '=', keyId)
        .execute();
      await w.store.db.updateTable('keys').set({ updated_at: Date.now() }).where('id', '=', keyId).execute();
      await verifyAll({ key });
      const events = await received('key.credits.refilled', (d) => d.keyId === keyId, 1);
      assert.equal(events.length, 1);
      assert.equal(events[0].data.remaining, 50);
    });
  });
}
