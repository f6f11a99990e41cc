import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen in time: this file never imports application types. Usage exports (docs/usage-billing.md): a workspace's
// exports of metered usage to a billing system (their tokens sealed by the vault, never in clear), and one report per
// (export, period): the outbox of what is sent, written in the transaction that claims the period.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s
    .createTable('usage_exports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('token_data_key_id', 'text', (c) => c.notNull())
    .addColumn('token_ciphertext', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('outcomes', 'text', (c) => c.notNull())
    .addColumn('event_name', 'text', (c) => c.notNull())
    .addColumn('customer_field', 'text')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('next_period_start', 'bigint', (c) => c.notNull())
    .addColumn('next_period_end', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // A workspace's exports by id (lists); the enabled exports whose next period has closed (the scan, every few seconds).
  await s.createIndex('usage_exports_workspace').on('usage_exports').columns(['workspace_id', 'id']).execute();
  await s.createIndex('usage_exports_due').on('usage_exports').column('next_period_end').where(sql.ref('enabled'), '=', 1).execute();

  await s
    .createTable('usage_reports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('export_id', 'text', (c) => c.notNull().references('usage_exports.id').onDelete('cascade'))
    .addColumn('period_start', 'bigint', (c) => c.notNull())
    .addColumn('period_end', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('subjects', 'integer', (c) => c.notNull())
    .addColumn('skipped', 'integer', (c) => c.notNull())
    .addColumn('requests_sent', 'integer', (c) => c.notNull())
    .addColumn('rejected', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .execute();
  // One report per (export, period), whichever server claims it; an export's reports by id (listReports, newest first);
  // finished reports by age (retention).
  await s.createIndex('usage_reports_period').on('usage_reports').columns(['export_id', 'period_start']).unique().execute();
  await s.createIndex('usage_reports_export').on('usage_reports').columns(['export_id', 'id']).execute();
  await s.createIndex('usage_reports_finished').on('usage_reports').columns(['status', 'updated_at']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('usage_reports').execute();
  await db.schema.dropTable('usage_exports').execute();
}
