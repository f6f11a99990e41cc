import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshStore } from '../helpers/harness.ts';

/*
 * Another process that writes without pause (a write every millisecond or so): each transaction adds a row
 * `w-<n>` and sets the row `w-count` to n, so a copy that is one point in time has exactly `w-count` rows `w-…`.
 */
const WRITER = `
import { DatabaseSync } from 'node:sqlite';
const db = new DatabaseSync(process.argv[1], { timeout: 10_000 });
const pause = new Int32Array(new SharedArrayBuffer(4));
const insert = db.prepare("insert into settings (name, value, updated_at) values (?, ?, 0)");
const count = db.prepare("insert into settings (name, value, updated_at) values ('w-count', ?, 0) on conflict (name) do update set value = excluded.value");
for (let n = 1; ; n++) {
  db.exec('begin immediate');
  insert.run('w-' + n, 'x'.repeat(200));
  count.run(String(n));
  db.exec('commit');
  if (n === 1) process.stdout.write('ready\\n');
  Atomics.wait(pause, 0, 0, 1);
}
`;

function startWriter(file: string): ChildProcess {
  return spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', WRITER, file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** The writer's rows in a database: how many, and the count it last committed with them. */
function writesIn(file: string): { rows: number; count: number } {
  const db = new DatabaseSync(file, { readOnly: true, timeout: 10_000 });
  try {
    const rows = (db.prepare("select count(*) as n from settings where name like 'w-%' and name != 'w-count'").get() as { n: number }).n;
    const count = Number(
      (db.prepare("select value from settings where name = 'w-count'").get() as { value: string } | undefined)?.value ?? 0,
    );
    return { rows, count };
  } finally {
    db.close();
  }
}

test('SQLite: a paced backup in small steps while another process writes without pause ends, never restarting; the copy is intact and one point in time', {
  timeout: 120_000,
}, async () => {
  const s = await freshStore('sqlite');
  const file = s.url.slice('sqlite:'.length);
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-backup-'));
  const writer = startWriter(file);
  try {
    // About 2 MB of rows, so that the copy takes hundreds of steps.
    for (let i = 0; i < 10; i++) {
      const rows = Array.from({ length: 200 }, (_, j) => ({ name: `row-${i}-${j}`, value: 'x'.repeat(1_000), updated_at: 1 }));
      await s.store.db.insertInto('settings').values(rows).execute();
    }
    await once(writer.stdout!, 'data');
    await sleep(100);

    const target = join(dir, 'copy.db');
    rmSync(target, { force: true });
    const atStart = writesIn(file);
    const bytesPerSecond = 4 * 1024 * 1024;
    const started = performance.now();
    const stats = await s.store.backup!(target, { bytesPerSecond, stepBytes: 4096 });
    const ms = performance.now() - started;
    const atEnd = writesIn(file);

    // One page a step, and exactly as many steps as pages: the copy never went back to its first page although
    // the writer committed many times between its steps.
    assert.ok(stats.pages > 400, `${stats.pages} pages`);
    const pagesPerStep = Math.max(1, Math.floor(4096 / stats.pageSize));
    assert.equal(stats.steps, Math.ceil(stats.pages / pagesPerStep));
    assert.ok(atEnd.count - atStart.count > 50, `the writer committed ${atEnd.count - atStart.count} times during the copy`);
    // Paced: no faster than 4 MB a second (the last step is not waited for).
    const floorMs = (((stats.pages - 1) * stats.pageSize) / bytesPerSecond) * 1000;
    assert.ok(ms >= floorMs * 0.95, `${ms.toFixed(0)} ms for ${stats.pages} pages, at least ${floorMs.toFixed(0)} ms`);

    assert.equal(statSync(target).size, stats.pages * stats.pageSize);
    const copy = new DatabaseSync(target, { readOnly: true });
    try {
      assert.deepEqual(
        copy
          .prepare('pragma integrity_check')
          .all()
          .map((r) => r.integrity_check),
        ['ok'],
      );
      assert.equal((copy.prepare("select count(*) as n from settings where name like 'row-%'").get() as { n: number }).n, 2_000);
    } finally {
      copy.close();
    }
    const inCopy = writesIn(target);
    assert.equal(inCopy.rows, inCopy.count, 'every write in the copy is whole: as many rows as the count committed with them');
    assert.ok(inCopy.count >= atStart.count && inCopy.count <= atEnd.count, `${atStart.count} ≤ ${inCopy.count} ≤ ${atEnd.count}`);
  } finally {
    writer.kill();
    await once(writer, 'exit');
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SQLite: an unpaced backup (0 bytes a second) copies the file in one step', async () => {
  const s = await freshStore('sqlite');
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-backup-'));
  try {
    const target = join(dir, 'copy.db');
    const stats = await s.store.backup!(target, { bytesPerSecond: 0, stepBytes: 4096 });
    assert.equal(stats.steps, 1);
    assert.ok(stats.pages > 1);
    assert.equal(statSync(target).size, stats.pages * stats.pageSize);
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SQLite: a backup that fails (its target cannot be opened) rejects with SQLite’s error and leaves no worker behind', async () => {
  const s = await freshStore('sqlite');
  try {
    await assert.rejects(
      s.store.backup!(join(tmpdir(), 'no-such-directory-kh', 'copy.db'), { bytesPerSecond: 0, stepBytes: 4096 }),
      /unable to open/,
    );
  } finally {
    await s.close();
  }
});
