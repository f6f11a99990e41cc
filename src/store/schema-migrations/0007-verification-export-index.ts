import type { Kysely } from 'kysely';

// Frozen in time: this file never imports application types. `keyhold export verifications` reads a workspace's
// hourly verification counts oldest first, a page at a time from (hour, key) onwards: without this index each
// page would scan the table. A new (key, hour, outcome) row adds an index entry; the flushes that only add to
// an existing row's count do not touch it.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('key_verifications_hourly_workspace_hour')
    .on('key_verifications_hourly')
    .columns(['workspace_id', 'hour', 'key_id'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('key_verifications_hourly_workspace_hour').execute();
}
