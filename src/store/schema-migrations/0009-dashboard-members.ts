import type { Kysely } from 'kysely';

// Frozen in time: this file never imports application types. Dashboard users who sign in with OpenID Connect
// (one per issuer and subject), the workspaces they are members of (by email, so that a member can be added
// before their first sign-in), and the user a session belongs to.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s
    .createTable('dashboard_users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('issuer', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_sign_in_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('dashboard_users_identity', ['issuer', 'subject'])
    .execute();

  // email: lower-cased; role: 'admin' or 'viewer'.
  await s
    .createTable('dashboard_members')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('dashboard_members_pk', ['workspace_id', 'email'])
    .execute();

  // user_id: the signed-in user of a session opened by single sign-on (NULL for a session from a CLI link).
  await s.alterTable('dashboard_sessions').addColumn('user_id', 'text').execute();
  await s.alterTable('dashboard_sessions').addColumn('last_seen_at', 'bigint').execute();
  // reveal: what a create form made, shown once on the page it redirects to, encrypted under a key derived
  // from the session's token (which is not stored), so the row alone never discloses it.
  await s.alterTable('dashboard_sessions').addColumn('reveal', 'text').execute();
  await s.createIndex('dashboard_sessions_user').on('dashboard_sessions').column('user_id').execute();
  await s.createIndex('dashboard_sessions_expires').on('dashboard_sessions').column('expires_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('dashboard_sessions_expires').execute();
  await db.schema.dropIndex('dashboard_sessions_user').execute();
  await db.schema.alterTable('dashboard_sessions').dropColumn('reveal').execute();
  await db.schema.alterTable('dashboard_sessions').dropColumn('last_seen_at').execute();
  await db.schema.alterTable('dashboard_sessions').dropColumn('user_id').execute();
  for (const t of ['dashboard_members', 'dashboard_users']) await db.schema.dropTable(t).execute();
}
