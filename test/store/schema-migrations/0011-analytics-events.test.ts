import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';

// The analytics tables: raw events (partitioned by day on PostgreSQL, with a default partition so an insert
// never fails) and roll-ups unique on their group. Rows leave out the columns with defaults (`as never`).

const GRAINS = ['minute', 'hour', 'day', 'month'];

for (const dialect of DIALECTS) {
  describe(`schema migration 0011: analytics events (${dialect})`, () => {
    test('raw events insert whatever their time; roll-ups are unique on their group; tags default empty', async () => {
      const { store, close } = await freshStore(dialect);
      try {
        const db = store.db;
        const pg = dialect === 'postgres';
        const tags = pg ? ['a', 'b'] : JSON.stringify(['a', 'b']);
        for (const time of [0, Date.now(), 4_102_444_800_000]) {
          await db
            .insertInto('analytics_key_verifications')
            .values({
              request_id: 'req_1',
              time,
              workspace_id: 'ws_1',
              key_space_id: 'api_1',
              key_id: 'key_1',
              region: 'local',
              outcome: 'VALID',
              tags,
              latency: 1.5,
            } as never)
            .execute();
          await db
            .insertInto('analytics_ratelimits')
            .values({ request_id: 'req_1', time, workspace_id: 'ws_1', namespace_id: 'ns_1', identifier: 'u', passed: 1, latency: 0.25 })
            .execute();
        }
        const raw = await db.selectFrom('analytics_key_verifications').selectAll().execute();
        assert.equal(raw.length, 3);
        assert.deepEqual([raw[0]!.identity_id, raw[0]!.external_id, Number(raw[0]!.spent_credits)], ['', '', 0]);
        assert.deepEqual(raw[0]!.tags, tags);
        if (pg) {
          const kinds = await sql<{
            relkind: string;
          }>`select relkind from pg_class where oid = 'analytics_key_verifications'::regclass`.execute(db);
          assert.equal(kinds.rows[0]!.relkind, 'p');
        }
        for (const grain of GRAINS) {
          const table = `analytics_key_verifications_per_${grain}` as 'analytics_key_verifications_per_hour';
          const row = { time: 0, workspace_id: 'ws_1', key_space_id: 'api_1', key_id: 'key_1', outcome: 'VALID', count: 1 };
          await db
            .insertInto(table)
            .values(row as never)
            .execute();
          await db
            .insertInto(table)
            .values({ ...row, tags } as never)
            .execute();
          await assert.rejects(
            db
              .insertInto(table)
              .values(row as never)
              .execute(),
          );
          const rl = `analytics_ratelimits_per_${grain}` as 'analytics_ratelimits_per_hour';
          const r = { time: 0, workspace_id: 'ws_1', namespace_id: 'ns_1', identifier: 'u', passed: 1, total: 1 };
          await db.insertInto(rl).values(r).execute();
          await assert.rejects(db.insertInto(rl).values(r).execute());
        }
      } finally {
        await close();
      }
    });
  });
}
