import { sql, type RawBuilder } from 'kysely';
import type { Store } from '../../src/store/store.ts';

/**
 * One workspace with the data of a large installation, written straight into the store by bulk
 * `INSERT … SELECT` (PostgreSQL: generate_series; SQLite: a recursive CTE), then ANALYZE: what the query plan
 * checks (test/store/query-plans.test.ts) need the planner to see. With `n` = 100,000 (the default):
 *
 * - keys: `n` in one API (`apiId`), 1 in 100 soft-deleted; every even key belongs to identity 1 (`ext_1`, half of the
 *   keys: the heavy filter), key i otherwise to identity (i - 1) % 1,000 + 1 (`n` / 1,000 keys each for the other
 *   odd ones); each key has a `default` rate limit, a role and a permission; and `n` / 2 keys of an older API
 *   (`oldApiId`), made before all of them (their ids sort first): a page of the big API that walks the keys in id
 *   order and filters by API reads them all before its first row;
 * - identities: `n` in the environment `default`; the first 1,000 each have a rate limit of their own;
 * - roles and permissions: `n` each, role i holding permission i; keys hold the first 1,000 of them;
 * - audit records: `n`, ten events in turn (EVENTS), every fifth about key 1 (the heavy target), record i otherwise
 *   about key (i - 1) % 1,000 + 1;
 * - rate-limit namespaces: `n` besides `namespaceId`; rate-limit overrides: `n` in that one (`namespaceId`);
 * - webhook deliveries: `n`, every one to one endpoint (`endpointId`), 1 in 10 failed, of 1,000 events, none pending;
 * - usage reports: `n`, every one of one usage export (`exportId`), one per hour, 1 in 10 failed, none pending.
 *
 * Ids are the prefix and 10,000,000 + the row's number (`key_10000001`), so they sort in the order rows were made, as
 * Keyhold's time-sortable ids do.
 */
export interface BigWorkspace {
  workspaceId: string;
  apiId: string;
  /** An API of the same workspace whose keys are older than all of `apiId`'s. */
  oldApiId: string;
  namespaceId: string;
  endpointId: string;
  exportId: string;
  /** How many rows each big table got. */
  n: number;
  /** The id of the i-th row (1-based) of a prefix: `idOf('key', 2000)`. */
  idOf(prefix: string, i: number): string;
}

const OFFSET = 10_000_000;
const T0 = 1_767_225_600_000; // 2026-01-01
const GROUP = 1_000;
const HOUR = 3_600_000;
/** The events of the audit records, record i's being EVENTS[i % 10]. */
const EVENTS = [
  'key.create',
  'key.update',
  'key.delete',
  'key.leaked',
  'role.create',
  'permission.create',
  'identity.create',
  'ratelimit.set_override',
  'api.create',
  'key.add_role',
];

/** `prefix_<OFFSET + expr>`: the id of row `expr` (an SQL expression over `i`). */
const id = (prefix: string, expr = 'i') => `'${prefix}_' || (${OFFSET} + ${expr})`;
/** The group an i belongs to, 1..GROUP. */
const group = `((i - 1) % ${GROUP} + 1)`;
/** Group 1 for every `every`-th i, else i's group: group 1 is the heavy one (a filter that matches many rows). */
const heavyGroup = (every: number) => `(case when i % ${every} = 0 then 1 else ${group} end)`;

/** `insert into table (columns) select values from 1..n`, in the dialect's way of making rows. */
function insertRows(pg: boolean, n: number, table: string, columns: Record<string, string>): RawBuilder<unknown> {
  const names = sql.raw(
    Object.keys(columns)
      .map((c) => `"${c}"`)
      .join(', '),
  );
  const values = sql.raw(Object.values(columns).join(', '));
  return pg
    ? sql`insert into ${sql.table(table)} (${names}) select ${values} from generate_series(1, ${sql.lit(n)}) as g(i)`
    : sql`with recursive g(i) as (select 1 union all select i + 1 from g where i < ${sql.lit(n)})
        insert into ${sql.table(table)} (${names}) select ${values} from g`;
}

const str = (s: string) => `'${s}'`;
const time = (expr = 'i') => `${T0} + ${expr} * 1000`;

export async function fillBigWorkspace(store: Store, n = 100_000): Promise<BigWorkspace> {
  const pg = store.caps.dialect === 'postgres';
  const db = store.db;
  const ws = 'ws_big';
  const big: BigWorkspace = {
    workspaceId: ws,
    apiId: 'api_big',
    oldApiId: 'api_old',
    namespaceId: 'rlns_big',
    endpointId: 'whep_big',
    exportId: 'uexp_big',
    n,
    idOf: (prefix, i) => `${prefix}_${OFFSET + i}`,
  };
  await db.insertInto('workspaces').values({ id: ws, name: 'big', created_at: T0, deleted_at: null }).execute();
  const api = (id: string, name: string) => ({
    id,
    workspace_id: ws,
    name,
    default_prefix: null,
    default_bytes: null,
    delete_protection: 0,
    created_at: T0,
    updated_at: T0,
    deleted_at: null,
  });
  await db
    .insertInto('apis')
    .values([api(big.oldApiId, 'old'), api(big.apiId, 'big')])
    .execute();
  await db
    .insertInto('ratelimit_namespaces')
    .values({ id: big.namespaceId, workspace_id: ws, name: 'big', created_at: T0, updated_at: T0 })
    .execute();
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: big.endpointId,
      workspace_id: ws,
      url: 'https://hooks.example.com/keyhold',
      events: '["key.created"]',
      description: null,
      enabled: 1,
      disabled_reason: null,
      credits_low_below: 0,
      expiring_within_days: 7,
      secret_data_key_id: 'dk_none',
      secret_ciphertext: 'none',
      previous_secret_data_key_id: null,
      previous_secret_ciphertext: null,
      previous_secret_until: null,
      failing_since: null,
      created_at: T0,
      updated_at: T0,
    })
    .execute();
  await db
    .insertInto('usage_exports')
    .values({
      id: big.exportId,
      workspace_id: ws,
      destination: 'openmeter',
      url: 'https://openmeter.example.com/api/v1/events',
      token_data_key_id: 'dk_none',
      token_ciphertext: 'none',
      subject: 'identity',
      period: 'hour',
      outcomes: '["VALID"]',
      event_name: 'api-calls',
      customer_field: null,
      source: 'keyhold/big',
      enabled: 1,
      next_period_start: T0 + (n + 1) * HOUR,
      next_period_end: T0 + (n + 2) * HOUR,
      created_at: T0,
      updated_at: T0,
    })
    .execute();
  for (const phase of fillPhases(pg, n, big)) {
    // SQLite has one writer: its statements run one after the other. PostgreSQL fills a phase's tables at once.
    if (pg) await Promise.all(phase.map((statement) => insertWithoutChecks(store, statement)));
    else for (const statement of phase) await statement.execute(db);
  }
  await analyze(store);
  return big;
}

/**
 * PostgreSQL: runs one fill statement, without its foreign-key checks when the user may turn them off (a superuser:
 * `session_replication_role = replica`, for this transaction only). The rows are consistent by construction, and
 * the checks (a trigger per row and key) would double the fill's time.
 */
async function insertWithoutChecks(store: Store, statement: RawBuilder<unknown>): Promise<void> {
  await store.db.transaction().execute(async (tx) => {
    const { rows } = await sql<{ superuser: boolean }>`select rolsuper as superuser from pg_roles where rolname = current_user`.execute(tx);
    if (rows[0]?.superuser) await sql`set local session_replication_role = replica`.execute(tx);
    await statement.execute(tx);
  });
}

/** The fill's statements, in phases: a phase's tables refer only to those of earlier phases. */
function fillPhases(pg: boolean, n: number, big: BigWorkspace): RawBuilder<unknown>[][] {
  const ws = str(big.workspaceId);
  const rows = (table: string, columns: Record<string, string>) => insertRows(pg, n, table, columns);
  const groups = (table: string, columns: Record<string, string>) => insertRows(pg, GROUP, table, columns);
  const event = `case i % ${EVENTS.length} ${EVENTS.map((e, k) => `when ${k} then ${str(e)}`).join(' ')} end`;
  const firstPhase = [
    rows('identities', {
      id: id('id'),
      workspace_id: ws,
      external_id: `'ext_' || i`,
      environment: str('default'),
      created_at: time(),
      updated_at: time(),
    }),
    rows('roles', { id: id('role'), workspace_id: ws, name: `'role' || i`, created_at: time(), updated_at: time() }),
    rows('permissions', {
      id: id('perm'),
      workspace_id: ws,
      name: `'perm' || i`,
      slug: `'perm.' || i`,
      created_at: time(),
      updated_at: time(),
    }),
    rows('audit_logs', {
      id: id('log'),
      workspace_id: ws,
      event,
      actor_type: str('root_key'),
      actor_id: str('rk_big'),
      target_type: str('key'),
      target_id: id('key', heavyGroup(5)),
      diff: `'{"n":' || i || '}'`,
      created_at: time(),
    }),
    rows('ratelimit_overrides', {
      id: id('rlor'),
      workspace_id: ws,
      namespace_id: str(big.namespaceId),
      identifier: `'user_' || i`,
      limit: '10',
      duration: '60000',
      created_at: time(),
      updated_at: time(),
    }),
    groups('webhook_events', { id: id('evt'), workspace_id: ws, type: str('key.created'), body: str('{}'), created_at: time() }),
    rows('ratelimit_namespaces', { id: id('rlns'), workspace_id: ws, name: `'ns_' || i`, created_at: time(), updated_at: time() }),
  ];
  const secondPhase = [
    insertRows(pg, n / 2, 'keys', {
      // key_0…: before every key_1… of the big API
      id: `'key_0' || (${OFFSET} + i)`,
      workspace_id: ws,
      api_id: str(big.oldApiId),
      hash: `'hash_old_' || i`,
      start: str('old_abcd'),
      enabled: '1',
      created_at: `${T0} - 1000000000 + i`,
      updated_at: `${T0} - 1000000000 + i`,
    }),
    rows('keys', {
      id: id('key'),
      workspace_id: ws,
      api_id: str(big.apiId),
      hash: `'hash_' || i`,
      start: str('big_abcd'),
      identity_id: id('id', heavyGroup(2)),
      enabled: '1',
      created_at: time(),
      updated_at: time(),
      deleted_at: `case when i % 100 = 0 then ${time()} end`,
    }),
    rows('roles_permissions', { role_id: id('role'), permission_id: id('perm'), workspace_id: ws, created_at: time() }),
    rows('webhook_deliveries', {
      id: id('whdl'),
      workspace_id: ws,
      endpoint_id: str(big.endpointId),
      event_id: id('evt', group),
      type: str('key.created'),
      status: `case when i % 10 = 0 then 'failed' else 'delivered' end`,
      attempts: '1',
      created_at: time(),
      updated_at: time(),
    }),
    rows('usage_reports', {
      id: id('urep'),
      workspace_id: ws,
      export_id: str(big.exportId),
      period_start: `${T0} + cast(i as bigint) * ${HOUR}`,
      period_end: `${T0} + (cast(i as bigint) + 1) * ${HOUR}`,
      status: `case when i % 10 = 0 then 'failed' else 'delivered' end`,
      content: str('{}'),
      subjects: '10',
      skipped: '0',
      requests_sent: '1',
      attempts: '1',
      created_at: `${T0} + (cast(i as bigint) + 1) * ${HOUR}`,
      updated_at: `${T0} + (cast(i as bigint) + 1) * ${HOUR}`,
    }),
    groups('ratelimits', {
      id: id('rl', `${n} + i`),
      workspace_id: ws,
      identity_id: id('id'),
      name: str('shared'),
      limit: '100',
      duration: '60000',
      created_at: time(),
      updated_at: time(),
    }),
  ];
  const lastPhase = [
    rows('ratelimits', {
      id: id('rl'),
      workspace_id: ws,
      key_id: id('key'),
      name: str('default'),
      type: str('fast'),
      limit: '10',
      duration: '60000',
      auto_apply: '1',
      created_at: time(),
      updated_at: time(),
    }),
    rows('keys_roles', { key_id: id('key'), role_id: id('role', group), workspace_id: ws, created_at: time() }),
    rows('keys_permissions', { key_id: id('key'), permission_id: id('perm', group), workspace_id: ws, created_at: time() }),
  ];
  return [firstPhase, secondPhase, lastPhase];
}

/** Fresh planner statistics of the tables filled (PostgreSQL: this schema's tables only, not the whole database's). */
async function analyze(store: Store): Promise<void> {
  if (store.caps.dialect === 'sqlite') {
    await sql`analyze`.execute(store.db);
    return;
  }
  for (const table of [...BIG_TABLES, 'workspaces', 'apis', 'webhook_endpoints', 'webhook_events', 'usage_exports']) {
    await sql`analyze ${sql.table(table)}`.execute(store.db);
  }
}

/** The tables fillBigWorkspace fills with at least `n` rows. */
export const BIG_TABLES = [
  'identities',
  'keys',
  'ratelimits',
  'roles',
  'permissions',
  'roles_permissions',
  'keys_roles',
  'keys_permissions',
  'audit_logs',
  'ratelimit_overrides',
  'ratelimit_namespaces',
  'webhook_deliveries',
  'usage_reports',
] as const;
