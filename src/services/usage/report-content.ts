import { sql } from 'kysely';
import type { UsagePeriod } from '../../domain/usage-exports.ts';
import type { Executor } from '../../store/store.ts';
import { IN_LIST_CHUNK } from '../../store/store.ts';
import type { UsageExportRow } from '../../store/schema-usage.ts';
import { recordId } from './requests.ts';

/**
 * One subject's usage in a period: the record's id, the subject (an externalId or key id), verifications counted,
 * credits spent, and (Stripe) its customer.
 */
export type UsageRecord = [id: string, subject: string, count: number, credits: number, customer?: string];

/** What a report sends: fixed when it is written, so that every attempt sends the same records under the same ids. */
export interface ReportContent {
  /** The CloudEvents `source` (OpenMeter) and the event type or Stripe event name, as they were when the report was written. */
  source: string;
  name: string;
  records: UsageRecord[];
}

/**
 * The usage of `exp`'s subjects in the period starting at `periodStart`: summed from the `by_key` roll-up of the
 * period's grain (one bucket: a range of the workspace's rows by primary key). `count` counts the outcomes the
 * export names; `credits` are all the credits spent. Subjects with neither send nothing; verifications without a
 * key (NOT_FOUND), or of keys without an identity when the subject is the identity, belong to no subject. For Stripe,
 * subjects whose meta has no customer id in the export's field are left out and counted in `skipped`.
 */
export async function periodUsage(
  db: Executor,
  exp: UsageExportRow,
  periodStart: number,
): Promise<{ content: ReportContent; skipped: number }> {
  const outcomes = JSON.parse(exp.outcomes) as string[];
  const byIdentity = exp.subject === 'identity';
  const table = `analytics_key_verifications_per_${exp.period as UsagePeriod}_by_key` as const;
  const rows = await db
    .selectFrom(table)
    .select([
      byIdentity ? 'identity_id as owner' : 'key_id as owner',
      byIdentity ? 'external_id as subject' : 'key_id as subject',
      sql<number | string>`sum(case when outcome in (${sql.join(outcomes)}) then count else 0 end)`.as('count'),
      sql<number | string>`sum(spent_credits)`.as('credits'),
    ])
    .where('workspace_id', '=', exp.workspace_id)
    .where('time', '=', periodStart)
    .where(byIdentity ? 'identity_id' : 'key_id', '<>', '')
    .groupBy(byIdentity ? ['identity_id', 'external_id'] : ['key_id'])
    .orderBy(byIdentity ? 'external_id' : 'key_id')
    .execute();
  const used = rows
    .map((r) => ({ owner: r.owner, subject: r.subject, count: Number(r.count), credits: Number(r.credits) }))
    .filter((r) => r.count > 0 || r.credits > 0);
  const content: ReportContent = { source: exp.source, name: exp.event_name, records: [] };
  const id = (owner: string) => recordId(exp.id, periodStart, owner);
  if (exp.customer_field === null) {
    content.records = used.map((r) => [id(r.owner), r.subject, r.count, r.credits]);
    return { content, skipped: 0 };
  }
  const customers = await customersOf(db, exp, [...new Set(used.map((r) => r.owner))]);
  for (const r of used) {
    const customer = customers.get(r.owner);
    if (customer !== undefined) content.records.push([id(r.owner), r.subject, r.count, r.credits, customer]);
  }
  return { content, skipped: used.length - content.records.length };
}

/** Stripe customer ids by identity (or key) id: the string in the meta field the export names, where there is one. */
async function customersOf(db: Executor, exp: UsageExportRow, owners: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const field = exp.customer_field ?? '';
  for (let i = 0; i < owners.length; i += IN_LIST_CHUNK) {
    const chunk = owners.slice(i, i + IN_LIST_CHUNK);
    const metas =
      exp.subject === 'identity'
        ? await db
            .selectFrom('identities')
            .select(['id', 'meta'])
            .where('workspace_id', '=', exp.workspace_id)
            .where('id', 'in', chunk)
            .execute()
        : await db
            .selectFrom('keys')
            .select(['id', 'meta'])
            .where('workspace_id', '=', exp.workspace_id)
            .where('id', 'in', chunk)
            .execute();
    for (const { id, meta } of metas) {
      const value = meta === null ? undefined : (JSON.parse(meta) as Record<string, unknown>)[field];
      if (typeof value === 'string' && value.length > 0) found.set(id, value);
    }
  }
  return found;
}
