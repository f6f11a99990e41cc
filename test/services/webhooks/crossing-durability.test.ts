import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DIALECTS, type World } from '../../helpers/harness.ts';
import { until, verifiedPayloads, type webhookReceiver } from '../../helpers/webhook-receiver.ts';
import { deliveringWorld } from '../../helpers/webhook-world.ts';
import { refillDueKeys } from '../../../src/services/keys/credits.ts';

/**
 * A credit crossing and a refill commit with their event or not at all: when recording the crossing (or
 * writing the refill's event) fails, the spend (or refill) is rolled back with it and nothing is emitted; the
 * next verification crosses again and its event arrives, once. The failure is a real trigger refusing the
 * insert: on PostgreSQL into webhook_credit_crossings (the spend statement's own insert), on SQLite into
 * webhook_events (the spend's transaction); for refills into webhook_events on both.
 */
for (const dialect of DIALECTS) {
  describe(`credit events commit with their cause (${dialect})`, () => {
    let w: World;
    let close: () => Promise<void>;
    let rx: Awaited<ReturnType<typeof webhookReceiver>>;
    let secret: string;
    let apiId: string;
    before(async () => {
      const events = ['key.credits.low', 'key.credits.exhausted', 'key.credits.refilled'];
      ({ w, rx, secret, close } = await deliveringWorld(dialect, { events, creditsLowBelow: 10 }));
      apiId = await w.createApi('durability');
    });
    after(() => close?.());

    /** Makes every insert into `table` fail until the returned function is called. */
    async function refuseInserts(table: 'webhook_events' | 'webhook_credit_crossings'): Promise<() => Promise<void>> {
      if (dialect === 'sqlite') {
        await sql`create trigger refuse_inserts before insert on ${sql.table(table)} begin select raise(abort, 'refused'); end`.execute(
          w.store.db,
        );
        return async () => void (await sql`drop trigger refuse_inserts`.execute(w.store.db));
      }
      await sql`create function refuse_insert() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$`.execute(
        w.store.db,
      );
      await sql`create trigger refuse_inserts before insert on ${sql.table(table)} for each row execute function refuse_insert()`.execute(
        w.store.db,
      );
      return async () => {
        await sql`drop trigger refuse_inserts on ${sql.table(table)}`.execute(w.store.db);
        await sql`drop function refuse_insert()`.execute(w.store.db);
      };
    }
    const remainingOf = async (keyId: string) =>
      await w.store.db.selectFrom('keys').select(['remaining', 'last_refill_at']).where('id', '=', keyId).executeTakeFirstOrThrow();
    const eventsOf = (keyId: string) => verifiedPayloads(rx.got, secret).filter((p) => p.data.keyId === keyId);

    test('a spend whose crossing cannot be recorded is rolled back and emits nothing; the next one crosses, once', async () => {
      const { key, keyId } = await w.createKey({ apiId, remaining: 10 });
      const allow = await refuseInserts(dialect === 'sqlite' ? 'webhook_events' : 'webhook_credit_crossings');
      try {
        const refused = await w.post('/v1/keys.verifyKey', { key });
        assert.notEqual(refused.status, 200, refused.body);
      } finally {
        await allow();
      }
      assert.equal((await remainingOf(keyId)).remaining, 10, 'the spend rolled back with its crossing');
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(eventsOf(keyId).length, 0);
      const spent = await w.post<{ valid: boolean; remaining: number }>('/v1/keys.verifyKey', { key });
      assert.deepEqual([spent.json.valid, spent.json.remaining], [true, 9]);
      await until('key.credits.low', () => eventsOf(keyId).length >= 1, 3000);
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(
        eventsOf(keyId).map((p) => [p.type, p.data]),
        [['key.credits.low', { keyId, apiId, remaining: 9, threshold: 10 }]],
      );
    });

    test('a refill whose event cannot be written is rolled back; the next verification refills, with its event', async () => {
      const { key, keyId } = await w.createKey({ apiId, remaining: 50, refill: { interval: 'daily', amount: 50 } });
      const longAgo = Date.now() - 3 * 86_400_000;
      await w.store.db
        .updateTable('keys')
        .set({ remaining: 30, last_refill_at: longAgo, updated_at: Date.now() })
        .where('id', '=', keyId)
        .execute();
      const allow = await refuseInserts('webhook_events');
      try {
        assert.notEqual((await w.post('/v1/keys.verifyKey', { key })).status, 200);
      } finally {
        await allow();
      }
      assert.deepEqual({ ...(await remainingOf(keyId)) }, { remaining: 30, last_refill_at: longAgo });
      const refilled = await w.post<{ valid: boolean; remaining: number }>('/v1/keys.verifyKey', { key });
      assert.deepEqual([refilled.json.valid, refilled.json.remaining], [true, 49]);
      await until('key.credits.refilled', () => eventsOf(keyId).length >= 1, 3000);
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(
        eventsOf(keyId).map((p) => [p.type, p.data]),
        [['key.credits.refilled', { keyId, apiId, remaining: 50 }]],
      );
    });

    test('50 concurrent verifications (spends of one key may share a statement): each threshold reported once', async () => {
      const { key, keyId } = await w.createKey({ apiId, remaining: 55 });
      const answers = await Promise.all(Array.from({ length: 50 }, () => w.post<{ valid: boolean }>('/v1/keys.verifyKey', { key })));
      assert.equal(answers.filter((a) => a.json.valid).length, 50);
      await until('key.credits.low', () => eventsOf(keyId).length >= 1, 3000);
      const more = await Promise.all(Array.from({ length: 10 }, () => w.post<{ valid: boolean }>('/v1/keys.verifyKey', { key })));
      assert.equal(more.filter((a) => a.json.valid).length, 5);
      await until('key.credits.exhausted', () => eventsOf(keyId).length >= 2, 3000);
      await new Promise((r) => setTimeout(r, 400));
      const got = eventsOf(keyId);
      assert.deepEqual(
        got.map((p) => p.type),
        ['key.credits.low', 'key.credits.exhausted'],
      );
      const low = got[0].data;
      assert.equal(low.threshold, 10);
      assert.ok(Number(low.remaining) < 10 && Number(low.remaining) >= 5, `remaining ${low.remaining}: after the statement that crossed`);
    });

    test('the refill sweep refills the keys of a subscribed workspace with their events, once; others without', async () => {
      const mine = await w.createKey({ apiId, remaining: 3, refill: { interval: 'daily', amount: 40 } });
      const other = await w.otherWorkspace();
      const otherKey = await w.createKey(
        { apiId: await w.createApi('quiet', other.root), remaining: 3, refill: { interval: 'daily', amount: 40 } },
        other.root,
      );
      const longAgo = Date.now() - 3 * 86_400_000;
      await w.store.db.updateTable('keys').set({ last_refill_at: longAgo }).where('id', 'in', [mine.keyId, otherKey.keyId]).execute();
      const now = Date.now();
      assert.ok((await refillDueKeys(w.store.db, now)) >= 2);
      await refillDueKeys(w.store.db, now + 1000);
      assert.equal((await remainingOf(mine.keyId)).remaining, 40);
      assert.equal((await remainingOf(otherKey.keyId)).remaining, 40);
      await until('key.credits.refilled', () => eventsOf(mine.keyId).length >= 1, 3000);
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(
        eventsOf(mine.keyId).map((p) => [p.type, p.data]),
        [['key.credits.refilled', { keyId: mine.keyId, apiId, remaining: 40 }]],
      );
      assert.equal(eventsOf(otherKey.keyId).length, 0);
    });
  });
}
