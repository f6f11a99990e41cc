import { AppError, invalid } from '../domain/errors.ts';
import type { Db } from '../store/store.ts';
import { recordAudit, type AuditEntry } from './audit.ts';
import { actorOf, requirePermissions, type Caller } from './caller.ts';
import { requireKey } from './lookups.ts';
import { resolveOrCreate, type Named } from './rbac-names.ts';
import { transact } from './changes.ts';

export interface RoleReference { id?: string; name?: string; create?: boolean }

/**
 * keys.setRoles: the key's roles become exactly the referenced set, in one transaction (all or nothing).
 * Items name a role by `id` (wins when both are given) or `name`; `create: true` creates an unknown name
 * (needs `rbac.*.create_role`). Unknown ids or names → 404 listing every one. Concurrent calls on one key
 * are serialized by writing the key row first, so the result is always one caller's set, never a mix.
 */
export async function setRoles(db: Db, caller: Caller, keyId: string, refs: RoleReference[]): Promise<Named[]> {
  const problems = refs.flatMap((r, i) => (r.id === undefined && r.name === undefined ? [{ path: `/roles/${i}`, message: 'must have id or name' }] : []));
  if (problems.length) throw invalid(problems);
  requirePermissions(caller, 'rbac.*.add_role_to_key');
  const ids = [...new Set(refs.filter((r) => r.id !== undefined).map((r) => r.id!))];
  const byName = refs.filter((r) => r.id === undefined);
  const names = [...new Set(byName.map((r) => r.name!))];
  const creatable = new Set(byName.filter((r) => r.create === true).map((r) => r.name!));

  return transact(db, async (tx, changes) => {
    await requireKey(tx, caller.workspaceId, keyId);
    changes.key(keyId);
    const now = Date.now();
    // Writing the key row takes its row lock (PostgreSQL) / the write lock (SQLite) before anything is read.
    await tx.updateTable('keys').set({ updated_at: now }).where('id', '=', keyId).execute();

    const [foundById, foundByName] = await Promise.all([
      ids.length ? tx.selectFrom('roles').select(['id', 'name']).where('workspace_id', '=', caller.workspaceId).where('id', 'in', ids).execute() : [],
      names.length ? tx.selectFrom('roles').select(['id', 'name']).where('workspace_id', '=', caller.workspaceId).where('name', 'in', names).execute() : [],
    ]);
    const unknownIds = ids.filter((id) => !foundById.some((r) => r.id === id));
    const unknownNames = names.filter((n) => !creatable.has(n) && !foundByName.some((r) => r.name === n));
    if (unknownIds.length || unknownNames.length) {
      const parts = [
        ...(unknownIds.length ? [`role ids not found: ${unknownIds.join(', ')}`] : []),
        ...(unknownNames.length ? [`roles not found: ${unknownNames.join(', ')}`] : []),
      ];
      throw new AppError('data/role-not-found', parts.join('; '));
    }
    const resolvedByName = await resolveOrCreate(tx, caller, 'role', names, now);
    const desired = new Map<string, Named>([...foundById, ...resolvedByName].map((r) => [r.id, r]));

    const current = await tx.selectFrom('keys_roles').innerJoin('roles', 'roles.id', 'keys_roles.role_id')
      .select(['roles.id', 'roles.name']).where('keys_roles.key_id', '=', keyId).execute();
    const toRemove = current.filter((r) => !desired.has(r.id));
    const toAdd = [...desired.values()].filter((r) => !current.some((c) => c.id === r.id));
    if (toRemove.length) {
      await tx.deleteFrom('keys_roles').where('key_id', '=', keyId).where('role_id', 'in', toRemove.map((r) => r.id)).execute();
    }
    if (toAdd.length) {
      await tx.insertInto('keys_roles').values(toAdd.map((r) => ({ key_id: keyId, role_id: r.id, workspace_id: caller.workspaceId, created_at: now }))).execute();
    }
    const actor = actorOf(caller);
    const audit = (event: string, r: Named): AuditEntry => ({
      workspaceId: caller.workspaceId, event, actor, target: { type: 'key', id: keyId }, requestId: caller.requestId, diff: { roleId: r.id, role: r.name },
    });
    await recordAudit(tx, [
      ...toRemove.map((r) => audit('authorization.disconnect_role_and_key', r)),
      ...toAdd.map((r) => audit('authorization.connect_role_and_key', r)),
    ], now);
    return [...desired.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  });
}
