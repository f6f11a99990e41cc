import { notFound } from '../../domain/errors.ts';
import type { UsageDestination, UsagePeriod, UsageSubject } from '../../domain/usage-exports.ts';
import type { VerifyCode } from '../../domain/verify-codes.ts';
import type { Executor } from '../../store/store.ts';
import type { UsageExportRow } from '../../store/schema-usage.ts';
import { requirePermissions, type Caller } from '../caller.ts';

/** An export as the API shows it: never its token. */
export interface ExportView {
  exportId: string;
  destination: UsageDestination;
  url: string;
  subject: UsageSubject;
  period: UsagePeriod;
  outcomes: VerifyCode[];
  /** OpenMeter: the CloudEvents `type`. */
  eventType?: string;
  /** Stripe: the meter's `event_name`, and the meta field holding the customer id. */
  eventName?: string;
  stripeCustomerField?: string;
  enabled: boolean;
  /** Periods before this (epoch ms) are reported; the next one is reported once it has closed and settled. */
  reportedUntil: number;
  createdAt: number;
  updatedAt: number;
}

export const exportView = (row: UsageExportRow): ExportView => {
  const stripe = row.destination === 'stripe';
  return {
    exportId: row.id,
    destination: row.destination as UsageDestination,
    url: row.url,
    subject: row.subject as UsageSubject,
    period: row.period as UsagePeriod,
    outcomes: JSON.parse(row.outcomes) as VerifyCode[],
    ...(stripe ? { eventName: row.event_name, stripeCustomerField: row.customer_field ?? '' } : { eventType: row.event_name }),
    enabled: Number(row.enabled) === 1,
    reportedUntil: Number(row.next_period_start),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
};

export type ExportAction = 'read_export' | 'update_export' | 'delete_export';

/** The export `exportId` of the caller's workspace (another workspace's, or none, is a 404), then `usage.<exportId>.<action>`. */
export async function requireExportFor(db: Executor, caller: Caller, exportId: string, action: ExportAction): Promise<UsageExportRow> {
  const row = await db
    .selectFrom('usage_exports')
    .selectAll()
    .where('id', '=', exportId)
    .where('workspace_id', '=', caller.workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound('usage export', exportId);
  requirePermissions(caller, `usage.${row.id}.${action}`);
  return row;
}
