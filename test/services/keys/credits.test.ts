import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { lastRefillDue } from '../../../src/domain/refill.ts';
import { refillDueKeys, refillIfDue } from '../../../src/services/keys/credits.ts';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';

for (const dialect of DIALECTS) {
  describe(`refill in the store (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
    });
    after(() => w.close());

    const remainingOf = async (keyId: string) => (await w.get('/v1/keys.getKey', { keyId })).json.remaining;
    const backdate = (keyId: string, remaining: number, lastRefillAt: number) =>
      w.store.db.updateTable('keys').set({ remaining, last_refill_at: lastRefillAt }).where('id', '=', keyId).execute();

    test('refillIfDue sets remaining to the amount once per period, however often it runs', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 10, refill: { interval: 'daily', amount: 10 } });
      const now = Date.now();
      await backdate(keyId, 2, now - 86_400_000);
      const due = lastRefillDue({ interval: 'daily', refillDay: null }, now);
      assert.equal(await refillIfDue(w.store.db, keyId, 10, due, now), true);
      assert.equal(await remainingOf(keyId), 10);
      await w.store.db.updateTable('keys').set({ remaining: 7 }).where('id', '=', keyId).execute();
      assert.equal(await refillIfDue(w.store.db, keyId, 10, due, now + 1000), false, 'second run in the same period');
      assert.equal(await remainingOf(keyId), 7);
    });

    test('the sweep refills every due key exactly once, daily and monthly, and is idempotent', async () => {
      const now = Date.now();
      const daily = await w.createKey({ apiId, remaining: 5, refill: { interval: 'daily', amount: 50 } });
      const monthly = await w.createKey({ apiId, remaining: 5, refill: { interval: 'monthly', amount: 70, refillDay: 31 } });
      const notDue = await w.createKey({ apiId, remaining: 5, refill: { interval: 'daily', amount: 90 } });
      await backdate(daily.keyId, 1, now - 2 * 86_400_000);
      await backdate(monthly.keyId, 1, now - 40 * 86_400_000);
      assert.ok((await refillDueKeys(w.store.db, now)) >= 2);
      assert.equal(await remainingOf(daily.keyId), 50);
      assert.equal(await remainingOf(monthly.keyId), 70);
      assert.equal(await remainingOf(notDue.keyId), 5);
      await w.store.db.updateTable('keys').set({ remaining: 3 }).where('id', 'in', [daily.keyId, monthly.keyId]).execute();
      await refillDueKeys(w.store.db, now + 1000);
      assert.equal(await remainingOf(daily.keyId), 3, 'a second sweep in the same period refills nothing');
      assert.equal(await remainingOf(monthly.keyId), 3);
    });

    test('verification refills a due key before spending, so the refill is visible at once', async () => {
      const { keyId, key } = await w.createKey({ apiId, remaining: 3, refill: { interval: 'daily', amount: 3 } });
      await backdate(keyId, 0, Date.now() - 86_400_000);
      const res = await w.app.inject({ method: 'POST', url: '/v1/keys.verifyKey', payload: { key } });
      assert.equal(res.json().code, 'VALID');
      assert.equal(res.json().remaining, 2);
      assert.equal(await remainingOf(keyId), 2);
    });
  });
}
