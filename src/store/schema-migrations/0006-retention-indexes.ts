import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen in time: this file never imports application types. Indexes that let the retention pass find what
// is due by its time without reading whole tables: hourly analytics by hour, audit records by time, deleted
// keys by their deletion time (partial: live keys, nearly all of them, are not in it), finished items by time.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s.createIndex('key_verifications_hourly_hour').on('key_verifications_hourly').column('hour').execute();
  await s.createIndex('ratelimit_hourly_hour').on('ratelimit_hourly').column('hour').execute();
  await s.createIndex('audit_logs_created').on('audit_logs').column('created_at').execute();
  await s.createIndex('keys_deleted').on('keys').column('deleted_at').where(sql.ref('deleted_at'), 'is not', null).execute();
  // A migration is kept while keys still wait under its hash algorithm (lazy rehash): found by this index.
  await s
    .createIndex('keys_pending_migration')
    .on('keys')
    .column('pending_migration_id')
    .where(sql.ref('pending_migration_id'), 'is not', null)
    .execute();
  await s.createIndex('key_migrations_updated').on('key_migrations').column('updated_at').execute();
  await s.createIndex('jobs_finished').on('jobs').columns(['status', 'updated_at']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  for (const name of [
    'jobs_finished',
    'key_migrations_updated',
    'keys_pending_migration',
    'keys_deleted',
    'audit_logs_created',
    'ratelimit_hourly_hour',
    'key_verifications_hourly_hour',
  ]) {
    await db.schema.dropIndex(name).execute();
  }
}
