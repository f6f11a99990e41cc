import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshStore } from '../helpers/harness.ts';

test('SQLite: the write-ahead log is copied into the database file by the checkpoint worker, not by a commit', async () => {
  const s = await freshStore('sqlite');
  const file = s.url.slice('sqlite:'.length);
  try {
    const before = statSync(file).size;
    // About 4 MB of rows: four times the log size at which a commit would checkpoint by itself (1,000 pages).
    for (let i = 0; i < 20; i++) {
      const rows = Array.from({ length: 200 }, (_, j) => ({ name: `row-${i}-${j}`, value: 'x'.repeat(1_000), updated_at: 1 }));
      await s.store.db.insertInto('settings').values(rows).execute();
    }
    const wal = statSync(`${file}-wal`).size;
    assert.ok(wal > 4_000_000, `the log holds the rows: ${wal} bytes`);
    let after = statSync(file).size;
    for (let i = 0; i < 50 && after < before + 4_000_000; i++) {
      await sleep(50);
      after = statSync(file).size;
    }
    assert.ok(after >= before + 4_000_000, `the database file grew from ${before} to ${after} bytes`);
    const rows = await s.store.db.selectFrom('settings').select('name').where('name', 'like', 'row-%').execute();
    assert.equal(rows.length, 4_000);
  } finally {
    await s.close();
  }
});

test('SQLite: under writes back to back the log is started over and cut back, not left to grow', async () => {
  const s = await freshStore('sqlite');
  const file = s.url.slice('sqlite:'.length);
  try {
    // About 100 MB of rows in 1 MB transactions with no pause between them: past the 64 MB at which the
    // checkpointer restarts the log (sqlite-checkpointer.ts); PASSIVE checkpoints alone would keep all of it.
    const value = 'x'.repeat(1_000);
    let largest = 0;
    for (let i = 0; i < 100; i++) {
      const rows = Array.from({ length: 1_000 }, (_, j) => ({ name: `row-${i}-${j}`, value, updated_at: 1 }));
      await s.store.db.transaction().execute((tx) => tx.insertInto('settings').values(rows).execute());
      largest = Math.max(largest, statSync(`${file}-wal`).size);
    }
    // Once the checkpointer has caught up, the next write starts the log over, cut back to journal_size_limit.
    let wal = statSync(`${file}-wal`).size;
    for (let i = 0; i < 100 && wal > 64 * 1024 * 1024; i++) {
      await sleep(100);
      await s.store.db
        .insertInto('settings')
        .values({ name: `tick-${i}`, value: '', updated_at: 1 })
        .execute();
      wal = statSync(`${file}-wal`).size;
    }
    assert.ok(wal <= 64 * 1024 * 1024, `the log is ${wal} bytes after writes of 100 MB (largest ${largest})`);
    const [{ n }] = await s.store.db
      .selectFrom('settings')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('name', 'like', 'row-%')
      .execute();
    assert.equal(Number(n), 100_000);
  } finally {
    await s.close();
  }
});
