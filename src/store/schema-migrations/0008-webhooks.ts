import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen in time: this file never imports application types. Webhooks: a workspace's endpoints (their
// signing secrets sealed by the vault, never in clear), the events written in the transaction of their
// cause (the outbox), and one delivery per (event, endpoint) with its attempts.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  // events: JSON array of subscribed types. previous_*: the secret before the last rotation, used beside the
  // new one until previous_secret_until. failing_since: the first failed attempt of an unbroken run of failures.
  await s
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('credits_low_below', 'bigint', (c) => c.notNull())
    .addColumn('expiring_within_days', 'integer', (c) => c.notNull())
    .addColumn('secret_data_key_id', 'text', (c) => c.notNull())
    .addColumn('secret_ciphertext', 'text', (c) => c.notNull())
    .addColumn('previous_secret_data_key_id', 'text')
    .addColumn('previous_secret_ciphertext', 'text')
    .addColumn('previous_secret_until', 'bigint')
    .addColumn('failing_since', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await s.createIndex('webhook_endpoints_workspace').on('webhook_endpoints').column('workspace_id').execute();

  // body: the exact JSON delivered ({type, timestamp, data}), so every attempt signs the same bytes.
  // dedupe_key: set for events that several servers may see at once (the first denial of a rate-limit
  // window): the unique index lets exactly one of them write it.
  await s
    .createTable('webhook_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('dedupe_key', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await s.createIndex('webhook_events_created').on('webhook_events').column('created_at').execute();
  await s.createIndex('webhook_events_dedupe').on('webhook_events').column('dedupe_key').unique().execute();

  await s
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('webhook_events.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .execute();
  // An endpoint's deliveries newest first (listDeliveries), an event's deliveries (retention), the pending ones (metrics).
  await s.createIndex('webhook_deliveries_endpoint').on('webhook_deliveries').columns(['endpoint_id', 'id']).execute();
  await s.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();
  await s
    .createIndex('webhook_deliveries_pending')
    .on('webhook_deliveries')
    .column('created_at')
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await s.createIndex('webhook_deliveries_finished').on('webhook_deliveries').columns(['status', 'updated_at']).execute();
  // Keys by expiry, for key.expiring and key.expired (partial: keys without an expiry, most of them, are not in it).
  await s.createIndex('keys_expires').on('keys').column('expires_at').where(sql.ref('expires_at'), 'is not', null).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('keys_expires').execute();
  for (const t of ['webhook_deliveries', 'webhook_events', 'webhook_endpoints']) await db.schema.dropTable(t).execute();
}
