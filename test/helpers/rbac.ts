import assert from 'node:assert/strict';
import type { Response, World } from './harness.ts';

/** Creates a permission through the API (slug = name unless given) and returns its id. */
export async function createPermission(w: World, name: string, opts: { slug?: string; description?: string; key?: string } = {}): Promise<string> {
  const { key, ...rest } = opts;
  const r = await w.post('/v1/permissions.createPermission', { name, ...rest }, key);
  assert.equal(r.status, 200, r.body);
  return r.json.permissionId;
}

/** Creates a role through the API, with permissions by slug (missing ones created), and returns its id. */
export async function createRole(w: World, name: string, permissions?: string[], key?: string): Promise<string> {
  const r = await w.post('/v1/permissions.createRole', { name, ...(permissions ? { permissions } : {}) }, key);
  assert.equal(r.status, 200, r.body);
  return r.json.roleId;
}

/** The key as keys.getKey shows it: `permissions` are the effective ones (direct ∪ through roles), `roles` the role names. */
export async function keyView(w: World, keyId: string): Promise<{ roles: string[]; permissions: string[] }> {
  const r = await w.get('/v1/keys.getKey', { keyId });
  assert.equal(r.status, 200, r.body);
  return { roles: r.json.roles, permissions: r.json.permissions };
}

/** Slugs of the permissions connected to the key directly (not through roles). */
export async function directPermissions(w: World, keyId: string): Promise<string[]> {
  const rows = await w.store.db.selectFrom('keys_permissions').innerJoin('permissions', 'permissions.id', 'keys_permissions.permission_id')
    .select('permissions.slug').where('keys_permissions.key_id', '=', keyId).orderBy('permissions.slug').execute();
  return rows.map((r) => r.slug);
}

/** Audit records about `targetId`, oldest first, as `event` or `event:<role or permission named in the diff>`. */
export async function auditEvents(w: World, targetId: string, prefix = ''): Promise<string[]> {
  const rows = await w.store.db.selectFrom('audit_logs').select(['event', 'diff']).where('target_id', '=', targetId)
    .where('event', 'like', `${prefix}%`).orderBy('id').execute();
  return rows.map((r) => {
    const diff = r.diff ? JSON.parse(r.diff) : {};
    const what = diff.permission ?? diff.role;
    return what === undefined ? r.event : `${r.event}:${what}`;
  });
}

/** The audit records one request wrote about `targetId`, sorted, in the form of `auditEvents`. */
export async function auditOf(w: World, res: Response, targetId: string, prefix = ''): Promise<string[]> {
  const requestId = res.headers['x-request-id'] as string;
  assert.match(requestId, /^req_/);
  const rows = await w.store.db.selectFrom('audit_logs').select(['event', 'diff']).where('target_id', '=', targetId)
    .where('request_id', '=', requestId).where('event', 'like', `${prefix}%`).execute();
  return rows.map((r) => {
    const diff = r.diff ? JSON.parse(r.diff) : {};
    const what = diff.permission ?? diff.role;
    return what === undefined ? r.event : `${r.event}:${what}`;
  }).sort();
}

export type Table = 'roles' | 'permissions' | 'keys_roles' | 'keys_permissions' | 'roles_permissions' | 'audit_logs';

export async function count(w: World, table: Table): Promise<number> {
  return Number((await w.store.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
}

/** Row counts of every RBAC table and the audit log: equal snapshots mean nothing was written. */
export async function snapshot(w: World): Promise<Record<Table, number>> {
  const tables: Table[] = ['roles', 'permissions', 'keys_roles', 'keys_permissions', 'roles_permissions', 'audit_logs'];
  return Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await count(w, t)]))) as Record<Table, number>;
}

/** The JSON paths of a 400's `error.errors`, sorted and de-duplicated. */
export function errorPaths(r: Response): string[] {
  assert.equal(r.status, 400, r.body);
  assert.equal(r.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
  return [...new Set((r.json.error.errors as Array<{ path: string }>).map((e) => e.path))].sort();
}

/** A name unique within the test process, so tests sharing one workspace never collide. */
let counter = 0;
export const unique = (base: string): string => `${base}.${++counter}`;
