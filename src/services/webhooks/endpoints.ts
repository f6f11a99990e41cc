import { AppError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import {
  DEFAULT_CREDITS_LOW_BELOW,
  DEFAULT_EXPIRING_WITHIN_DAYS,
  EVENT_TYPES,
  MAX_WEBHOOK_ENDPOINTS,
  SECRET_OVERLAP_MS,
  type EventType,
} from '../../domain/webhook-events.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db } from '../../store/store.ts';
import type { WebhookEndpointRow } from '../../store/schema-webhooks.ts';
import { callerAudit, recordAudit } from '../audit/record-audit.ts';
import { can, requirePermissions, requireSomeGrant, type Caller } from '../caller.ts';
import { auditedUrl, endpointView, requireEndpointFor, type EndpointView } from './endpoint-records.ts';
import type { WebhookSettings } from '../../config/webhooks.ts';
import { newSigningSecret } from './signing.ts';
import { requireSafeUrl } from './url-safety.ts';

export interface EndpointFields {
  url: string;
  events?: EventType[];
  description?: string | null;
  enabled?: boolean;
  creditsLowBelow?: number;
  expiringWithinDays?: number;
}

/** What webhook operations need beside the store: the vault (secrets) and the delivery settings (URL rules). */
export interface WebhookContext {
  db: Db;
  vault?: Vault;
  settings: WebhookSettings;
}

const eventsJson = (events: EventType[] | undefined): string => JSON.stringify(events ? [...new Set(events)] : [...EVENT_TYPES]);

/** webhooks.createEndpoint: the endpoint and its signing secret, returned here once. Needs `webhook.*.create_endpoint`. */
export async function createEndpoint(
  ctx: WebhookContext,
  caller: Caller,
  input: EndpointFields,
): Promise<{ endpointId: string; secret: string }> {
  requirePermissions(caller, 'webhook.*.create_endpoint');
  const vault = requireVault(ctx.vault, 'a webhook endpoint (its signing secret is stored encrypted)');
  await requireSafeUrl(input.url, ctx.settings);
  const now = Date.now();
  const id = newId('whep');
  const secret = newSigningSecret();
  await ctx.db.transaction().execute(async (tx) => {
    const count = await tx
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('workspace_id', '=', caller.workspaceId)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_WEBHOOK_ENDPOINTS)
      throw new AppError(
        'state/precondition-failed',
        `The workspace has ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints, the most it may; delete one first`,
      );
    const [sealed] = await vault.encrypt(tx, caller.workspaceId, [secret]);
    const enabled = input.enabled ?? true;
    await tx
      .insertInto('webhook_endpoints')
      .values({
        id,
        workspace_id: caller.workspaceId,
        url: input.url,
        events: eventsJson(input.events),
        description: input.description ?? null,
        enabled: enabled ? 1 : 0,
        disabled_reason: enabled ? null : 'disabled by a user',
        credits_low_below: input.creditsLowBelow ?? DEFAULT_CREDITS_LOW_BELOW,
        expiring_within_days: input.expiringWithinDays ?? DEFAULT_EXPIRING_WITHIN_DAYS,
        secret_data_key_id: sealed.dataKeyId,
        secret_ciphertext: sealed.ciphertext,
        previous_secret_data_key_id: null,
        previous_secret_ciphertext: null,
        previous_secret_until: null,
        failing_since: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const diff = { url: auditedUrl(input.url), events: JSON.parse(eventsJson(input.events)), enabled };
    await recordAudit(tx, [callerAudit(caller, 'webhook.create_endpoint', { type: 'webhookEndpoint', id }, { diff })], now);
  });
  return { endpointId: id, secret };
}

/** webhooks.listEndpoints: the endpoints the caller may read (`webhook.<endpointId>.read_endpoint`), oldest first. */
export async function listEndpoints(db: Db, caller: Caller): Promise<{ endpoints: EndpointView[] }> {
  requireSomeGrant(caller, 'webhook', 'read_endpoint');
  const rows = await db.selectFrom('webhook_endpoints').selectAll().where('workspace_id', '=', caller.workspaceId).orderBy('id').execute();
  return { endpoints: rows.filter((r) => can(caller, `webhook.${r.id}.read_endpoint`)).map(endpointView) };
}

/** webhooks.updateEndpoint: absent members stay; enabling clears `disabledReason`. Needs `webhook.<endpointId>.update_endpoint`. */
export async function updateEndpoint(
  ctx: WebhookContext,
  caller: Caller,
  input: Partial<EndpointFields> & { endpointId: string },
): Promise<Record<string, never>> {
  await requireEndpointFor(ctx.db, caller, input.endpointId, 'update_endpoint');
  if (input.url !== undefined) await requireSafeUrl(input.url, ctx.settings);
  const now = Date.now();
  const set: Partial<WebhookEndpointRow> = { updated_at: now };
  if (input.url !== undefined) set.url = input.url;
  if (input.events !== undefined) set.events = eventsJson(input.events);
  if (input.description !== undefined) set.description = input.description;
  if (input.creditsLowBelow !== undefined) set.credits_low_below = input.creditsLowBelow;
  if (input.expiringWithinDays !== undefined) set.expiring_within_days = input.expiringWithinDays;
  if (input.enabled !== undefined) {
    set.enabled = input.enabled ? 1 : 0;
    set.disabled_reason = input.enabled ? null : 'disabled by a user';
    if (input.enabled) set.failing_since = null;
  }
  const changed = Object.keys(input).filter((k) => k !== 'endpointId');
  await ctx.db.transaction().execute(async (tx) => {
    await tx
      .updateTable('webhook_endpoints')
      .set(set)
      .where('id', '=', input.endpointId)
      .where('workspace_id', '=', caller.workspaceId)
      .execute();
    const diff = { changed, ...(input.url === undefined ? {} : { url: auditedUrl(input.url) }) };
    await recordAudit(
      tx,
      [callerAudit(caller, 'webhook.update_endpoint', { type: 'webhookEndpoint', id: input.endpointId }, { diff })],
      now,
    );
  });
  return {};
}

/** webhooks.deleteEndpoint: the endpoint and its deliveries, for good. Needs `webhook.<endpointId>.delete_endpoint`. */
export async function deleteEndpoint(db: Db, caller: Caller, input: { endpointId: string }): Promise<Record<string, never>> {
  await requireEndpointFor(db, caller, input.endpointId, 'delete_endpoint');
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('webhook_endpoints').where('id', '=', input.endpointId).where('workspace_id', '=', caller.workspaceId).execute();
    await recordAudit(tx, [callerAudit(caller, 'webhook.delete_endpoint', { type: 'webhookEndpoint', id: input.endpointId })], now);
  });
  return {};
}

/**
 * webhooks.rotateSecret: a new signing secret, returned once; for SECRET_OVERLAP_MS deliveries carry
 * signatures by both. Needs `webhook.<endpointId>.update_endpoint`.
 */
export async function rotateSecret(ctx: WebhookContext, caller: Caller, input: { endpointId: string }): Promise<{ secret: string }> {
  const row = await requireEndpointFor(ctx.db, caller, input.endpointId, 'update_endpoint');
  const vault = requireVault(ctx.vault, 'a webhook signing secret');
  const secret = newSigningSecret();
  const now = Date.now();
  await ctx.db.transaction().execute(async (tx) => {
    const [sealed] = await vault.encrypt(tx, caller.workspaceId, [secret]);
    await tx
      .updateTable('webhook_endpoints')
      .set({
        secret_data_key_id: sealed.dataKeyId,
        secret_ciphertext: sealed.ciphertext,
        previous_secret_data_key_id: row.secret_data_key_id,
        previous_secret_ciphertext: row.secret_ciphertext,
        previous_secret_until: now + SECRET_OVERLAP_MS,
        updated_at: now,
      })
      .where('id', '=', row.id)
      .execute();
    await recordAudit(tx, [callerAudit(caller, 'webhook.rotate_secret', { type: 'webhookEndpoint', id: row.id })], now);
  });
  return { secret };
}
