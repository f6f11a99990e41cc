import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { world, type World } from '../../helpers/harness.ts';
import { freshCuttableStore } from '../../helpers/outages.ts';
import { VerificationRecorder, type VerificationEvent } from '../../../src/services/verification/verification-recorder.ts';
import { unpackVerifications } from '../../../src/services/analytics/packed-verifications.ts';
import { packVerifications } from '../../../src/services/analytics/verification-backlog.ts';
import { isStoreUnavailable } from '../../../src/store/errors.ts';
import { VERIFY_CODES } from '../../../src/domain/verify-codes.ts';
import { AnalyticsWriterThread } from '../../../src/services/analytics/analytics-writer-thread.ts';

const T0 = Date.UTC(2025, 5, 1);

describe('packed verification batches (what the analytics writer thread is sent)', () => {
  test('unpacking gives the events back, field by field; repeated strings are sent once', () => {
    const events: VerificationEvent[] = VERIFY_CODES.filter((c) => c !== 'NOT_FOUND').flatMap((code, i) => [
      { keyId: 'key_a', workspaceId: 'ws_1', apiId: 'api_1', identityId: null, code, time: T0 + i, requestId: `req_${i}` },
      {
        keyId: 'key_b',
        workspaceId: 'ws_1',
        apiId: 'api_1',
        identityId: 'id_1',
        externalId: 'user-ü "1"',
        code,
        time: T0 + i * 1000.5,
        tags: ['path=/x', 'a,b', 'ü'],
        spentCredits: i,
        latency: 0.125 * i,
      },
    ]);
    const packed = packVerifications(events);
    assert.equal(packed.strings.filter((s) => s === 'ws_1').length, 1);
    const back = unpackVerifications(structuredClone(packed));
    assert.equal(back.length, events.length);
    events.forEach((e, i) => {
      const b = back[i];
      assert.deepEqual(
        [b.keyId, b.workspaceId, b.apiId, b.identityId, b.externalId ?? null, b.code, b.time, b.requestId],
        [e.keyId, e.workspaceId, e.apiId, e.identityId, e.externalId ?? null, e.code, e.time, e.requestId],
        `event ${i}`,
      );
      assert.deepEqual(b.tags ?? [], e.tags ?? []);
      assert.equal(b.spentCredits, e.spentCredits ?? 0);
      assert.equal(b.latency, e.latency ?? 0);
    });
  });

  test('an empty batch packs and unpacks to none', () => {
    assert.deepEqual(unpackVerifications(packVerifications([])), []);
  });
});

describe('the analytics writer thread (sqlite on a file)', () => {
  let w: World;
  before(async () => {
    w = await world('sqlite');
  });
  after(() => w.close());

  /** Per outcome, [count, credits] of `table` for `keyIds` (the raw table counts rows; a roll-up sums `count`). */
  const sums = async (table: string, keyIds: string[]) => {
    const n = table === 'analytics_key_verifications' ? sql`count(*)` : sql`sum(count)`;
    const { rows } = await sql<{ outcome: string; n: number; c: number }>`
      select outcome, ${n} as n, sum(spent_credits) as c from ${sql.table(table)}
      where key_id in (${sql.join(keyIds)}) group by outcome order by outcome`.execute(w.store.db);
    return rows.map((r) => [r.outcome, Number(r.n), Number(r.c)]);
  };
  const events = (keyIds: string[], n: number): VerificationEvent[] =>
    Array.from({ length: n }, (_, i) => ({
      keyId: keyIds[i % keyIds.length],
      workspaceId: w.workspaceId,
      apiId: 'api_x',
      identityId: i % 3 === 0 ? 'id_x' : null,
      externalId: i % 3 === 0 ? 'ext' : null,
      code: (['VALID', 'RATE_LIMITED', 'USAGE_EXCEEDED'] as const)[i % 3],
      time: T0 + i * 7_000,
      requestId: `req_${i}`,
      tags: i % 2 ? ['t=1'] : undefined,
      spentCredits: i % 3 === 0 ? 2 : 0,
      latency: 1,
    }));

  test('writes what the recorder writes in its own thread: raw rows, every roll-up, last_used_at', async () => {
    const apiId = await w.createApi('writer-thread');
    const viaThread = [(await w.createKey({ apiId })).keyId, (await w.createKey({ apiId })).keyId];
    const inProcess = [(await w.createKey({ apiId })).keyId, (await w.createKey({ apiId })).keyId];
    const threaded = new VerificationRecorder(w.store.db, { dialect: 'sqlite', aside: w.store.writeAside });
    const plain = new VerificationRecorder(w.store.db, { dialect: 'sqlite' });
    assert.ok(w.store.writeAside, 'a store on a file offers the writer thread');
    for (const e of events(viaThread, 3000)) threaded.record(e);
    for (const e of events(inProcess, 3000)) plain.record(e);
    await Promise.all([threaded.close(), plain.close()]);
    const tables = ['', '_per_minute', '_per_hour', '_per_day', '_per_month', '_per_day_by_key'].map(
      (t) => `analytics_key_verifications${t}`,
    );
    for (const table of tables) {
      const [a, b] = [await sums(table, viaThread), await sums(table, inProcess)];
      assert.deepEqual(a, b, table);
      assert.equal(
        a.reduce((s, r) => s + (r[1] as number), 0),
        3000,
        `${table}: every event`,
      );
    }
    const used = await w.store.db.selectFrom('keys').select('last_used_at').where('id', 'in', viaThread).execute();
    assert.deepEqual(used.map((k) => k.last_used_at).sort(), [T0 + 2998 * 7_000, T0 + 2999 * 7_000]);
  });

  test("the store's own transactions run while the thread writes, none failing", async () => {
    const recorder = new VerificationRecorder(w.store.db, { dialect: 'sqlite', aside: w.store.writeAside });
    const apiId = await w.createApi('beside');
    const writes: Promise<unknown>[] = [];
    for (let round = 0; round < 5; round++) {
      for (const e of events([`key_beside_${round}`], 5000)) recorder.record(e);
      writes.push(recorder.flush());
      for (let i = 0; i < 10; i++) writes.push(w.createKey({ apiId, name: `k${round}-${i}` }));
    }
    const outcomes = await Promise.allSettled(writes);
    assert.deepEqual(
      outcomes.filter((o) => o.status === 'rejected'),
      [],
    );
    await recorder.close();
    const { n } = await w.store.db
      .selectFrom('analytics_key_verifications')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('key_id', 'like', 'key_beside_%')
      .executeTakeFirstOrThrow();
    assert.equal(Number(n), 25_000);
  });

  test("a thread that does not answer in time is given up, and the store's writes go on", async () => {
    const thread = new AnalyticsWriterThread(w.store.writeAside!, 'local', 1);
    await assert.rejects(thread.write(packVerifications(events(['key_slow'], 20_000))), /did not answer within 1 ms/);
    const apiId = await w.createApi('after-a-timeout');
    assert.ok((await w.createKey({ apiId })).keyId, 'a write of the store after the timeout');
    await thread.close();
  });
});

describe('the analytics writer thread when the store is locked by another process', () => {
  test('a flush fails as the store being unavailable, keeps its events, and writes them once the lock is gone', async () => {
    const { direct, cuttable, close } = await freshCuttableStore('sqlite');
    try {
      const recorder = new VerificationRecorder(cuttable.store.db, { dialect: 'sqlite', aside: cuttable.store.writeAside });
      for (let i = 0; i < 100; i++) {
        recorder.record({ keyId: 'key_l', workspaceId: 'ws_l', apiId: 'api_l', identityId: null, code: 'VALID', time: T0 + i });
      }
      cuttable.cut();
      const failed = await recorder.flush().then(
        () => undefined,
        (err: unknown) => err,
      );
      assert.ok(isStoreUnavailable(failed), `unavailable: ${failed}`);
      assert.equal(recorder.held, 100);
      cuttable.restore();
      await recorder.close();
      assert.equal(recorder.held, 0);
      const { n } = await direct.db
        .selectFrom('analytics_key_verifications')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(n), 100);
    } finally {
      await close();
    }
  });
});
