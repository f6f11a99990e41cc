import { sql } from 'kysely';
import { GRAINS } from '../../src/services/analytics/rollups.ts';
import { VERIFICATION_FORMS } from '../../src/services/analytics/rollup-forms.ts';
import type { Db } from './rows.ts';

/**
 * Fills every verification roll-up's coarser forms again from the roll-up, as the batch writer would have: for
 * tests that write roll-up rows straight into the table instead of through the writer.
 */
export async function refillRollupForms(db: Db): Promise<void> {
  for (const grain of GRAINS) {
    const rollup = `analytics_key_verifications_per_${grain}`;
    for (const [form, group] of Object.entries(VERIFICATION_FORMS)) {
      const table = `${rollup}_${form}`;
      const columns = sql.join(group.map((c) => sql.ref(c)));
      await sql`delete from ${sql.table(table)}`.execute(db);
      await sql`insert into ${sql.table(table)} (${columns}, count, spent_credits, latency_sum)
        select ${columns}, sum(count), sum(spent_credits), sum(latency_sum) from ${sql.table(rollup)} group by ${columns}`.execute(db);
    }
  }
}
