import assert from 'node:assert/strict';
import type { BigWorkspace } from '../helpers/big-workspace.ts';
import type { Caller } from '../../src/services/caller.ts';
import type { Db, Store } from '../../src/store/store.ts';
import { getApi, listApis, listKeys, searchKeys } from '../../src/services/apis/apis.ts';
import { getKey } from '../../src/services/keys/keys.ts';
import { listIdentities } from '../../src/services/identities/identities.ts';
import { listRoles, listRolesPage } from '../../src/services/rbac/roles.ts';
import { listPermissions, listPermissionsPage } from '../../src/services/rbac/permissions.ts';
import { auditEvents, listAuditLogsFor } from '../../src/services/audit/list-audit-logs.ts';
import { leakedKeyUrls } from '../../src/services/leaks/leaked-keys.ts';
import { listOverrides, listOverridesIn } from '../../src/services/ratelimits/overrides.ts';
import { getNamespace, listNamespaces, namespaceByNameOrId } from '../../src/services/ratelimits/namespaces.ts';
import { listDeliveries } from '../../src/services/webhooks/deliveries.ts';
import { requireEndpointFor } from '../../src/services/webhooks/endpoint-records.ts';
import { listReports } from '../../src/services/usage/reports.ts';
import { getExport, listExports } from '../../src/services/usage/exports.ts';
import { bootstrap } from '../../src/services/workspaces/workspaces.ts';
import { AUDIT_COMMANDS } from '../../src/cli/commands/audit.ts';
import { TOTAL_CAP } from '../../src/services/pagination.ts';
import { buildApp } from '../../src/app.ts';
import { moveLastUsedForward } from '../../src/store/last-used.ts';

/**
 * The reads test/store/query-plans.test.ts checks: each calls the service functions its route, command or
 * dashboard page calls, with the arguments they pass, on the big workspace of test/helpers/big-workspace.ts,
 * and checks the answer is the page it should be (so the statements explained are those of a real page).
 */
export interface Operation {
  name: string;
  /** It answers every row of a collection (v1's unpaginated lists): reading all of it is its plan (see checkPlan). */
  wholeAnswer?: boolean;
  /**
   * It reads one owner's rows by an index and filters them by a column that index does not hold (audit records of
   * one resource, by event): bounded by what the owner holds, not by the table (see checkPlan).
   */
  filteredWalk?: boolean;
  run(ctx: { store: Store; db: Db; caller: Caller; big: BigWorkspace }): Promise<void>;
}

/** The ids of a page, checked against the expected first and count. */
function assertPage(ids: string[], first: string, count: number): void {
  assert.equal(ids.length, count);
  assert.equal(ids[0], first);
}

const keyListings: Operation[] = [
  {
    name: 'v1 apis.listKeys: the first page, with total capped',
    async run({ db, caller, big }) {
      const page = await listKeys(db, caller, { apiId: big.apiId, limit: 100 });
      assertPage(
        page.keys.map((k) => k.id),
        big.idOf('key', 1),
        100,
      );
      assert.equal(page.total, TOTAL_CAP + 1);
    },
  },
  {
    name: 'v1 apis.listKeys: 20 pages in, by cursor',
    async run({ db, caller, big }) {
      const page = await listKeys(db, caller, { apiId: big.apiId, limit: 100, cursor: big.idOf('key', 2000) });
      assertPage(
        page.keys.map((k) => k.id),
        big.idOf('key', 2001),
        100,
      );
    },
  },
  {
    name: 'v1 apis.listKeys: filtered by externalId (the identity of half the keys), a page by cursor; a small identity, its exact total',
    async run({ db, caller, big }) {
      const first = await listKeys(db, caller, { apiId: big.apiId, limit: 100, externalId: 'ext_1' });
      assertPage(
        first.keys.map((k) => k.id),
        big.idOf('key', 1),
        100,
      );
      assert.equal(first.total, TOTAL_CAP + 1);
      const next = await listKeys(db, caller, { apiId: big.apiId, limit: 100, externalId: 'ext_1', cursor: big.idOf('key', 5000) });
      assert.equal(next.keys[0].id, big.idOf('key', 5001)); // 5001 = 1 + 5 * 1,000: identity 1's
      const small = await listKeys(db, caller, { apiId: big.apiId, limit: 100, externalId: 'ext_3' });
      assert.equal(small.total, big.n / 1000);
    },
  },
  {
    name: 'v2 apis.listKeys: the first page, a page by cursor, filtered by externalId',
    async run({ db, caller, big }) {
      const first = await listKeys(db, caller, { apiId: big.apiId, limit: 100, withTotal: false });
      assert.equal(first.total, undefined);
      const next = await listKeys(db, caller, { apiId: big.apiId, limit: 100, cursor: first.cursor, withTotal: false });
      assert.equal(next.keys[0].id, big.idOf('key', 102)); // key 100 is deleted
      const filtered = await listKeys(db, caller, { apiId: big.apiId, limit: 10, externalId: 'ext_1', withTotal: false });
      assertPage(
        filtered.keys.map((k) => k.id),
        big.idOf('key', 1),
        10,
      );
    },
  },
  {
    name: 'v1 and v2 keys.getKey',
    async run({ db, caller, big }) {
      const view = await getKey(db, caller, big.idOf('key', 5000 + 1), false);
      assert.equal(view.externalId, 'ext_1');
      assert.deepEqual(view.roles, ['role1']);
    },
  },
];

const identityAndRbacListings: Operation[] = [
  {
    name: 'v1 identities.listIdentities: the first page and one by cursor',
    async run({ db, caller, big }) {
      const first = await listIdentities(db, caller, { environment: 'default', limit: 100 });
      assert.equal(first.total, TOTAL_CAP + 1);
      const next = await listIdentities(db, caller, { environment: 'default', limit: 100, cursor: big.idOf('id', 2000) });
      assertPage(
        next.identities.map((i) => i.id),
        big.idOf('id', 2001),
        100,
      );
    },
  },
  {
    name: 'v2 identities.listIdentities: a page, and a page by cursor',
    async run({ db, caller, big }) {
      const first = await listIdentities(db, caller, { limit: 100, withTotal: false });
      const next = await listIdentities(db, caller, { limit: 100, cursor: first.cursor, withTotal: false });
      assert.equal(next.identities[0].id, big.idOf('id', 101));
    },
  },
  {
    name: 'v1 permissions.listRoles and listPermissions (every one, as v1 answers them)',
    wholeAnswer: true,
    async run({ db, caller, big }) {
      assert.equal((await listRoles(db, caller)).length, big.n);
      assert.equal((await listPermissions(db, caller)).length, big.n);
    },
  },
  {
    name: 'v2 permissions.listRoles and listPermissions: a page and one by cursor; the dashboard pages of roles and permissions',
    async run({ db, caller, big }) {
      const roles = await listRolesPage(db, caller, { limit: 100, cursor: big.idOf('role', 2000) });
      assert.deepEqual(roles.roles[0].permissions[0].id, big.idOf('perm', 2001));
      const permissions = await listPermissionsPage(db, caller, { limit: 50, cursor: big.idOf('perm', 2000) });
      assert.equal(permissions.permissions[0].id, big.idOf('perm', 2001));
      await listRolesPage(db, caller, { limit: 50 });
      await listPermissionsPage(db, caller, { limit: 100 });
    },
  },
];

const auditListings: Operation[] = [
  {
    name: 'v1 audit.listLogs: the newest page, one by cursor, by event, by target',
    async run({ db, caller, big }) {
      const first = await listAuditLogsFor(db, caller, { limit: 100 });
      assert.equal(first.logs[0].id, big.idOf('log', big.n));
      const next = await listAuditLogsFor(db, caller, { limit: 100, cursor: first.cursor });
      assert.equal(next.logs[0].id, big.idOf('log', big.n - 100));
      const byEvent = await listAuditLogsFor(db, caller, { limit: 100, event: 'key.leaked' });
      assert.equal(byEvent.logs.length, 100);
      const byTarget = await listAuditLogsFor(db, caller, { limit: 100, targetId: big.idOf('key', 1) });
      assert.equal(byTarget.logs.length, 100);
      assert.ok(byTarget.logs.every((l) => l.target.id === big.idOf('key', 1)));
    },
  },
  {
    name: 'keyhold audit list (the CLI)',
    async run({ store, big }) {
      const list = AUDIT_COMMANDS['audit list'];
      const result = await list.run({ store, actor: OPERATOR_ACTOR, applied: [] }, { workspace: big.workspaceId });
      assert.ok('json' in result && (result.json as { logs: unknown[] }).logs.length > 0);
    },
  },
  {
    name: "keyhold audit list and the dashboard's audit page by target and event together: the target's records, filtered by event",
    // A resource's audit records are its own changes, few: filtering them by event reads those, not the table's.
    filteredWalk: true,
    async run({ store, db, caller, big }) {
      const values = { workspace: big.workspaceId, event: 'key.create', target: big.idOf('key', 1) };
      const result = await AUDIT_COMMANDS['audit list'].run({ store, actor: OPERATOR_ACTOR, applied: [] }, values);
      assert.ok('json' in result && (result.json as { logs: unknown[] }).logs.length > 0);
      await listAuditLogsFor(db, caller, { limit: 50, event: 'permission.create', targetId: big.idOf('key', 1) });
    },
  },
  {
    name: "the dashboard's audit page: the event list, a page, filtered by event, filtered by target",
    async run({ db, caller, big }) {
      const events = await auditEvents(db, caller);
      assert.ok(events.includes('key.leaked'));
      await listAuditLogsFor(db, caller, { limit: 50, cursor: big.idOf('log', 5000) });
      await listAuditLogsFor(db, caller, { limit: 50, event: 'role.create' });
      await listAuditLogsFor(db, caller, { limit: 50, targetId: big.idOf('key', 1) });
    },
  },
];

const OPERATOR_ACTOR = { type: 'operator' as const, id: 'plans' };

const dashboardAndOtherListings: Operation[] = [
  {
    name: "the dashboard's API page (its keys, a page by cursor, their leak marks) and the list of APIs",
    async run({ db, caller, big }) {
      const api = await getApi(db, caller, big.apiId);
      const page = await listKeys(db, caller, { apiId: api.id, limit: 50, cursor: big.idOf('key', 5000) });
      await leakedKeyUrls(
        db,
        caller.workspaceId,
        page.keys.map((k) => k.id),
      );
      const apis = await listApis(db, caller, { limit: 50 });
      assert.equal(apis.apis[0].keys, TOTAL_CAP + 1);
    },
  },
  {
    name: "the dashboard's key search: by a key's id, by an externalId (a page, and one by cursor)",
    async run({ db, caller, big }) {
      const byId = await searchKeys(db, caller, { apiId: big.apiId, query: big.idOf('key', 4242), limit: 50 });
      assert.deepEqual(
        byId.keys.map((k) => k.id),
        [big.idOf('key', 4242)],
      );
      const byIdentity = await searchKeys(db, caller, { apiId: big.apiId, query: 'ext_1', limit: 50 });
      assert.equal(byIdentity.keys.length, 50);
      const next = await searchKeys(db, caller, { apiId: big.apiId, query: 'ext_1', limit: 50, cursor: byIdentity.cursor });
      assert.ok(next.keys[0].id > byIdentity.keys[49].id);
    },
  },
  {
    name: "the dashboard's key page",
    async run({ db, caller, big }) {
      const key = await getKey(db, caller, big.idOf('key', 42), false);
      await getApi(db, caller, key.apiId);
      await leakedKeyUrls(db, caller.workspaceId, [key.id]);
    },
  },
  {
    name: 'ratelimits.listOverrides (v1, v2, the dashboard) and the namespaces',
    async run({ db, caller, big }) {
      const v1 = await listOverrides(db, caller, { namespaceId: big.namespaceId, limit: 100, cursor: big.idOf('rlor', 2000) });
      assert.equal(v1.overrides[0].id, big.idOf('rlor', 2001));
      assert.equal(v1.total, TOTAL_CAP + 1);
      const v2 = await listOverridesIn(db, caller, namespaceByNameOrId('big'), { limit: 50, withTotal: false });
      assert.equal(v2.overrides.length, 50);
      await getNamespace(db, caller, { namespaceId: big.namespaceId });
      await listOverrides(db, caller, { namespaceId: big.namespaceId, limit: 50 });
      const namespaces = await listNamespaces(db, caller, { limit: 100 });
      assertPage(
        namespaces.namespaces.map((n) => n.id),
        big.idOf('rlns', 1),
        100,
      );
      assert.equal(namespaces.total, TOTAL_CAP + 1);
      const nextNamespaces = await listNamespaces(db, caller, { limit: 100, cursor: big.idOf('rlns', 2000) });
      assert.equal(nextNamespaces.namespaces[0].id, big.idOf('rlns', 2001));
    },
  },
  {
    name: "webhooks.listDeliveries and the dashboard's deliveries page: newest first, by cursor, by status",
    async run({ db, caller, big }) {
      const first = await listDeliveries(db, caller, { endpointId: big.endpointId, limit: 100 });
      assert.equal(first.deliveries[0].deliveryId, big.idOf('whdl', big.n));
      await listDeliveries(db, caller, { endpointId: big.endpointId, limit: 100, cursor: first.cursor });
      const failed = await listDeliveries(db, caller, { endpointId: big.endpointId, status: 'failed', limit: 100 });
      assert.ok(failed.deliveries.length === 100 && failed.deliveries.every((d) => d.status === 'failed'));
      const failedNext = await listDeliveries(db, caller, {
        endpointId: big.endpointId,
        status: 'failed',
        limit: 100,
        cursor: failed.cursor,
      });
      assert.equal(failedNext.deliveries[0].deliveryId, big.idOf('whdl', big.n - 1000));
      // A status no delivery has: an answer at once, not a walk through every other delivery.
      assert.equal((await listDeliveries(db, caller, { endpointId: big.endpointId, status: 'pending', limit: 100 })).deliveries.length, 0);
      await requireEndpointFor(db, caller, big.endpointId, 'read_endpoint');
      await listDeliveries(db, caller, { endpointId: big.endpointId, limit: 50, cursor: big.idOf('whdl', 5000) });
    },
  },
  {
    name: "usage.listReports and the dashboard's reports page: newest first, by cursor, by status; the exports",
    async run({ db, caller, big }) {
      const first = await listReports(db, caller, { exportId: big.exportId, limit: 100 });
      assert.equal(first.reports[0].reportId, big.idOf('urep', big.n));
      const next = await listReports(db, caller, { exportId: big.exportId, limit: 100, cursor: first.cursor });
      assert.equal(next.reports[0].reportId, big.idOf('urep', big.n - 100));
      const failed = await listReports(db, caller, { exportId: big.exportId, status: 'failed', limit: 100 });
      assert.ok(failed.reports.length === 100 && failed.reports.every((r) => r.status === 'failed'));
      assert.equal((await listReports(db, caller, { exportId: big.exportId, status: 'pending', limit: 100 })).reports.length, 0);
      await listReports(db, caller, { exportId: big.exportId, limit: 50, cursor: big.idOf('urep', 5000) });
      assert.equal((await getExport(db, caller, { exportId: big.exportId })).exportId, big.exportId);
      assert.equal((await listExports(db, caller)).exports.length, 1);
    },
  },
  {
    name: 'the start of a server on this data (bootstrap check, the application and its background work)',
    async run({ store, db }) {
      assert.equal(await bootstrap(db, undefined), null);
      const app = await buildApp({ store });
      await app.ready();
      await app.close();
    },
  },
];

/** Writes the recorders make per flush, with as many rows as a flush of many keys gives them. */
const recorderWrites: Operation[] = [
  {
    name: "the verification recorder's last_used_at of 1,000 keys (two statements on SQLite, one on PostgreSQL): each key found by its primary key",
    async run({ db, big }) {
      const T = 1_800_000_000_000;
      const latest = new Map(Array.from({ length: 1000 }, (_, i) => [big.idOf('key', 7 * i + 1), T + i] as const));
      await moveLastUsedForward(db, 'keys', latest);
      const rows = await db
        .selectFrom('keys')
        .select(['id', 'last_used_at'])
        .where('id', 'in', [...latest.keys()])
        .execute();
      assert.deepEqual(new Map(rows.map((r) => [r.id, Number(r.last_used_at)])), latest);
    },
  },
];

export const OPERATIONS: Operation[] = [
  ...keyListings,
  ...identityAndRbacListings,
  ...auditListings,
  ...dashboardAndOtherListings,
  ...recorderWrites,
];
