import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';
import { down, up } from '../../../src/store/schema-migrations/0014-analytics-projections.ts';

// Roll-up rows stored before migration 0014 are summed into the new coarser forms: `by_key` (tags dropped) and
// `by_api` (per API and outcome). The test undoes 0014 on a migrated store, fills the roll-ups as an older server
// would have, and runs `up` again.

const DAY_MS = 86_400_000;
const D = Date.UTC(2025, 0, 31);

for (const dialect of DIALECTS) {
  describe(`schema migration 0014: the roll-ups' coarser forms (${dialect})`, () => {
    test('every roll-up row is summed into its by_key and by_api groups', async () => {
      const { store, close } = await freshStore(dialect);
      try {
        // biome-ignore lint/suspicious/noExplicitAny: rows of a schema between migrations
        const db = store.db as unknown as Kysely<any>;
        await down(db);
        const tags = (t: string[]) => (dialect === 'postgres' ? `{${t.join(',')}}` : JSON.stringify(t));
        const row = (time: number, key: string, outcome: string, t: string[], count: number, credits: number) => ({
          time,
          workspace_id: 'ws_1',
          key_space_id: key === 'key_3' ? 'api_2' : 'api_1',
          identity_id: key === 'key_1' ? 'id_1' : '',
          external_id: key === 'key_1' ? 'user_1' : '',
          key_id: key,
          outcome,
          tags: tags(t),
          count,
          spent_credits: credits,
          latency_sum: count * 2,
        });
        await db
          .insertInto('analytics_key_verifications_per_day')
          .values([
            row(D, 'key_1', 'VALID', [], 3, 1),
            row(D, 'key_1', 'VALID', ['a'], 4, 2),
            row(D, 'key_1', 'RATE_LIMITED', ['a'], 1, 0),
            row(D, 'key_2', 'VALID', ['b'], 5, 5),
            row(D, 'key_3', 'VALID', [], 7, 0),
            row(D + DAY_MS, 'key_2', 'VALID', [], 2, 0),
          ])
          .execute();
        await up(db);
        const read = async (table: string, columns: string[]) =>
          (
            await db
              .selectFrom(table)
              .select([...columns, 'count', 'spent_credits', 'latency_sum'])
              .execute()
          )
            .map((r) => [
              ...columns.map((c) => (c === 'time' ? Number(r[c]) : r[c])),
              Number(r.count),
              Number(r.spent_credits),
              Number(r.latency_sum),
            ])
            .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
        assert.deepEqual(await read('analytics_key_verifications_per_day_by_api', ['time', 'key_space_id', 'outcome']), [
          [D, 'api_1', 'RATE_LIMITED', 1, 0, 2],
          [D, 'api_1', 'VALID', 12, 8, 24],
          [D, 'api_2', 'VALID', 7, 0, 14],
          [D + DAY_MS, 'api_1', 'VALID', 2, 0, 4],
        ]);
        assert.deepEqual(
          await read('analytics_key_verifications_per_day_by_key', ['time', 'key_id', 'identity_id', 'external_id', 'outcome']),
          [
            [D, 'key_1', 'id_1', 'user_1', 'RATE_LIMITED', 1, 0, 2],
            [D, 'key_1', 'id_1', 'user_1', 'VALID', 7, 3, 14],
            [D, 'key_2', '', '', 'VALID', 5, 5, 10],
            [D, 'key_3', '', '', 'VALID', 7, 0, 14],
            [D + DAY_MS, 'key_2', '', '', 'VALID', 2, 0, 4],
          ],
        );
        assert.equal((await db.selectFrom('analytics_key_verifications_per_hour_by_api').selectAll().execute()).length, 0);
      } finally {
        await close();
      }
    });
  });
}
