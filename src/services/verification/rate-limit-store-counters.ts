import { sql, type Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import type { Counters } from './rate-limit-counters.ts';

/**
 * Counters in the store's `ratelimit_counters`, one row per bucket; `expires_at` is the window's end (the
 * limiter deletes rows once CLOCK_SKEW_MS past it). The same statements on SQLite and PostgreSQL.
 */
export function storeCounters(db: Kysely<Database>): Counters {
  const read = async (bucket: string): Promise<number> => {
    const row = await db.selectFrom('ratelimit_counters').select('count').where('bucket', '=', bucket).executeTakeFirst();
    return row ? Number(row.count) : 0;
  };
  return {
    async addIfFits(bucket, cost, limit, reset) {
      if (cost === 0 || cost > limit) {
        // Nothing to add (cost 0), or it cannot fit even an empty window: decide on a read.
        const count = await read(bucket);
        return { passed: count + cost <= limit, count };
      }
      // cost <= limit, so a first insert always fits; a conflicting row is updated only if the sum fits.
      // On PostgreSQL the row lock (the WHERE is re-checked against the latest row version), on SQLite the
      // single writer, make this exact under any concurrency.
      const row = await db
        .insertInto('ratelimit_counters')
        .values({ bucket, count: cost, expires_at: reset })
        .onConflict((oc) =>
          oc
            .column('bucket')
            .doUpdateSet({ count: sql<number>`ratelimit_counters.count + excluded.count` })
            .where(sql<boolean>`ratelimit_counters.count + excluded.count <= ${limit}`),
        )
        .returning('count')
        .executeTakeFirst();
      if (row) return { passed: true, count: Number(row.count) };
      return { passed: false, count: await read(bucket) };
    },
    async add(items) {
      // One statement. Sorted, so concurrent multi-row upserts of several nodes lock rows in the same
      // order (no deadlock on PostgreSQL).
      const sorted = [...items].sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : 0));
      const rows = await db
        .insertInto('ratelimit_counters')
        .values(sorted.map((a) => ({ bucket: a.bucket, count: a.add, expires_at: a.reset })))
        .onConflict((oc) => oc.column('bucket').doUpdateSet({ count: sql<number>`ratelimit_counters.count + excluded.count` }))
        .returning(['bucket', 'count'])
        .execute();
      return new Map(rows.map((r) => [r.bucket, Number(r.count)]));
    },
    async read(buckets) {
      const rows = await db.selectFrom('ratelimit_counters').select(['bucket', 'count']).where('bucket', 'in', buckets).execute();
      const totals = new Map(buckets.map((b) => [b, 0]));
      for (const r of rows) totals.set(r.bucket, Number(r.count));
      return totals;
    },
  };
}
