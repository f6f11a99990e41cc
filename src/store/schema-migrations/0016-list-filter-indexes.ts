import type { Kysely } from 'kysely';

// Frozen in time: this file never imports application types. Indexes for the lists that 0013 left to a walk
// (docs/performance.md, "Query plans"; test/store/query-plans.test.ts checks the plans):
//
// - ratelimit_namespaces_workspace: a workspace's namespaces by id (ratelimits.listNamespaces and its capped total).
// - webhook_deliveries_status: one endpoint's deliveries of one status, newest first (webhooks.listDeliveries with
//   `status`): through (endpoint_id, id) a status that few deliveries have read every other delivery first.
// - usage_reports_status: the same for one export's reports (usage.listReports with `status`).
//
// On PostgreSQL each is built under a lock that holds writes to its table until it is built (once, at the upgrade).

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s.createIndex('ratelimit_namespaces_workspace').on('ratelimit_namespaces').columns(['workspace_id', 'id']).execute();
  await s.createIndex('webhook_deliveries_status').on('webhook_deliveries').columns(['endpoint_id', 'status', 'id']).execute();
  await s.createIndex('usage_reports_status').on('usage_reports').columns(['export_id', 'status', 'id']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration knows no schema type
export async function down(db: Kysely<any>): Promise<void> {
  for (const name of ['usage_reports_status', 'webhook_deliveries_status', 'ratelimit_namespaces_workspace']) {
    await db.schema.dropIndex(name).execute();
  }
}
