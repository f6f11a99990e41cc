import type { Kysely } from 'kysely';

// Frozen in time: this file never imports application types. Standalone rate limiting (ratelimits.*):
// a workspace's namespaces, their per-identifier overrides, and hourly passed/denied counts.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s
    .createTable('ratelimit_namespaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('ratelimit_namespaces_name', ['workspace_id', 'name'])
    .execute();

  // `identifier` may hold `*` wildcards; exact and pattern overrides share the table.
  await s
    .createTable('ratelimit_overrides')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('namespace_id', 'text', (c) => c.notNull().references('ratelimit_namespaces.id').onDelete('cascade'))
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('limit', 'bigint', (c) => c.notNull())
    .addColumn('duration', 'bigint', (c) => c.notNull())
    .addColumn('async', 'integer') // 0/1; NULL: as each ratelimits.limit request says
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('ratelimit_overrides_identifier', ['namespace_id', 'identifier'])
    .execute();

  // No foreign key: counts outlive a deleted namespace until their hours are pruned, as verification counts do.
  await s
    .createTable('ratelimit_hourly')
    .addColumn('namespace_id', 'text', (c) => c.notNull())
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('hour', 'bigint', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('passed', 'bigint', (c) => c.notNull())
    .addColumn('denied', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('ratelimit_hourly_pk', ['namespace_id', 'identifier', 'hour'])
    .execute();
  await s.createIndex('ratelimit_hourly_namespace_hour').on('ratelimit_hourly').columns(['namespace_id', 'hour']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['ratelimit_hourly', 'ratelimit_overrides', 'ratelimit_namespaces']) await db.schema.dropTable(t).execute();
}
