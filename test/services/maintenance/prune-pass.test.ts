import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';
import type { Store } from '../../../src/store/store.ts';
import { verificationHourRow } from '../../helpers/rows.ts';
import { runPrunePass } from '../../../src/services/maintenance/prune.ts';
import { PruneLease } from '../../../src/services/maintenance/prune-lease.ts';
import { loadRetentionConfig } from '../../../src/config/retention.ts';
import { BatchPace, EVENT_LOOP_PACE } from '../../../src/store/batch-pace.ts';

const DAY = 86_400_000;
const RETENTION = loadRetentionConfig({});

/** `n` hourly verification rows, each of its own key, at `hour`. */
async function analyticsRows(store: Store, n: number, hour: number, tag: string): Promise<void> {
  for (let i = 0; i < n; i += 500) {
    const rows = Array.from({ length: Math.min(500, n - i) }, (_, j) => ({
      key_id: `key_${tag}_${i + j}`,
      hour,
      outcome: 'VALID',
      workspace_id: 'ws_x',
      api_id: 'api_x',
      identity_id: null,
      count: 1,
    }));
    await store.db
      .insertInto('analytics_key_verifications_per_hour')
      .values(rows.map((r) => verificationHourRow(store.db, r)))
      .execute();
  }
}

const countRows = async (store: Store) =>
  Number(
    (
      await store.db
        .selectFrom('analytics_key_verifications_per_hour')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

for (const dialect of DIALECTS) {
  describe(`the retention pass (${dialect})`, () => {
    let s: Awaited<ReturnType<typeof freshStore>>;
    before(async () => {
      s = await freshStore(dialect);
    });
    after(() => s.close());

    test('a backlog is removed in many short batches, exactly, leaving the rows inside the retention', async () => {
      const now = Date.now();
      const hourAgo = (days: number) => now - days * DAY - ((now - days * DAY) % 3_600_000);
      await analyticsRows(s.store, 12_345, hourAgo(400), 'old');
      await analyticsRows(s.store, 300, hourAgo(10), 'new');
      const batches: number[] = [];
      const pruned = await runPrunePass(s.store, RETENTION, {
        now,
        onBatch: (kind, rows) => void (kind === 'verifications' && batches.push(rows)),
      });
      assert.equal(pruned.verifications, 12_345);
      assert.equal(
        batches.reduce((a, b) => a + b, 0),
        12_345,
      );
      assert.ok(batches.length > 1, `several batches, got ${batches.length}`);
      assert.equal(await countRows(s.store), 300);
    });

    test('a pass asked to stop ends between two batches; the next one finishes the work', async () => {
      const now = Date.now();
      await analyticsRows(s.store, 3_000, now - 400 * DAY, 'stop');
      const before = await countRows(s.store);
      let batches = 0;
      const first = await runPrunePass(s.store, RETENTION, { now, shouldStop: () => batches > 0, onBatch: () => void batches++ });
      assert.equal(batches, 1);
      assert.ok(first.verifications! > 0 && first.verifications! < 3_000, JSON.stringify(first));
      assert.equal(await countRows(s.store), before - first.verifications!);
      const second = await runPrunePass(s.store, RETENTION, { now });
      assert.equal(first.verifications! + second.verifications!, 3_000);
    });

    test('the lease is held by one node at a time, given up on release, and taken over once expired', async () => {
      const a = new PruneLease(s.store.db, 'node_a', 60_000);
      const b = new PruneLease(s.store.db, 'node_b', 60_000);
      const now = Date.now();
      assert.equal(await a.take(now), true);
      assert.equal(await b.take(now), false);
      assert.equal(await a.take(now + 1_000), true, 'the holder renews it');
      await a.release();
      assert.equal(await b.take(now + 2_000), true);
      assert.equal(await a.take(now + 3_000), false);
      assert.equal(await a.take(now + 2_000 + 60_001), true, 'a lease not renewed for its ttl is taken over');
      await a.release();
    });
  });
}

describe('disk space (sqlite)', () => {
  test('a new SQLite file gives the pages of removed rows back to the file system after a pass', async () => {
    const s = await freshStore('sqlite');
    try {
      const pages = async () =>
        Number((await sql<{ page_count: number }>`select page_count from pragma_page_count()`.execute(s.store.db)).rows[0].page_count);
      const mode = await sql<{ auto_vacuum: number }>`select auto_vacuum from pragma_auto_vacuum()`.execute(s.store.db);
      assert.equal(Number(mode.rows[0].auto_vacuum), 2, 'auto_vacuum = INCREMENTAL');
      const empty = await pages();
      await analyticsRows(s.store, 20_000, Date.now() - 400 * DAY, 'space');
      const full = await pages();
      assert.ok(full > empty + 100, `${empty} -> ${full}`);
      await runPrunePass(s.store, RETENTION);
      const free = await sql<{ freelist_count: number }>`select freelist_count from pragma_freelist_count()`.execute(s.store.db);
      assert.equal(Number(free.rows[0].freelist_count), 0);
      assert.ok((await pages()) < empty + 20, `pages given back: ${full} -> ${await pages()} (empty: ${empty})`);
    } finally {
      await s.close();
    }
  });
});

describe('batch pacing', () => {
  test('batches shrink when slow, grow when fast and full, and the rest is a multiple of the batch time', () => {
    const pace = new BatchPace(EVENT_LOOP_PACE);
    const start = pace.size;
    assert.equal(pace.after(start, 10), 10 * EVENT_LOOP_PACE.restFactor);
    assert.equal(pace.size, start / 2);
    pace.after(pace.size, 0.1);
    assert.equal(pace.size, start);
    pace.after(3, 0.1);
    assert.equal(pace.size, start, 'a batch that was not full says nothing of a larger one');
    for (let i = 0; i < 20; i++) pace.after(pace.size, 0.1);
    assert.equal(pace.size, EVENT_LOOP_PACE.max);
    for (let i = 0; i < 20; i++) pace.after(pace.size, 100);
    assert.equal(pace.size, EVENT_LOOP_PACE.min);
    assert.equal(pace.after(1, 0), EVENT_LOOP_PACE.minRestMs);
  });
});
