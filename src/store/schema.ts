import type { UsageExportRow, UsageReportRow } from './schema-usage.ts';
import type { WebhookCreditCrossingRow, WebhookDeliveryRow, WebhookEndpointRow, WebhookEventRow } from './schema-webhooks.ts';
import type { DashboardMemberRow, DashboardUserRow } from './schema-dashboard.ts';
import type { AnalyticsTables } from './schema-analytics.ts';

/** Row types of the store, as Kysely sees them. Times are epoch ms, flags 0/1, JSON documents text. */
export interface WorkspaceRow {
  id: string;
  name: string;
  created_at: number;
  deleted_at: number | null;
}
export interface SettingRow {
  name: string;
  value: string;
  updated_at: number;
}
export interface RootKeyRow {
  id: string;
  workspace_id: string;
  name: string | null;
  hash: string;
  start: string;
  permissions: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
}
export interface ApiRow {
  id: string;
  workspace_id: string;
  name: string;
  default_prefix: string | null;
  default_bytes: number | null;
  delete_protection: number;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
}
export interface IdentityRow {
  id: string;
  workspace_id: string;
  external_id: string;
  environment: string;
  meta: string | null;
  created_at: number;
  updated_at: number;
}
export interface KeyRow {
  id: string;
  workspace_id: string;
  api_id: string;
  hash: string;
  start: string;
  name: string | null;
  identity_id: string | null;
  meta: string | null;
  enabled: number;
  environment: string | null;
  expires_at: number | null;
  remaining: number | null;
  refill_interval: string | null;
  refill_amount: number | null;
  refill_day: number | null;
  last_refill_at: number | null;
  migration_id: string | null;
  /**
   * Set while the key's hash is another algorithm's (its migration's): a verification naming that migration
   * rewrites it to Keyhold's. Optional: rows written without it (every key Keyhold hashes itself) store NULL.
   */
  pending_migration_id?: string | null;
  created_at: number;
  updated_at: number;
  last_used_at: number | null;
  deleted_at: number | null;
}
export interface DataKeyRow {
  id: string;
  workspace_id: string;
  master_key_id: string;
  wrapped: string;
  created_at: number;
}
export interface EncryptedKeyRow {
  key_id: string;
  workspace_id: string;
  data_key_id: string;
  ciphertext: string;
  created_at: number;
}
export interface RatelimitRow {
  id: string;
  workspace_id: string;
  key_id: string | null;
  identity_id: string | null;
  name: string;
  type: string;
  limit: number;
  duration: number;
  auto_apply: number;
  created_at: number;
  updated_at: number;
}
export interface RatelimitCounterRow {
  bucket: string;
  count: number;
  expires_at: number;
}
export interface RatelimitNamespaceRow {
  id: string;
  workspace_id: string;
  name: string;
  created_at: number;
  updated_at: number;
}
export interface RatelimitOverrideRow {
  id: string;
  workspace_id: string;
  namespace_id: string;
  /** May hold `*` (any sequence of characters). */
  identifier: string;
  limit: number;
  duration: number;
  /** 0/1; null: as each request says. */
  async: number | null;
  created_at: number;
  updated_at: number;
}
export interface RoleRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  created_at: number;
  updated_at: number;
}
export interface PermissionRow {
  id: string;
  workspace_id: string;
  name: string;
  slug: string;
  description: string | null;
  created_at: number;
  updated_at: number;
}
export interface KeyRoleRow {
  key_id: string;
  role_id: string;
  workspace_id: string;
  created_at: number;
}
export interface KeyPermissionRow {
  key_id: string;
  permission_id: string;
  workspace_id: string;
  created_at: number;
}
export interface RolePermissionRow {
  role_id: string;
  permission_id: string;
  workspace_id: string;
  created_at: number;
}
export interface AuditLogRow {
  id: string;
  workspace_id: string;
  event: string;
  actor_type: string;
  actor_id: string;
  target_type: string;
  target_id: string;
  request_id: string | null;
  description: string | null;
  diff: string | null;
  created_at: number;
}
export interface KeyMigrationRow {
  id: string;
  workspace_id: string;
  name: string | null;
  /** How its keys were hashed (MigrationAlgorithm). */
  algorithm: string;
  created_at: number;
  updated_at: number;
}
export interface KeyMigrationItemRow {
  id: string;
  migration_id: string;
  item_index: number;
  hash: string;
  status: string;
  key_id: string | null;
  reason: string | null;
  created_at: number;
  updated_at: number;
}
export interface JobRow {
  id: string;
  task: string;
  payload: string;
  status: string;
  attempts: number;
  max_attempts: number;
  run_at: number;
  locked_at: number | null;
  locked_by: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}
export interface ChangeFeedRow {
  id: string;
  kind: string;
  ref: string;
  created_at: number;
}

export interface DashboardLinkRow {
  id: string;
  token_hash: string;
  workspace_id: string | null;
  operator: number;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}
export interface DashboardSessionRow {
  id: string;
  token_hash: string;
  link_id: string;
  workspace_id: string | null;
  operator: number;
  created_at: number;
  expires_at: number;
  ended_at: number | null;
  user_id: string | null; // the user of a single sign-on session; null for one a CLI link opened
  last_seen_at: number | null;
  reveal: string | null; // a create form's result until shown once (services/dashboard/reveals.ts), encrypted
}
export interface Database extends AnalyticsTables {
  workspaces: WorkspaceRow;
  settings: SettingRow;
  root_keys: RootKeyRow;
  apis: ApiRow;
  identities: IdentityRow;
  keys: KeyRow;
  data_keys: DataKeyRow;
  encrypted_keys: EncryptedKeyRow;
  ratelimits: RatelimitRow;
  ratelimit_counters: RatelimitCounterRow;
  ratelimit_namespaces: RatelimitNamespaceRow;
  ratelimit_overrides: RatelimitOverrideRow;
  roles: RoleRow;
  permissions: PermissionRow;
  keys_roles: KeyRoleRow;
  keys_permissions: KeyPermissionRow;
  roles_permissions: RolePermissionRow;
  audit_logs: AuditLogRow;
  key_migrations: KeyMigrationRow;
  key_migration_items: KeyMigrationItemRow;
  jobs: JobRow;
  change_feed: ChangeFeedRow;
  dashboard_links: DashboardLinkRow;
  dashboard_sessions: DashboardSessionRow;
  webhook_endpoints: WebhookEndpointRow;
  webhook_events: WebhookEventRow;
  webhook_deliveries: WebhookDeliveryRow;
  webhook_credit_crossings: WebhookCreditCrossingRow;
  dashboard_users: DashboardUserRow;
  dashboard_members: DashboardMemberRow;
  usage_exports: UsageExportRow;
  usage_reports: UsageReportRow;
}
