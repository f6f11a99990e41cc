import assert from 'node:assert/strict';
import type { Response, World } from './harness.ts';

/** Creates a permission through the API (slug = name unless given) and returns its id. */
export async function createPermission(
  w: World,
  name: string,
  opts: { slug?: string; description?: string; key?: string } = {},
): Promise<string> {
  const { key, ...rest } = opts;
  const r = await w.post<{ permissionId: string }>('/v1/permissions.createPermission', { name, ...rest }, key);
  assert.equal(r.status, 200, r.body);
  return r.json.permissionId;
}

/** Creates a role through the API, with permissions by slug (missing ones created), and returns its id. */
export async function createRole(w: World, name: string, permissions?: string[], key?: string): Promise<string> {
  const r = await w.post<{ roleId: string }>('/v1/permissions.createRole', { name, ...(permissions ? { permissions } : {}) }, key);
  assert.equal(r.status, 200, r.body);
  return r.json.roleId;
}

/** The id of the permission with this slug in `w.workspaceId`; fails when there is none. */
export const permissionIdOf = async (w: World, slug: string): Promise<string> =>
  (
    await w.store.db
      .selectFrom('permissions')
      .select('id')
      .where('slug', '=', slug)
      .where('workspace_id', '=', w.workspaceId)
      .executeTakeFirstOrThrow()
  ).id;

/** The id of the role with this name in `w.workspaceId`; fails when there is none. */
export const roleIdOf = async (w: World, name: string): Promise<string> =>
  (
    await w.store.db
      .selectFrom('roles')
      .select('id')
      .where('name', '=', name)
      .where('workspace_id', '=', w.workspaceId)
      .executeTakeFirstOrThrow()
  ).id;

/** The key as keys.getKey shows it: `permissions` are the effective ones (direct ∪ through roles), `roles` the role names. */
export async function keyView(w: World, keyId: string): Promise<{ roles: string[]; permissions: string[] }> {
  const r = await w.get<{ roles: string[]; permissions: string[] }>('/v1/keys.getKey', { keyId });
  assert.equal(r.status, 200, r.body);
  return { roles: r.json.roles, permissions: r.json.permissions };
}

/** Slugs of the permissions connected to the key directly (not through roles). */
export async function directPermissions(w: World, keyId: string): Promise<string[]> {
  const rows = await w.store.db
    .selectFrom('keys_permissions')
    .innerJoin('permissions', 'permissions.id', 'keys_permissions.permission_id')
    .select('permissions.slug')
    .where('keys_permissions.key_id', '=', keyId)
    .orderBy('permissions.slug')
    .execute();
  return rows.map((r) => r.slug);
}

/** An audit record as `event`, or `event:<role or permission named in the diff>`. */
const eventOf = (r: { event: string; diff: string | null }): string => {
  const diff: { permission?: string; role?: string } = r.diff ? JSON.parse(r.diff) : {};
  const what = diff.permission ?? diff.role;
  return what === undefined ? r.event : `${r.event}:${what}`;
};

/** Audit records about `targetId`, oldest first, in the form of `eventOf`. */
export async function auditEvents(w: World, targetId: string, prefix = ''): Promise<string[]> {
  const rows = await w.store.db
    .selectFrom('audit_logs')
    .select(['event', 'diff'])
    .where('target_id', '=', targetId)
    .where('event', 'like', `${prefix}%`)
    .orderBy('id')
    .execute();
  return rows.map(eventOf);
}

/** The audit records one request wrote about `targetId`, sorted, in the form of `eventOf`. */
export async function auditOf(w: World, res: Response<unknown>, targetId: string, prefix = ''): Promise<string[]> {
  const requestId = res.headers['x-request-id'] as string;
  assert.match(requestId, /^req_/);
  const rows = await w.store.db
    .selectFrom('audit_logs')
    .select(['event', 'diff'])
    .where('target_id', '=', targetId)
    .where('request_id', '=', requestId)
    .where('event', 'like', `${prefix}%`)
    .execute();
  return rows.map(eventOf).sort();
}

/** Every RBAC table and the audit log: equal snapshots of these mean nothing was written. */
export const RBAC_TABLES = ['roles', 'permissions', 'keys_roles', 'keys_permissions', 'roles_permissions', 'audit_logs'] as const;

/** A name unique within the test process, so tests sharing one workspace never collide. */
let counter = 0;
export const unique = (base: string): string => `${base}.${++counter}`;
