import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { freshCuttableStore, eventually, serve, type CuttableStore, type Served } from '../helpers/outages.ts';
import { sleep } from '../helpers/timing.ts';
import type { Store } from '../../src/store/store.ts';
import { HOUR_MS } from '../../src/services/verification/verification-recorder.ts';

/**
 * The verification analytics queue through a store outage (docs/reliability.md): it holds at most its
 * capacity of events, the oldest going first, every verification dropped is counted in keyhold_dropped_total,
 * and what it held is written once when the store returns. The store is cut by the test's own proxy (PostgreSQL) or a write lock
 * held by another connection (SQLite); the counts are read on a connection of their own.
 */

const CAPACITY = 40;
const KEYS = 100;
const REPEATED = 10;

/** A value of `name{what="…"}` in /metrics. */
async function metric(s: Served, name: string, what: string): Promise<number> {
  const res = await s.app.inject({ method: 'GET', url: '/metrics' });
  const m = res.body.match(new RegExp(`^${name}\\{what="${what}"\\} (\\S+)$`, 'm'));
  assert.ok(m, `${name}{what="${what}"} is in /metrics`);
  return Number(m[1]);
}

/** Verification counts per key id in the analytics table, and each key's last_used_at. */
async function stored(db: Store['db'], keyIds: string[]): Promise<{ counts: number[]; lastUsed: number[] }> {
  const rows = await db
    .selectFrom('analytics_key_verifications_per_hour')
    .select((eb) => ['key_id', eb.fn.sum<number | string>('count').as('n')])
    .where('key_id', 'in', keyIds)
    .groupBy('key_id')
    .execute();
  const byKey = new Map(rows.map((r) => [r.key_id, Number(r.n)]));
  const keys = await db.selectFrom('keys').select(['id', 'last_used_at']).where('id', 'in', keyIds).execute();
  const used = new Map(keys.map((k) => [k.id, Number(k.last_used_at ?? 0)]));
  return { counts: keyIds.map((id) => byKey.get(id) ?? 0), lastUsed: keyIds.map((id) => used.get(id) ?? 0) };
}

/** Waits out the last minute of an hour, so that every verification of the test falls in one hour. */
async function awayFromHourEnd(): Promise<void> {
  const left = HOUR_MS - (Date.now() % HOUR_MS);
  if (left < 60_000) await sleep(left + 1_000);
}

for (const dialect of DIALECTS) {
  describe(`verification analytics through a store outage (${dialect})`, () => {
    let direct: Store;
    let cuttable: CuttableStore;
    let close: () => Promise<void>;
    before(async () => {
      ({ direct, cuttable, close } = await freshCuttableStore(dialect));
    });
    after(() => close());

    test(`${KEYS} cached keys verified while the store is cut: the newest ${CAPACITY} held, the oldest dropped and counted, the held ones written once after`, {
      timeout: 180_000,
    }, async (t) => {
      const s = await serve(cuttable.store, undefined, { capacities: { verifications: CAPACITY } });
      try {
        const keys: Array<{ keyId: string; key: string }> = [];
        for (let i = 0; i < KEYS; i++) {
          const res = await s.call('POST', '/v1/keys.createKey', { apiId: s.apiId }, s.root);
          assert.equal(res.status, 200, JSON.stringify(res.json));
          keys.push({ keyId: String(res.json.keyId), key: String(res.json.key) });
        }
        const ids = keys.map((k) => k.keyId);
        const verify = async (i: number) => {
          const res = await s.call('POST', '/v1/keys.verifyKey', { key: keys[i].key });
          assert.equal(res.json.code, 'VALID', JSON.stringify(res.json));
        };
        await awayFromHourEnd();
        // Before the outage: every key verified once (and so cached), in batches within the capacity, each written.
        for (let from = 0; from < KEYS; from += CAPACITY / 2) {
          for (let i = from; i < Math.min(KEYS, from + CAPACITY / 2); i++) await verify(i);
          await eventually('the batch written', async () => (await metric(s, 'keyhold_buffered_entries', 'verifications')) === 0);
        }
        assert.deepEqual((await stored(direct.db, ids)).counts, Array(KEYS).fill(1));
        assert.equal(await metric(s, 'keyhold_dropped_total', 'verifications'), 0, 'nothing dropped while the store answers');

        cuttable.cut();
        const cutAt = Date.now();
        // Most keys before a flush has failed, the rest after one has (its batch merged back into the buffer).
        for (let i = 0; i < 70; i++) await verify(i);
        await eventually('a flush failed: the outage is logged', async () => s.outages('store').started >= 1);
        await sleep(1_500);
        for (let i = 70; i < KEYS; i++) await verify(i);
        for (let i = 0; i < REPEATED; i++) await verify(i); // keys verified twice during the cut
        // After the failed flush its events were back in front, so the queue holds the newest CAPACITY events:
        // the keys verified last (70…99) and the repeated ones (0…REPEATED-1).
        const order = [...Array(KEYS).keys(), ...Array(REPEATED).keys()];
        const kept = new Set(order.slice(-CAPACITY));
        const held = await metric(s, 'keyhold_buffered_entries', 'verifications');
        const dropped = await metric(s, 'keyhold_dropped_total', 'verifications');
        t.diagnostic(`during the cut: held ${held}, dropped ${dropped}`);
        assert.equal(held, CAPACITY, 'the queue stays at its capacity');
        assert.equal(dropped, KEYS + REPEATED - CAPACITY, 'every verification beyond it is counted as dropped');
        assert.deepEqual((await stored(direct.db, ids)).counts, Array(KEYS).fill(1), 'nothing was written during the cut');

        cuttable.restore();
        const expected = ids.map((_, i) => 1 + (kept.has(i) ? 1 : 0));
        await eventually(
          'the held counts written after the cut',
          async () => (await stored(direct.db, ids)).counts.reduce((a, n) => a + n, 0) >= KEYS + CAPACITY,
          20_000,
        );
        await sleep(2_500); // two more flush intervals: nothing is written twice
        const after = await stored(direct.db, ids);
        assert.deepEqual(after.counts, expected, 'each count exactly once');
        for (let i = 0; i < KEYS; i++) {
          if (kept.has(i)) assert.ok(after.lastUsed[i] >= cutAt, `key ${i}: its last use during the cut was kept`);
          else assert.ok(after.lastUsed[i] < cutAt, `key ${i}: its dropped verification did not move its last use`);
        }
        assert.equal(await metric(s, 'keyhold_buffered_entries', 'verifications'), 0);
        assert.equal(await metric(s, 'keyhold_dropped_total', 'verifications'), KEYS + REPEATED - CAPACITY);
      } finally {
        await s.app.close();
      }
    });
  });
}
