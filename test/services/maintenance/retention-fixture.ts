import type { World } from '../../helpers/harness.ts';
import { ALL_TABLES } from '../../helpers/rows.ts';
import type { Database } from '../../../src/store/schema.ts';
import type { RetentionConfig } from '../../../src/config/retention.ts';

export const DAY = 86_400_000;
export const OLD = 400 * DAY;
export const RECENT = 10 * DAY;

/** Every table's rows as JSON lines; columns a background task of the app may touch meanwhile are left out. */
export type Snapshot = Record<string, Array<Record<string, unknown>>>;
const VOLATILE = new Set(['last_used_at']);
/** Tables the app itself writes in the background (the change feed's poll, the prune lease): not compared. */
const BACKGROUND_TABLES = new Set(['change_feed', 'settings', 'ratelimit_counters']);

export async function snapshot(w: World): Promise<Snapshot> {
  const out: Snapshot = {};
  for (const t of ALL_TABLES) {
    if (BACKGROUND_TABLES.has(t)) continue;
    const rows = await w.store.db.selectFrom(t).selectAll().execute();
    out[t] = rows
      .map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !VOLATILE.has(k))))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  return out;
}

/**
 * Data at every age: for each kind, rows far past its retention (400 days) and rows well inside it (10 days),
 * beside live keys, APIs and root keys that are old themselves (which no retention may touch). Creates through
 * the API, then moves timestamps back, as time would have.
 */
export async function agedFixture(w: World, now: number): Promise<{ liveKey: string; liveKeyId: string }> {
  const db = w.store.db;
  const apiId = await w.createApi('live');
  const live = await w.createKey({ apiId, name: 'live', ratelimit: { type: 'fast', limit: 10, duration: 1000 } });
  const oldDeleted = await w.createKey({
    apiId,
    name: 'deleted long ago',
    recoverable: true,
    ratelimit: { type: 'fast', limit: 5, duration: 1000 },
  });
  const recentDeleted = await w.createKey({ apiId, name: 'deleted lately' });
  for (const k of [oldDeleted, recentDeleted]) await w.post('/v1/keys.deleteKey', { keyId: k.keyId });
  await db
    .updateTable('keys')
    .set({ deleted_at: now - OLD })
    .where('id', '=', oldDeleted.keyId)
    .execute();
  await db
    .updateTable('keys')
    .set({ deleted_at: now - RECENT })
    .where('id', '=', recentDeleted.keyId)
    .execute();
  // Live rows that are old themselves: nothing removes them.
  await db
    .updateTable('keys')
    .set({ created_at: now - OLD })
    .where('id', '=', live.keyId)
    .execute();
  await db
    .updateTable('apis')
    .set({ created_at: now - OLD })
    .where('id', '=', apiId)
    .execute();
  await db
    .updateTable('root_keys')
    .set({ created_at: now - OLD })
    .execute();

  const goneApi = await w.createApi('deleted long ago');
  await w.createKey({ apiId: goneApi, name: 'key of a deleted api' });
  const keptApi = await w.createApi('deleted lately');
  await w.createKey({ apiId: keptApi, name: 'key of a lately deleted api' });
  for (const a of [goneApi, keptApi]) await w.post('/v1/apis.deleteApi', { apiId: a });
  for (const [a, age] of [
    [goneApi, OLD],
    [keptApi, RECENT],
  ] as const) {
    await db
      .updateTable('apis')
      .set({ deleted_at: now - age })
      .where('id', '=', a)
      .execute();
    await db
      .updateTable('keys')
      .set({ deleted_at: now - age })
      .where('api_id', '=', a)
      .execute();
  }

  const hour = (ago: number) => now - ago - ((now - ago) % 3_600_000);
  const tags = w.store.caps.dialect === 'postgres' ? [] : '[]';
  // Analytics rows of every table, at 800 days too (past the per-day and per-month retention).
  for (const ago of [OLD, RECENT, 800 * DAY]) {
    const time = hour(ago);
    const group = {
      workspace_id: w.workspaceId,
      key_space_id: apiId,
      identity_id: '',
      external_id: '',
      key_id: live.keyId,
      outcome: 'VALID',
      tags,
    };
    const event = { request_id: 'req_x', time, region: 'local', spent_credits: 0, latency: 1, ...group };
    await db.insertInto('analytics_key_verifications').values(event).execute();
    for (const g of ['minute', 'hour', 'day', 'month'] as const) {
      await db
        .insertInto(`analytics_key_verifications_per_${g}`)
        .values({ time, ...group, count: 5, spent_credits: 0, latency_sum: 5 })
        .execute();
      const { tags: _tags, ...byKey } = group;
      await db
        .insertInto(`analytics_key_verifications_per_${g}_by_key`)
        .values({ time, ...byKey, count: 5, spent_credits: 0, latency_sum: 5 })
        .execute();
      await db
        .insertInto(`analytics_key_verifications_per_${g}_by_api`)
        .values({ time, workspace_id: w.workspaceId, key_space_id: apiId, outcome: 'VALID', count: 5, spent_credits: 0, latency_sum: 5 })
        .execute();
      await db
        .insertInto(`analytics_ratelimits_per_${g}`)
        .values({ time, workspace_id: w.workspaceId, namespace_id: 'rlns_x', identifier: 'user', passed: 3, total: 4 })
        .execute();
    }
    await db
      .insertInto('analytics_ratelimits')
      .values({ request_id: 'req_x', time, workspace_id: w.workspaceId, namespace_id: 'rlns_x', identifier: 'user', passed: 1, latency: 1 })
      .execute();
  }
  for (const ago of [OLD, RECENT]) {
    const job = {
      task: 'import',
      payload: '{}',
      attempts: 3,
      max_attempts: 3,
      run_at: now - ago,
      locked_at: null,
      locked_by: null,
      created_at: now - ago,
    };
    await db
      .insertInto('jobs')
      .values([
        { ...job, id: `job_failed_${ago}`, status: 'failed', last_error: 'boom', updated_at: now - ago },
        { ...job, id: `job_pending_${ago}`, status: 'pending', last_error: null, updated_at: now - ago },
      ])
      .execute();
    const link = { workspace_id: w.workspaceId, operator: 0, created_at: now - ago - DAY };
    await db
      .insertInto('dashboard_links')
      .values({ ...link, id: `dsl_${ago}`, token_hash: `h_${ago}`, expires_at: now - ago, used_at: null })
      .execute();
    await db
      .insertInto('dashboard_sessions')
      .values({ ...link, id: `dss_${ago}`, token_hash: `s_${ago}`, link_id: `dsl_${ago}`, expires_at: now - ago, ended_at: null })
      .execute();
  }
  // A live session and an unused link, both still valid.
  const future = { workspace_id: w.workspaceId, operator: 0, created_at: now, expires_at: now + DAY };
  await db
    .insertInto('dashboard_links')
    .values({ ...future, id: 'dsl_live', token_hash: 'h_live', used_at: null })
    .execute();
  await db
    .insertInto('dashboard_sessions')
    .values({ ...future, id: 'dss_live', token_hash: 's_live', link_id: 'dsl_live', ended_at: null })
    .execute();

  await migrations(w, now, live.keyId);
  await webhooks(w, now);
  await usageReports(w, now);
  // Audit records of everything above are recent; move some back.
  const audits = await db.selectFrom('audit_logs').select('id').orderBy('id').execute();
  const old = audits.filter((_, i) => i % 2 === 0).map((a) => a.id);
  await db
    .updateTable('audit_logs')
    .set({ created_at: now - OLD })
    .where('id', 'in', old)
    .execute();
  return { liveKey: live.key, liveKeyId: live.keyId };
}

/** Finished migrations old and recent, an old one with a pending item, an old one a key still waits on. */
async function migrations(w: World, now: number, liveKeyId: string): Promise<void> {
  const db = w.store.db;
  const cases = [
    { id: 'mig_old_done', age: OLD, itemStatus: ['migrated', 'failed'] },
    { id: 'mig_recent_done', age: RECENT, itemStatus: ['migrated'] },
    { id: 'mig_old_pending', age: OLD, itemStatus: ['migrated', 'pending'] },
    { id: 'mig_old_waiting_key', age: OLD, itemStatus: ['migrated'] },
    { id: 'mig_old_empty', age: OLD, itemStatus: [] },
  ];
  for (const c of cases) {
    const at = now - c.age;
    await db
      .insertInto('key_migrations')
      .values({ id: c.id, workspace_id: w.workspaceId, name: null, algorithm: 'sha256_hex', created_at: at, updated_at: at })
      .execute();
    for (const [i, status] of c.itemStatus.entries()) {
      await db
        .insertInto('key_migration_items')
        .values({
          id: `${c.id}_${i}`,
          migration_id: c.id,
          item_index: i,
          hash: `hash_${c.id}_${i}`,
          status,
          key_id: null,
          reason: null,
          created_at: at,
          updated_at: at,
        })
        .execute();
    }
  }
  await db.updateTable('keys').set({ pending_migration_id: 'mig_old_waiting_key' }).where('id', '=', liveKeyId).execute();
}

/** Webhook deliveries over and pending, old and recent, and events with and without deliveries left. */
async function webhooks(w: World, now: number): Promise<void> {
  const db = w.store.db;
  const ws = w.workspaceId;
  await db
    .insertInto('webhook_endpoints')
    .values({
      ...{ id: 'whep_1', workspace_id: ws, url: 'https://example.com/hook', events: '[]', description: null, enabled: 1 },
      ...{ disabled_reason: null, credits_low_below: 10, expiring_within_days: 7, secret_data_key_id: 'dk', secret_ciphertext: 'x' },
      ...{ previous_secret_data_key_id: null, previous_secret_ciphertext: null, previous_secret_until: null, failing_since: null },
      ...{ created_at: now - OLD, updated_at: now - OLD },
    })
    .execute();
  const cases = [
    ['old_delivered', OLD, 'delivered'],
    ['old_failed', OLD, 'failed'],
    ['old_pending', OLD, 'pending'],
    ['recent_delivered', RECENT, 'delivered'],
    ['old_none', OLD, null],
  ] as const;
  for (const [name, age, status] of cases) {
    await db
      .insertInto('webhook_events')
      .values({ id: `evt_${name}`, workspace_id: ws, type: 'webhook.test', body: '{}', created_at: now - age })
      .execute();
    if (status === null) continue;
    await db
      .insertInto('webhook_deliveries')
      .values({
        ...{ id: `whdl_${name}`, workspace_id: ws, endpoint_id: 'whep_1', event_id: `evt_${name}`, type: 'webhook.test', status },
        ...{ attempts: 1, last_status_code: null, last_error: null, next_attempt_at: null, delivered_at: null },
        ...{ created_at: now - age, updated_at: now - age },
      })
      .execute();
  }
}

/**
 * A usage export (disabled: the app's period scan leaves it alone) with reports over and pending, old and recent.
 * A report that is over goes after KEYHOLD_FINISHED_RETENTION_DAYS; a pending one stays, whatever its age.
 */
async function usageReports(w: World, now: number): Promise<void> {
  const db = w.store.db;
  const ws = w.workspaceId;
  const hour = 3_600_000;
  await db
    .insertInto('usage_exports')
    .values({
      ...{ id: 'uexp_1', workspace_id: ws, destination: 'openmeter', url: 'https://example.com/api/v1/events' },
      ...{ token_data_key_id: 'dk', token_ciphertext: 'x', subject: 'identity', period: 'hour', outcomes: '["VALID"]' },
      ...{ event_name: 'keyhold.verifications', customer_field: null, source: `https://example.com/workspaces/${ws}`, enabled: 0 },
      ...{ next_period_start: now - (now % hour), next_period_end: now - (now % hour) + hour },
      ...{ created_at: now - OLD, updated_at: now - OLD },
    })
    .execute();
  const cases = [
    ['old_delivered', OLD, 'delivered'],
    ['old_failed', OLD, 'failed'],
    ['old_pending', OLD, 'pending'],
    ['recent_delivered', RECENT, 'delivered'],
  ] as const;
  for (const [i, [name, age, status]] of cases.entries()) {
    const at = now - age;
    const periodStart = at - (at % hour) - (i + 1) * hour;
    await db
      .insertInto('usage_reports')
      .values({
        ...{ id: `urep_${name}`, workspace_id: ws, export_id: 'uexp_1', period_start: periodStart, period_end: periodStart + hour },
        ...{ status, content: '{"source":"s","name":"n","records":[["user",1,0]]}', subjects: 1, skipped: 0 },
        ...{
          requests_sent: status === 'delivered' ? 1 : 0,
          attempts: 1,
          last_status_code: status === 'failed' ? 500 : status === 'delivered' ? 200 : null,
        },
        ...{
          last_error: status === 'failed' ? 'HTTP 500' : null,
          next_attempt_at: status === 'pending' ? at : null,
          delivered_at: status === 'delivered' ? at : null,
        },
        ...{ created_at: at, updated_at: at },
      })
      .execute();
  }
}

type Row = Record<string, unknown>;
const n = (v: unknown) => Number(v);

/**
 * What a pass must leave of `before` (computed here from the rules as documented, not by the code under
 * test), and how many rows of each kind it removes.
 */
export function expectedAfterPrune(before: Snapshot, now: number, r: RetentionConfig): { after: Snapshot; pruned: Record<string, number> } {
  const cut = (days: number) => (days === 0 ? Number.NEGATIVE_INFINITY : now - days * DAY);
  const after: Snapshot = { ...before };
  const pruned: Record<string, number> = {};
  // A kind kept forever (0 days) is left out of the pass and of what it reports.
  const keep = (table: keyof Database, kind: string, ok: (row: Row) => boolean, days = 1) => {
    if (days === 0) return;
    after[table] = before[table].filter(ok);
    pruned[kind] = before[table].length - after[table].length;
  };
  const old = (row: Row, column: string, days: number) => row[column] !== null && n(row[column]) < cut(days);
  const analytics: Array<[keyof Database, keyof Database, string, string, number]> = [
    ['analytics_key_verifications', 'analytics_ratelimits', 'verification_events', 'ratelimit_events', r.analyticsRawDays],
    [
      'analytics_key_verifications_per_minute',
      'analytics_ratelimits_per_minute',
      'verifications_per_minute',
      'ratelimits_per_minute',
      r.analyticsMinuteDays,
    ],
    ['analytics_key_verifications_per_hour', 'analytics_ratelimits_per_hour', 'verifications', 'ratelimit_analytics', r.analyticsDays],
    [
      'analytics_key_verifications_per_day',
      'analytics_ratelimits_per_day',
      'verifications_per_day',
      'ratelimits_per_day',
      r.analyticsDayDays,
    ],
    [
      'analytics_key_verifications_per_month',
      'analytics_ratelimits_per_month',
      'verifications_per_month',
      'ratelimits_per_month',
      r.analyticsDayDays,
    ],
  ];
  for (const [v, rl, vKind, rlKind, days] of analytics) {
    keep(v, vKind, (x) => !old(x, 'time', days), days);
    keep(rl, rlKind, (x) => !old(x, 'time', days), days);
    // A roll-up's coarser forms go with it, counted under its kind.
    if (v === 'analytics_key_verifications' || days === 0) continue;
    let total = pruned[vKind];
    for (const form of ['by_key', 'by_api'] as const) {
      keep(`${v}_${form}` as keyof Database, vKind, (x) => !old(x, 'time', days), days);
      total += pruned[vKind];
    }
    pruned[vKind] = total;
  }
  keep('audit_logs', 'audit_logs', (x) => !old(x, 'created_at', r.auditDays), r.auditDays);
  keep('keys', 'deleted_keys', (x) => !old(x, 'deleted_at', r.deletedDays), r.deletedDays);
  const keyIds = new Set(after.keys.map((k) => k.id));
  const apisWithKeys = new Set(after.keys.map((k) => k.api_id));
  keep('apis', 'deleted_apis', (x) => !(old(x, 'deleted_at', r.deletedDays) && !apisWithKeys.has(x.id)), r.deletedDays);
  for (const t of ['keys_roles', 'keys_permissions', 'encrypted_keys'] as const) after[t] = before[t].filter((x) => keyIds.has(x.key_id));
  after.ratelimits = before.ratelimits.filter((x) => x.key_id === null || keyIds.has(x.key_id));
  keep('jobs', 'failed_jobs', (x) => !(x.status === 'failed' && old(x, 'updated_at', r.finishedDays)), r.finishedDays);
  const waited = new Set(before.keys.map((k) => k.pending_migration_id).filter(Boolean));
  const finished = new Set(
    before.key_migrations
      .filter((m) => old(m, 'updated_at', r.finishedDays) && !waited.has(m.id))
      .filter((m) => before.key_migration_items.filter((i) => i.migration_id === m.id).every((i) => i.status !== 'pending'))
      .map((m) => m.id),
  );
  keep('key_migration_items', 'migration_items', (x) => !finished.has(x.migration_id), r.finishedDays);
  keep('key_migrations', 'migrations', (x) => !finished.has(x.id), r.finishedDays);
  const over = (x: Row) => x.status === 'delivered' || x.status === 'failed';
  keep('webhook_deliveries', 'webhook_deliveries', (x) => !(over(x) && old(x, 'updated_at', r.finishedDays)), r.finishedDays);
  const delivering = new Set(after.webhook_deliveries.map((d) => d.event_id));
  keep('webhook_events', 'webhook_events', (x) => !(old(x, 'created_at', r.finishedDays) && !delivering.has(x.id)), r.finishedDays);
  keep('usage_reports', 'usage_reports', (x) => !(over(x) && old(x, 'updated_at', r.finishedDays)), r.finishedDays);
  keep('dashboard_links', 'dashboard_links', (x) => n(x.expires_at) >= now - DAY);
  keep('dashboard_sessions', 'dashboard_sessions', (x) => n(x.expires_at) >= now - DAY);
  return { after, pruned };
}
