import { invalid } from '../../domain/errors.ts';
import type { Db, Executor } from '../../store/store.ts';
import { recordAudit, type AuditEntry } from '../audit/record-audit.ts';
import { actorOf, requirePermissions, type Caller } from '../caller.ts';
import { requireKey } from '../lookups.ts';
import type { Named } from '../rbac/find-or-create-by-name.ts';
import {
  byName,
  permissionNames,
  permissionReference,
  referenceProblems,
  resolveReferences,
  type PermissionItem,
  type Reference,
} from '../rbac/resolve-references.ts';
import { transact } from '../changes.ts';

/** A key holds at most this many roles, and at most this many direct permissions. */
export const MAX_LINKS_PER_KEY = 1000;

export type Kind = 'role' | 'permission';
export type Mode = 'add' | 'remove' | 'set';

/** The permissions each change needs (the create rights for missing names are checked where they are created). */
const REQUIRED: Record<Kind, Record<Mode, string[]>> = {
  permission: {
    add: ['rbac.*.add_permission_to_key'],
    remove: ['rbac.*.remove_permission_from_key'],
    set: ['rbac.*.add_permission_to_key', 'rbac.*.remove_permission_from_key'],
  },
  role: { add: ['rbac.*.add_role_to_key'], remove: ['rbac.*.remove_role_from_key'], set: ['rbac.*.add_role_to_key'] },
};

const KIND = {
  role: {
    path: '/roles',
    missing: 'must have id or name',
    plural: 'roles',
    connect: 'authorization.connect_role_and_key',
    disconnect: 'authorization.disconnect_role_and_key',
  },
  permission: {
    path: '/permissions',
    missing: 'must have id, slug or name',
    plural: 'permissions',
    connect: 'authorization.connect_permission_and_key',
    disconnect: 'authorization.disconnect_permission_and_key',
  },
} as const;

/**
 * keys.addPermissions: connects the listed permissions to the key directly; ones already connected stay
 * as they are. Returns the requested permissions `{id, name}` sorted by name. Needs
 * `rbac.*.add_permission_to_key`, plus `rbac.*.create_permission` to create a missing slug with `create: true`.
 */
export async function addPermissions(db: Db, caller: Caller, keyId: string, items: PermissionItem[]): Promise<Named[]> {
  return change(db, caller, 'permission', 'add', keyId, items.map(permissionReference));
}

/**
 * keys.removePermissions: disconnects every listed permission from the key (permissions granted through a
 * role are not touched). Listed permissions that exist but are not connected are ignored; unknown ones → 404
 * and nothing changes. Needs `rbac.*.remove_permission_from_key`.
 */
export async function removePermissions(db: Db, caller: Caller, keyId: string, items: PermissionItem[]): Promise<void> {
  await change(
    db,
    caller,
    'permission',
    'remove',
    keyId,
    items.map((p) => ({ ...permissionReference(p), create: undefined })),
  );
}

/**
 * keys.setPermissions: the key's direct permissions become exactly the listed set. Returns that set
 * `{id, name}` sorted by name. Needs both `rbac.*.add_permission_to_key` and
 * `rbac.*.remove_permission_from_key`, plus `rbac.*.create_permission` to create missing slugs.
 */
export async function setPermissions(db: Db, caller: Caller, keyId: string, items: PermissionItem[]): Promise<Named[]> {
  return change(db, caller, 'permission', 'set', keyId, items.map(permissionReference));
}

/**
 * keys.addRoles: connects the listed roles to the key; ones already connected stay. Returns the requested
 * roles `{id, name}` sorted by name. Needs `rbac.*.add_role_to_key`, plus `rbac.*.create_role` to create a
 * missing name with `create: true`.
 */
export async function addRoles(db: Db, caller: Caller, keyId: string, refs: Reference[]): Promise<Named[]> {
  return change(db, caller, 'role', 'add', keyId, refs);
}

/**
 * keys.setRoles: the key's roles become exactly the referenced set, atomically. Items name a
 * role by `id` (wins when both are given) or `name`; `create: true` creates an unknown name (needs
 * `rbac.*.create_role`). Unknown ids or names → 404 listing every one. Concurrent calls on one key are
 * serialized by writing the key row first, so the result is always one caller's set, never a mix.
 * Returns every role now connected, `{id, name}` sorted by name. Needs `rbac.*.add_role_to_key`.
 */
export async function setRoles(db: Db, caller: Caller, keyId: string, refs: Reference[]): Promise<Named[]> {
  return change(db, caller, 'role', 'set', keyId, refs);
}

/**
 * keys.removeRoles: disconnects every listed role from the key. Listed roles that exist but are not
 * connected are ignored; unknown ones → 404 and nothing changes. Needs `rbac.*.remove_role_from_key`.
 */
export async function removeRoles(db: Db, caller: Caller, keyId: string, refs: Reference[]): Promise<void> {
  await change(
    db,
    caller,
    'role',
    'remove',
    keyId,
    refs.map((r) => ({ ...r, create: undefined })),
  );
}

/**
 * One change to a key's direct roles or permissions, in one transaction (all or nothing). Concurrent
 * changes to one key are serialized by writing the key row first.
 */
function change(db: Db, caller: Caller, kind: Kind, mode: Mode, keyId: string, refs: Reference[]): Promise<Named[]> {
  return changeKeyLinks(db, caller, kind, mode, keyId, refs, (_tx, changed) => Promise.resolve(changed));
}

/**
 * A change as keys.add/remove/set Roles/Permissions make it (same rules, permissions and audit), answered
 * with what `read` finds in the same transaction once the change is made: Unkey v2 answers with the key's
 * resulting roles or permissions. `read` gets what the change returns (the listed set; `[]` for remove).
 */
export async function changeKeyLinks<T>(
  db: Db,
  caller: Caller,
  kind: Kind,
  mode: Mode,
  keyId: string,
  refs: Reference[],
  read: (tx: Executor, changed: Named[]) => Promise<T>,
): Promise<T> {
  const k = KIND[kind];
  const problems = referenceProblems(refs, k.path, k.missing);
  if (problems.length) throw invalid(problems);
  requirePermissions(caller, ...REQUIRED[kind][mode]);

  return transact(db, async (tx, changes) => {
    await requireKey(tx, caller.workspaceId, keyId);
    changes.key(keyId);
    const now = Date.now();
    // Writing the key row takes its row lock (PostgreSQL) / the write lock (SQLite) before anything is read.
    await tx.updateTable('keys').set({ updated_at: now }).where('id', '=', keyId).execute();
    return read(tx, await applyLinkChange(tx, caller, kind, mode, keyId, refs, now));
  });
}

/**
 * keys.setRoles / keys.setPermissions semantics inside a transaction the caller already runs (keys.updateKey):
 * the key's direct roles or permissions become exactly the referenced set (an empty list removes them all).
 * The caller must have validated the references (`referenceProblems`), checked the operation's permissions,
 * found the key live, written its row first (the lock that serializes changes to one key) and recorded
 * `changes.key(keyId)`. Unknown references → 404, creating without the create right → 403: throw, so the
 * caller's transaction rolls back. Returns the set `{id, name}` sorted by name.
 */
export function replaceLinks(tx: Executor, caller: Caller, kind: Kind, keyId: string, refs: Reference[], now: number): Promise<Named[]> {
  return applyLinkChange(tx, caller, kind, 'set', keyId, refs, now);
}

/** The part of a change that runs inside the transaction, once the key row is locked. */
async function applyLinkChange(
  tx: Executor,
  caller: Caller,
  kind: Kind,
  mode: Mode,
  keyId: string,
  refs: Reference[],
  now: number,
): Promise<Named[]> {
  const k = KIND[kind];
  const listed = await resolveReferences(tx, caller, kind, refs, now);
  const current = await connected(tx, kind, keyId);
  const isListed = new Set(listed.map((r) => r.id));
  const isCurrent = new Set(current.map((r) => r.id));
  const toAdd = mode === 'remove' ? [] : listed.filter((r) => !isCurrent.has(r.id));
  const toRemove = mode === 'add' ? [] : current.filter((r) => (mode === 'remove' ? isListed.has(r.id) : !isListed.has(r.id)));
  const total = current.length + toAdd.length - toRemove.length;
  if (total > MAX_LINKS_PER_KEY) {
    throw invalid([{ path: k.path, message: `a key can have at most ${MAX_LINKS_PER_KEY} ${k.plural}; this would make ${total}` }]);
  }
  await unlink(
    tx,
    kind,
    keyId,
    toRemove.map((r) => r.id),
  );
  await link(
    tx,
    kind,
    caller.workspaceId,
    keyId,
    toAdd.map((r) => r.id),
    now,
  );

  const actor = actorOf(caller);
  const audit = (event: string, r: Named): AuditEntry => ({
    workspaceId: caller.workspaceId,
    event,
    actor,
    target: { type: 'key', id: keyId },
    requestId: caller.requestId,
    diff: kind === 'role' ? { roleId: r.id, role: r.name } : { permissionId: r.id, permission: r.name },
  });
  await recordAudit(tx, [...toRemove.map((r) => audit(k.disconnect, r)), ...toAdd.map((r) => audit(k.connect, r))], now);

  if (mode === 'remove') return [];
  return kind === 'permission'
    ? permissionNames(
        tx,
        listed.map((r) => r.id),
      )
    : listed.sort(byName);
}

/** The roles (`name`) or permissions (`name` = slug) connected to the key directly. */
function connected(tx: Executor, kind: Kind, keyId: string): Promise<Named[]> {
  return kind === 'role'
    ? tx
        .selectFrom('keys_roles')
        .innerJoin('roles', 'roles.id', 'keys_roles.role_id')
        .select(['roles.id', 'roles.name'])
        .where('keys_roles.key_id', '=', keyId)
        .execute()
    : tx
        .selectFrom('keys_permissions')
        .innerJoin('permissions', 'permissions.id', 'keys_permissions.permission_id')
        .select(['permissions.id', 'permissions.slug as name'])
        .where('keys_permissions.key_id', '=', keyId)
        .execute();
}

async function link(tx: Executor, kind: Kind, workspaceId: string, keyId: string, ids: string[], now: number): Promise<void> {
  if (ids.length === 0) return;
  if (kind === 'role') {
    await tx
      .insertInto('keys_roles')
      .values(ids.map((id) => ({ key_id: keyId, role_id: id, workspace_id: workspaceId, created_at: now })))
      .execute();
  } else {
    await tx
      .insertInto('keys_permissions')
      .values(ids.map((id) => ({ key_id: keyId, permission_id: id, workspace_id: workspaceId, created_at: now })))
      .execute();
  }
}

async function unlink(tx: Executor, kind: Kind, keyId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  if (kind === 'role') await tx.deleteFrom('keys_roles').where('key_id', '=', keyId).where('role_id', 'in', ids).execute();
  else await tx.deleteFrom('keys_permissions').where('key_id', '=', keyId).where('permission_id', 'in', ids).execute();
}
