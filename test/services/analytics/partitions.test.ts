import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { freshStore } from '../../helpers/harness.ts';
import { VerificationRecorder } from '../../../src/services/verification/verification-recorder.ts';
import { RatelimitRecorder } from '../../../src/services/ratelimits/ratelimit-recorder.ts';
import { runPrunePass } from '../../../src/services/maintenance/prune.ts';
import { loadRetentionConfig } from '../../../src/config/retention.ts';
import { ensureDayPartitions } from '../../../src/services/analytics/partitions.ts';
import { openStore } from '../../../src/store/store.ts';

// PostgreSQL only: the raw analytics tables are partitioned by day (SQLite has no partitions; its retention
// deletes rows, tested in test/services/maintenance/prune-pass.test.ts).

const DAY = 86_400_000;
const dayStart = (t: number) => t - (t % DAY);
const partName = (table: string, day: number) => `${table}_p${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;

describe('analytics day partitions (postgres)', () => {
  test('a batch creates the partitions of its days and the one after its latest; the prune pass drops the days past retention, rows and all', async () => {
    const { store, close } = await freshStore('postgres');
    try {
      const db = store.db;
      const now = Date.now();
      const old = dayStart(now - 40 * DAY) + 3_600_000; // past the raw retention (30 days)
      const recent = now - 2 * DAY;
      const v = new VerificationRecorder(db, { dialect: 'postgres' });
      const l = new RatelimitRecorder(db, { dialect: 'postgres' });
      for (const time of [old, old + 60_000, recent]) {
        v.record({ keyId: 'key_p', workspaceId: 'ws_p', apiId: 'api_p', identityId: null, code: 'VALID', time });
        l.record({ workspaceId: 'ws_p', namespaceId: 'ns_p', identifier: 'u', passed: true, time });
      }
      await Promise.all([v.flush(), l.flush()]);
      const partitions = async (table: string) =>
        (
          await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
            where i.inhparent = ${table}::regclass`.execute(db)
        ).rows
          .map((r) => r.name)
          .sort();
      for (const table of ['analytics_key_verifications', 'analytics_ratelimits']) {
        const names = await partitions(table);
        for (const day of [dayStart(old), dayStart(recent), dayStart(recent) + DAY])
          assert.ok(names.includes(partName(table, day)), `${table}: ${partName(table, day)} in ${names}`);
        const inDefault = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${table}_default`)}`.execute(db);
        assert.equal(inDefault.rows[0]!.n, 0, `${table}: every event in its day's partition`);
      }

      const counts = await runPrunePass(store, loadRetentionConfig({}), { now });
      for (const table of ['analytics_key_verifications', 'analytics_ratelimits']) {
        const names = await partitions(table);
        assert.ok(!names.includes(partName(table, dayStart(old))), `${table}: the old day dropped`);
        assert.ok(names.includes(partName(table, dayStart(recent))), `${table}: the recent day kept`);
      }
      const left = await db.selectFrom('analytics_key_verifications').select('time').execute();
      assert.deepEqual(
        left.map((r) => Number(r.time)),
        [recent],
      );
      const leftRl = await db.selectFrom('analytics_ratelimits').select('time').execute();
      assert.deepEqual(
        leftRl.map((r) => Number(r.time)),
        [recent],
      );
      // The roll-ups keep their own (longer) retention: the old hour is still counted.
      const hours = await db.selectFrom('analytics_key_verifications_per_hour').select(['time', 'count']).execute();
      assert.equal(
        hours.reduce((a, r) => a + Number(r.count), 0),
        3,
      );
      assert.ok(counts.verification_events !== undefined);

      // A batch after the drop re-creates a day it writes again.
      v.record({ keyId: 'key_p', workspaceId: 'ws_p', apiId: 'api_p', identityId: null, code: 'VALID', time: old });
      await v.flush();
      assert.ok((await partitions('analytics_key_verifications')).includes(partName('analytics_key_verifications', dayStart(old))));
    } finally {
      await close();
    }
  });

  test('two nodes creating different days at once both succeed: creations take turns instead of deadlocking', async () => {
    const { store, url, close } = await freshStore('postgres');
    const other = openStore(url);
    try {
      // Two nodes (pools of their own) each creating 12 days, in opposite orders, several at once: without
      // a lock shared by every creation, two ATTACH PARTITIONs of different days deadlock on the parent.
      const start = dayStart(Date.now()) - 40 * DAY;
      const days = Array.from({ length: 12 }, (_, i) => start + i * 2 * DAY);
      const create = (db: typeof store.db, order: number[]) =>
        Promise.all(order.map((day) => ensureDayPartitions(db, 'analytics_key_verifications', [day + 3_600_000])));
      await Promise.all([create(store.db, days), create(other.db, [...days].reverse())]);
      const names = (
        await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
          where i.inhparent = 'analytics_key_verifications'::regclass`.execute(store.db)
      ).rows.map((r) => r.name);
      for (const day of days) {
        assert.ok(names.includes(partName('analytics_key_verifications', day)), `${partName('analytics_key_verifications', day)} created`);
        assert.ok(names.includes(partName('analytics_key_verifications', day + DAY)), 'and the day after it');
      }
    } finally {
      await other.close();
      await close();
    }
  });
});
