import type { Kysely } from 'kysely';

// Frozen in time: this file never imports application types. Key migrations name how their keys were hashed
// (`sha256`: Keyhold's own form, so existing migrations keep it); a key imported with another algorithm's hash
// names the migration that can rewrite it to Keyhold's hash on its first verification.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('key_migrations')
    .addColumn('algorithm', 'text', (c) => c.notNull().defaultTo('sha256'))
    .execute();
  // No index: a pending key is found by its (unique, indexed) hash; this column only confirms the migration.
  await db.schema.alterTable('keys').addColumn('pending_migration_id', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('keys').dropColumn('pending_migration_id').execute();
  await db.schema.alterTable('key_migrations').dropColumn('algorithm').execute();
}
