import { AppError, invalid, type FieldProblem } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import {
  DEFAULT_EVENT_NAME,
  DEFAULT_EVENT_TYPE,
  DEFAULT_STRIPE_CUSTOMER_FIELD,
  DEFAULT_STRIPE_URL,
  DEFAULT_USAGE_OUTCOMES,
  MAX_USAGE_EXPORTS,
  PERIOD_MS,
  type UsageDestination,
  type UsagePeriod,
  type UsageSubject,
} from '../../domain/usage-exports.ts';
import type { VerifyCode } from '../../domain/verify-codes.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { WebhookSettings } from '../../config/webhooks.ts';
import type { Db } from '../../store/store.ts';
import type { UsageExportRow } from '../../store/schema-usage.ts';
import { callerAudit, recordAudit } from '../audit/record-audit.ts';
import { can, requirePermissions, requireSomeGrant, type Caller } from '../caller.ts';
import { bucketOf } from '../analytics/rollups.ts';
import { auditedUrl } from '../webhooks/endpoint-records.ts';
import { requireSafeUrl } from '../webhooks/url-safety.ts';
import { exportView, requireExportFor, type ExportView } from './export-records.ts';

export interface ExportFields {
  destination: UsageDestination;
  /** OpenMeter's ingest endpoint (required); Stripe's meter events endpoint (default DEFAULT_STRIPE_URL). */
  url?: string;
  token: string;
  subject?: UsageSubject;
  period?: UsagePeriod;
  outcomes?: VerifyCode[];
  eventType?: string;
  eventName?: string;
  stripeCustomerField?: string;
  enabled?: boolean;
}

export type ExportChanges = Partial<
  Pick<ExportFields, 'url' | 'token' | 'outcomes' | 'eventType' | 'eventName' | 'stripeCustomerField' | 'enabled'>
>;

/** What usage-export operations need beside the store: the vault (tokens), the URL rules, and where the installation is. */
export interface UsageContext {
  db: Db;
  vault?: Vault;
  webhooks: WebhookSettings;
  /** KEYHOLD_PUBLIC_URL (or the listen address): its origin names the installation in each record's `source`. */
  publicUrl: string;
}

/**
 * The members that belong to the other destination, and (creating) a missing OpenMeter URL: each a problem
 * (createExport's body rules; updateExport checks the members against the export's destination).
 */
export function destinationProblems(destination: unknown, body: Record<string, unknown>, creating: boolean): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const only = (member: string, of: UsageDestination) => {
    if (body[member] !== undefined && destination !== of) problems.push({ path: `/${member}`, message: `is for destination "${of}" only` });
  };
  only('eventType', 'openmeter');
  only('eventName', 'stripe');
  only('stripeCustomerField', 'stripe');
  if (creating && destination === 'openmeter' && body.url === undefined)
    problems.push({ path: '/url', message: 'is required for destination "openmeter" (its ingest endpoint, …/api/v1/events)' });
  return problems;
}

/** createExport's cross-member rules, for the route's 400 (http/validation.ts). */
export const createExportRules = (body: unknown): FieldProblem[] =>
  body && typeof body === 'object'
    ? destinationProblems((body as Record<string, unknown>).destination, body as Record<string, unknown>, true)
    : [];

const outcomesJson = (outcomes: readonly VerifyCode[] | undefined): string =>
  JSON.stringify([...new Set(outcomes ?? DEFAULT_USAGE_OUTCOMES)]);

/** The CloudEvents `source` of a workspace's records: the installation (its public origin) and the workspace. */
const sourceOf = (publicUrl: string, workspaceId: string): string => `${new URL(publicUrl).origin}/workspaces/${workspaceId}`;

/** usage.createExport: the export, reporting from the period in progress on. Needs `usage.*.create_export`. */
export async function createExport(ctx: UsageContext, caller: Caller, input: ExportFields): Promise<{ exportId: string }> {
  requirePermissions(caller, 'usage.*.create_export');
  const problems = destinationProblems(input.destination, input as unknown as Record<string, unknown>, true);
  if (problems.length) throw invalid(problems);
  const vault = requireVault(ctx.vault, 'a usage export (its token is stored encrypted)');
  const url = input.url ?? DEFAULT_STRIPE_URL;
  await requireSafeUrl(url, ctx.webhooks);
  const now = Date.now();
  const id = newId('uexp');
  const period = input.period ?? 'hour';
  const start = bucketOf(now, period);
  const stripe = input.destination === 'stripe';
  await ctx.db.transaction().execute(async (tx) => {
    const count = await tx
      .selectFrom('usage_exports')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('workspace_id', '=', caller.workspaceId)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_USAGE_EXPORTS)
      throw new AppError(
        'state/precondition-failed',
        `The workspace has ${MAX_USAGE_EXPORTS} usage exports, the most it may; delete one first`,
      );
    const [sealed] = await vault.encrypt(tx, caller.workspaceId, [input.token]);
    const row: UsageExportRow = {
      id,
      workspace_id: caller.workspaceId,
      destination: input.destination,
      url,
      token_data_key_id: sealed.dataKeyId,
      token_ciphertext: sealed.ciphertext,
      subject: input.subject ?? 'identity',
      period,
      outcomes: outcomesJson(input.outcomes),
      event_name: stripe ? (input.eventName ?? DEFAULT_EVENT_NAME) : (input.eventType ?? DEFAULT_EVENT_TYPE),
      customer_field: stripe ? (input.stripeCustomerField ?? DEFAULT_STRIPE_CUSTOMER_FIELD) : null,
      source: sourceOf(ctx.publicUrl, caller.workspaceId),
      enabled: input.enabled === false ? 0 : 1,
      next_period_start: start,
      next_period_end: start + PERIOD_MS[period],
      created_at: now,
      updated_at: now,
    };
    await tx.insertInto('usage_exports').values(row).execute();
    const diff = { ...exportView(row), url: auditedUrl(url) };
    await recordAudit(tx, [callerAudit(caller, 'usage.create_export', { type: 'usageExport', id }, { diff })], now);
  });
  return { exportId: id };
}

/** usage.listExports: the exports the caller may read (`usage.<exportId>.read_export`), oldest first (at most MAX_USAGE_EXPORTS). */
export async function listExports(db: Db, caller: Caller): Promise<{ exports: ExportView[] }> {
  requireSomeGrant(caller, 'usage', 'read_export');
  const rows = await db.selectFrom('usage_exports').selectAll().where('workspace_id', '=', caller.workspaceId).orderBy('id').execute();
  return { exports: rows.filter((r) => can(caller, `usage.${r.id}.read_export`)).map(exportView) };
}

/** usage.getExport. Needs `usage.<exportId>.read_export`. */
export async function getExport(db: Db, caller: Caller, input: { exportId: string }): Promise<ExportView> {
  return exportView(await requireExportFor(db, caller, input.exportId, 'read_export'));
}

/**
 * usage.updateExport: absent members stay. Destination, subject and period are the export's identity (its records'
 * ids depend on them): another of those is another export. Enabling again reports the periods missed while disabled,
 * in order. Needs `usage.<exportId>.update_export`.
 */
export async function updateExport(
  ctx: UsageContext,
  caller: Caller,
  input: ExportChanges & { exportId: string },
): Promise<Record<string, never>> {
  const row = await requireExportFor(ctx.db, caller, input.exportId, 'update_export');
  const problems = destinationProblems(row.destination, input as unknown as Record<string, unknown>, false);
  if (problems.length) throw invalid(problems);
  if (input.url !== undefined) await requireSafeUrl(input.url, ctx.webhooks);
  const now = Date.now();
  const set: Partial<UsageExportRow> = { updated_at: now };
  if (input.url !== undefined) set.url = input.url;
  if (input.outcomes !== undefined) set.outcomes = outcomesJson(input.outcomes);
  const name = input.eventType ?? input.eventName;
  if (name !== undefined) set.event_name = name;
  if (input.stripeCustomerField !== undefined) set.customer_field = input.stripeCustomerField;
  if (input.enabled !== undefined) set.enabled = input.enabled ? 1 : 0;
  // The token is named as changed, never shown.
  const changed = Object.keys(input).filter((k) => k !== 'exportId');
  await ctx.db.transaction().execute(async (tx) => {
    if (input.token !== undefined) {
      const vault = requireVault(ctx.vault, 'a usage export token');
      const [sealed] = await vault.encrypt(tx, caller.workspaceId, [input.token]);
      set.token_data_key_id = sealed.dataKeyId;
      set.token_ciphertext = sealed.ciphertext;
    }
    await tx.updateTable('usage_exports').set(set).where('id', '=', row.id).where('workspace_id', '=', caller.workspaceId).execute();
    const diff = { changed, ...(input.url === undefined ? {} : { url: auditedUrl(input.url) }) };
    await recordAudit(tx, [callerAudit(caller, 'usage.update_export', { type: 'usageExport', id: row.id }, { diff })], now);
  });
  return {};
}

/** usage.deleteExport: the export and its reports, for good (a report not yet sent is not sent). Needs `usage.<exportId>.delete_export`. */
export async function deleteExport(db: Db, caller: Caller, input: { exportId: string }): Promise<Record<string, never>> {
  await requireExportFor(db, caller, input.exportId, 'delete_export');
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('usage_exports').where('id', '=', input.exportId).where('workspace_id', '=', caller.workspaceId).execute();
    await recordAudit(tx, [callerAudit(caller, 'usage.delete_export', { type: 'usageExport', id: input.exportId })], now);
  });
  return {};
}
