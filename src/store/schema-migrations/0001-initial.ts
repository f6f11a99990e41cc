import type { Kysely } from 'kysely';

// Frozen in time: this file never imports application types. Times are epoch milliseconds (BIGINT),
// booleans are INTEGER 0/1 and JSON documents are TEXT, identically on SQLite and PostgreSQL.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s
    .createTable('workspaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();

  await s
    .createTable('settings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await s
    .createTable('root_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text')
    .addColumn('hash', 'text', (c) => c.notNull().unique())
    .addColumn('start', 'text', (c) => c.notNull())
    .addColumn('permissions', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .addColumn('last_used_at', 'bigint')
    .execute();
  await s.createIndex('root_keys_workspace').on('root_keys').columns(['workspace_id', 'id']).execute();

  await s
    .createTable('apis')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('default_prefix', 'text')
    .addColumn('default_bytes', 'integer')
    .addColumn('delete_protection', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await s.createIndex('apis_workspace').on('apis').columns(['workspace_id', 'id']).execute();

  await s
    .createTable('identities')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull().defaultTo('default'))
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('identities_workspace_external_id', ['workspace_id', 'external_id'])
    .execute();

  await s
    .createTable('keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('api_id', 'text', (c) => c.notNull().references('apis.id').onDelete('cascade'))
    .addColumn('hash', 'text', (c) => c.notNull().unique())
    .addColumn('start', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('identity_id', 'text', (c) => c.references('identities.id').onDelete('set null'))
    .addColumn('meta', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('environment', 'text')
    .addColumn('expires_at', 'bigint')
    .addColumn('remaining', 'bigint')
    .addColumn('refill_interval', 'text')
    .addColumn('refill_amount', 'bigint')
    .addColumn('refill_day', 'integer')
    .addColumn('last_refill_at', 'bigint')
    .addColumn('migration_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('deleted_at', 'bigint')
    .execute();
  await s.createIndex('keys_api').on('keys').columns(['api_id', 'id']).execute();
  await s.createIndex('keys_identity').on('keys').column('identity_id').execute();
  await s.createIndex('keys_refill_due').on('keys').columns(['refill_interval', 'last_refill_at']).execute();

  // Envelope encryption (README: Secrets at rest): per-workspace data keys wrapped by a master key.
  await s
    .createTable('data_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('master_key_id', 'text', (c) => c.notNull())
    .addColumn('wrapped', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await s
    .createTable('encrypted_keys')
    .addColumn('key_id', 'text', (c) => c.primaryKey().references('keys.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('data_key_id', 'text', (c) => c.notNull().references('data_keys.id'))
    .addColumn('ciphertext', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  // Rate limits configured on a key (`default`, auto-applied) or on an identity (shared by its keys).
  await s
    .createTable('ratelimits')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('key_id', 'text', (c) => c.references('keys.id').onDelete('cascade'))
    .addColumn('identity_id', 'text', (c) => c.references('identities.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull().defaultTo('consistent'))
    .addColumn('limit', 'bigint', (c) => c.notNull())
    .addColumn('duration', 'bigint', (c) => c.notNull())
    .addColumn('auto_apply', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('ratelimits_key_name', ['key_id', 'name'])
    .addUniqueConstraint('ratelimits_identity_name', ['identity_id', 'name'])
    .execute();
  // Shared fixed-window counters for `consistent` limits when no Redis is configured.
  await s
    .createTable('ratelimit_counters')
    .addColumn('bucket', 'text', (c) => c.primaryKey())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();

  await s
    .createTable('roles')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('roles_workspace_name', ['workspace_id', 'name'])
    .execute();
  await s
    .createTable('permissions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('permissions_workspace_slug', ['workspace_id', 'slug'])
    .execute();
  await s
    .createTable('keys_roles')
    .addColumn('key_id', 'text', (c) => c.notNull().references('keys.id').onDelete('cascade'))
    .addColumn('role_id', 'text', (c) => c.notNull().references('roles.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('keys_roles_pk', ['key_id', 'role_id'])
    .execute();
  await s.createIndex('keys_roles_role').on('keys_roles').column('role_id').execute();
  await s
    .createTable('keys_permissions')
    .addColumn('key_id', 'text', (c) => c.notNull().references('keys.id').onDelete('cascade'))
    .addColumn('permission_id', 'text', (c) => c.notNull().references('permissions.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('keys_permissions_pk', ['key_id', 'permission_id'])
    .execute();
  await s.createIndex('keys_permissions_permission').on('keys_permissions').column('permission_id').execute();
  await s
    .createTable('roles_permissions')
    .addColumn('role_id', 'text', (c) => c.notNull().references('roles.id').onDelete('cascade'))
    .addColumn('permission_id', 'text', (c) => c.notNull().references('permissions.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('roles_permissions_pk', ['role_id', 'permission_id'])
    .execute();
  await s.createIndex('roles_permissions_permission').on('roles_permissions').column('permission_id').execute();

  await s
    .createTable('audit_logs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .addColumn('description', 'text')
    .addColumn('diff', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await s.createIndex('audit_logs_workspace').on('audit_logs').columns(['workspace_id', 'id']).execute();
  await s.createIndex('audit_logs_target').on('audit_logs').columns(['workspace_id', 'target_id']).execute();

  // Key migrations (imports) and the outcome of every enqueued item.
  await s
    .createTable('key_migrations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await s
    .createTable('key_migration_items')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('migration_id', 'text', (c) => c.notNull().references('key_migrations.id').onDelete('cascade'))
    .addColumn('item_index', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text')
    .addColumn('reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('key_migration_items_index', ['migration_id', 'item_index'])
    .execute();
  await s.createIndex('key_migration_items_status').on('key_migration_items').columns(['migration_id', 'status']).execute();

  // The durable job queue.
  await s
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_at', 'bigint')
    .addColumn('locked_by', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await s.createIndex('jobs_ready').on('jobs').columns(['status', 'run_at']).execute();

  // Verification outcomes counted per key and hour (flushed in batches from memory).
  await s
    .createTable('key_verifications_hourly')
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('hour', 'bigint', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('api_id', 'text', (c) => c.notNull())
    .addColumn('identity_id', 'text')
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('key_verifications_hourly_pk', ['key_id', 'hour', 'outcome'])
    .execute();
  await s.createIndex('key_verifications_hourly_api').on('key_verifications_hourly').columns(['api_id', 'hour']).execute();

  // Change feed for cache invalidation across processes that share a store but no Redis.
  await s
    .createTable('change_feed')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('ref', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await s.createIndex('change_feed_created').on('change_feed').column('created_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  for (const t of [
    'change_feed',
    'key_verifications_hourly',
    'jobs',
    'key_migration_items',
    'key_migrations',
    'audit_logs',
    'roles_permissions',
    'keys_permissions',
    'keys_roles',
    'permissions',
    'roles',
    'ratelimit_counters',
    'ratelimits',
    'encrypted_keys',
    'data_keys',
    'keys',
    'identities',
    'apis',
    'root_keys',
    'settings',
    'workspaces',
  ]) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
