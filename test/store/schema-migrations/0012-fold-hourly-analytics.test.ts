import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';
import { down, up } from '../../../src/store/schema-migrations/0012-fold-hourly-analytics.ts';

// The hourly counts of before migration 0012 survive it: added into the per-hour, per-day and per-month roll-ups
// (on top of what those already hold), and the hourly tables are emptied (kept for older servers during an
// upgrade). The test fills the hourly tables of a migrated store, as an older server would, and runs `up` again.

const HOUR_MS = 3_600_000;
/** 2025-01-31T22:00Z: the hours below span a day's and a month's end. */
const H = Date.UTC(2025, 0, 31, 22);

for (const dialect of DIALECTS) {
  describe(`schema migration 0012: the hourly analytics folded into the roll-ups (${dialect})`, () => {
    test('every hourly count lands in its hour, day and month; counts already rolled up are added to', async () => {
      const { store, close } = await freshStore(dialect);
      try {
        // biome-ignore lint/suspicious/noExplicitAny: the hourly tables are not in today's schema
        const db = store.db as unknown as Kysely<any>;
        await down(db); // a no-op: the hourly tables are still there, emptied by up()
        const v = { workspace_id: 'ws_1', api_id: 'api_1', key_id: 'key_1' };
        await db
          .insertInto('key_verifications_hourly')
          .values([
            { ...v, hour: H, outcome: 'VALID', identity_id: null, count: 3 },
            { ...v, hour: H + HOUR_MS, outcome: 'VALID', identity_id: null, count: 4 },
            { ...v, hour: H + 2 * HOUR_MS, outcome: 'VALID', identity_id: null, count: 5 }, // 2025-02-01
            { ...v, hour: H, outcome: 'RATE_LIMITED', identity_id: null, count: 2 },
          ])
          .execute();
        const r = { workspace_id: 'ws_1', namespace_id: 'ns_1', identifier: 'u' };
        await db
          .insertInto('ratelimit_hourly')
          .values([
            { ...r, hour: H, passed: 7, denied: 1 },
            { ...r, hour: H + 2 * HOUR_MS, passed: 0, denied: 6 },
          ])
          .execute();
        // Already in the per-hour roll-up (recorded since 0011): the folded count is added to it.
        const tags = dialect === 'postgres' ? '{}' : '[]';
        await db
          .insertInto('analytics_key_verifications_per_hour')
          .values({ time: H, workspace_id: 'ws_1', key_space_id: 'api_1', key_id: 'key_1', outcome: 'VALID', tags, count: 10 })
          .execute();
        await up(db);

        const ver = async (grain: string) =>
          (
            await db
              .selectFrom(`analytics_key_verifications_per_${grain}`)
              .select(['time', 'outcome', 'count', 'identity_id', 'external_id'])
              .where('key_id', '=', 'key_1')
              .execute()
          )
            .map((x) => [Number(x.time), x.outcome, Number(x.count), x.identity_id, x.external_id])
            .sort((a, b) => (a[0] as number) - (b[0] as number) || String(a[1]).localeCompare(String(b[1])));
        assert.deepEqual(await ver('hour'), [
          [H, 'RATE_LIMITED', 2, '', ''],
          [H, 'VALID', 13, '', ''],
          [H + HOUR_MS, 'VALID', 4, '', ''],
          [H + 2 * HOUR_MS, 'VALID', 5, '', ''],
        ]);
        assert.deepEqual(await ver('day'), [
          [Date.UTC(2025, 0, 31), 'RATE_LIMITED', 2, '', ''],
          [Date.UTC(2025, 0, 31), 'VALID', 7, '', ''],
          [Date.UTC(2025, 1, 1), 'VALID', 5, '', ''],
        ]);
        assert.deepEqual(await ver('month'), [
          [Date.UTC(2025, 0, 1), 'RATE_LIMITED', 2, '', ''],
          [Date.UTC(2025, 0, 1), 'VALID', 7, '', ''],
          [Date.UTC(2025, 1, 1), 'VALID', 5, '', ''],
        ]);
        assert.deepEqual(await ver('minute'), [], 'hours cannot be split into minutes');

        const rl = async (grain: string) =>
          (
            await db
              .selectFrom(`analytics_ratelimits_per_${grain}`)
              .select(['time', 'passed', 'total'])
              .where('namespace_id', '=', 'ns_1')
              .execute()
          )
            .map((x) => [Number(x.time), Number(x.passed), Number(x.total)])
            .sort((a, b) => a[0] - b[0]);
        assert.deepEqual(await rl('hour'), [
          [H, 7, 8],
          [H + 2 * HOUR_MS, 0, 6],
        ]);
        assert.deepEqual(await rl('day'), [
          [Date.UTC(2025, 0, 31), 7, 8],
          [Date.UTC(2025, 1, 1), 0, 6],
        ]);
        assert.deepEqual(await rl('month'), [
          [Date.UTC(2025, 0, 1), 7, 8],
          [Date.UTC(2025, 1, 1), 0, 6],
        ]);
        // Moved, not copied: the hourly tables are kept for older servers during an upgrade, but emptied.
        assert.deepEqual(await db.selectFrom('key_verifications_hourly').selectAll().execute(), []);
        assert.deepEqual(await db.selectFrom('ratelimit_hourly').selectAll().execute(), []);
      } finally {
        await close();
      }
    });
  });
}
