import type { Store } from '../../src/store/store.ts';
import type { Database } from '../../src/store/schema.ts';
import type { World } from './harness.ts';
import { sha256b64 } from './hashes.ts';
import { zero } from '../../src/services/analytics/hourly-sums.ts';

/** Every table of src/store/schema.ts; the type check below fails when a table is added there but not here. */
export const ALL_TABLES = [
  'workspaces',
  'settings',
  'root_keys',
  'apis',
  'identities',
  'keys',
  'data_keys',
  'encrypted_keys',
  'ratelimits',
  'ratelimit_counters',
  'ratelimit_namespaces',
  'ratelimit_overrides',
  'roles',
  'permissions',
  'keys_roles',
  'keys_permissions',
  'roles_permissions',
  'audit_logs',
  'key_migrations',
  'key_migration_items',
  'jobs',
  'change_feed',
  'dashboard_links',
  'dashboard_sessions',
  'webhook_endpoints',
  'webhook_events',
  'webhook_deliveries',
  'webhook_credit_crossings',
  'dashboard_users',
  'dashboard_members',
  'usage_exports',
  'usage_reports',
  'analytics_key_verifications',
  'analytics_key_verifications_per_minute',
  'analytics_key_verifications_per_hour',
  'analytics_key_verifications_per_day',
  'analytics_key_verifications_per_month',
  'analytics_key_verifications_per_minute_by_key',
  'analytics_key_verifications_per_hour_by_key',
  'analytics_key_verifications_per_day_by_key',
  'analytics_key_verifications_per_month_by_key',
  'analytics_key_verifications_per_minute_by_api',
  'analytics_key_verifications_per_hour_by_api',
  'analytics_key_verifications_per_day_by_api',
  'analytics_key_verifications_per_month_by_api',
  'analytics_ratelimits',
  'analytics_ratelimits_per_minute',
  'analytics_ratelimits_per_hour',
  'analytics_ratelimits_per_day',
  'analytics_ratelimits_per_month',
] as const satisfies ReadonlyArray<keyof Database>;
/** Tables a migration emptied but kept for older servers during an upgrade (0012), not in today's schema. */
export const RETIRED_TABLES = ['key_verifications_hourly', 'ratelimit_hourly'] as const;
export const everyTableListed: [Exclude<keyof Database, (typeof ALL_TABLES)[number]>] extends [never] ? true : false = true;

/** A store's query builder: `store.db`, or `w.store.db` of a test world. */
export type Db = Store['db'];

/** The number of rows of `table`, or of those whose `column` equals `value`. */
export async function count(db: Db, table: keyof Database, where?: [column: string, value: string]): Promise<number> {
  let q = db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n'));
  if (where) q = q.where(where[0] as never, '=', where[1] as never);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

/** Row counts of the given tables: compare two snapshots to show that a failed request wrote nothing. */
export async function snapshot(w: World, tables: readonly (keyof Database)[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of tables) out[t] = await count(w.store.db, t);
  return out;
}

/** The stored row of a key (deleted or not); fails when there is none. */
export const keyRow = (w: World, keyId: string) =>
  w.store.db.selectFrom('keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow();

/** The stored row of a key, or undefined once it is gone (permanently deleted). */
export const keyRowIfAny = (w: World, keyId: string) =>
  w.store.db.selectFrom('keys').selectAll().where('id', '=', keyId).executeTakeFirst();

/** The id of the root key whose plaintext is `rootKey`, found by its hash. */
export const rootKeyId = async (w: World, rootKey: string): Promise<string> =>
  (await w.store.db.selectFrom('root_keys').select('id').where('hash', '=', sha256b64(rootKey)).executeTakeFirstOrThrow()).id;

/** A per-hour verification roll-up row from the fields of the former hourly table (no tags, credits or latency). */
export function verificationHourRow(
  db: Db,
  r: { key_id: string; hour: number; outcome: string; workspace_id: string; api_id: string; identity_id: string | null; count: number },
) {
  const pg = db.getExecutor().adapter.constructor.name === 'PostgresAdapter';
  return {
    time: r.hour,
    workspace_id: r.workspace_id,
    key_space_id: r.api_id,
    identity_id: r.identity_id ?? '',
    external_id: '',
    key_id: r.key_id,
    outcome: r.outcome,
    tags: pg ? '{}' : '[]',
    count: r.count,
    spent_credits: 0,
    latency_sum: 0,
  };
}

/** The outcomes the analytics tests give counts of (the others stay 0, as `zero()` has them). */
export type RecordedOutcome = 'valid' | 'forbidden' | 'usageExceeded' | 'rateLimited' | 'disabled' | 'insufficientPermissions' | 'expired';

/** An analytics row's counts: every outcome count 0 unless given, total their sum. */
export const outcomeCounts = (c: Partial<Record<RecordedOutcome, number>> = {}) => {
  const row = { ...zero(), ...c };
  return { ...row, total: Object.values(c).reduce((a, b) => a + b, 0) };
};
