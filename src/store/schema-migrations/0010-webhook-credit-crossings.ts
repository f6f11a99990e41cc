import type { Kysely } from 'kysely';

// Frozen in time: this file never imports application types. The credit crossings of spends not yet turned
// into webhook events: on PostgreSQL the spend statement itself writes one row when it takes a key's credits
// across a threshold (a data-modifying CTE, so the crossing commits with the spend and costs no round trip),
// and a background step turns each row into its events and deletes it, in one transaction. Normally empty.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_credit_crossings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('api_id', 'text', (c) => c.notNull())
    .addColumn('remaining_before', 'bigint', (c) => c.notNull())
    .addColumn('remaining_after', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_credit_crossings').execute();
}
