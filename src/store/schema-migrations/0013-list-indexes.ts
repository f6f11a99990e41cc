import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen in time: this file never imports application types. Indexes that give every list its filter and its order,
// so that a page reads its own rows only, however large the table (docs/performance.md, "Query plans";
// test/store/query-plans.test.ts checks the plans):
//
// - keys_api_live: an API's live keys by id (apis.listKeys, the dashboard's API page). Partial, without deleted keys:
//   a page never walks past keys deleted earlier, and the capped count of `total` reads this index alone.
// - keys_identity_live: one identity's live keys of an API by id (apis.listKeys with externalId or ownerId).
// - identities_workspace, identities_environment: a workspace's identities by id, in every environment (v2) or in
//   one (v1, the dashboard).
// - roles_workspace, permissions_workspace: a workspace's roles and permissions by id (v2's pages, the dashboard).
// - ratelimit_overrides_namespace: a namespace's overrides by id (ratelimits.listOverrides).
// - audit_logs_event, audit_logs_target_id: a workspace's audit records of one event, or about one resource, newest
//   first (audit.listLogs, `keyhold audit list`, the dashboard's audit page).
//
// On PostgreSQL each is built under a lock that holds writes to its table until it is built (once, at the upgrade).

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s.createIndex('keys_api_live').on('keys').columns(['api_id', 'id']).where(sql.ref('deleted_at'), 'is', null).execute();
  await s
    .createIndex('keys_identity_live')
    .on('keys')
    .columns(['identity_id', 'api_id', 'id'])
    .where(sql<boolean>`deleted_at is null and identity_id is not null`)
    .execute();
  await s.createIndex('identities_workspace').on('identities').columns(['workspace_id', 'id']).execute();
  await s.createIndex('identities_environment').on('identities').columns(['workspace_id', 'environment', 'id']).execute();
  await s.createIndex('roles_workspace').on('roles').columns(['workspace_id', 'id']).execute();
  await s.createIndex('permissions_workspace').on('permissions').columns(['workspace_id', 'id']).execute();
  await s.createIndex('ratelimit_overrides_namespace').on('ratelimit_overrides').columns(['namespace_id', 'id']).execute();
  await s.createIndex('audit_logs_event').on('audit_logs').columns(['workspace_id', 'event', 'id']).execute();
  await s.createIndex('audit_logs_target_id').on('audit_logs').columns(['workspace_id', 'target_id', 'id']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  for (const name of [
    'audit_logs_target_id',
    'audit_logs_event',
    'ratelimit_overrides_namespace',
    'permissions_workspace',
    'roles_workspace',
    'identities_environment',
    'identities_workspace',
    'keys_identity_live',
    'keys_api_live',
  ]) {
    await db.schema.dropIndex(name).execute();
  }
}
