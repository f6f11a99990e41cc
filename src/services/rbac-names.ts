import { newId } from '../domain/ids.ts';
import type { Executor } from '../store/store.ts';
import { recordAudit, type AuditEntry } from './audit.ts';
import { requirePermissions, actorOf, type Caller } from './caller.ts';

export interface Named { id: string; name: string }

const KINDS = {
  role: { table: 'roles', column: 'name', idPrefix: 'role', createPermission: 'rbac.*.create_role' },
  permission: { table: 'permissions', column: 'slug', idPrefix: 'perm', createPermission: 'rbac.*.create_permission' },
} as const;

/**
 * Resolves role names (or permission slugs) of the caller's workspace. Missing ones are created when the
 * caller holds `rbac.*.create_role` (`rbac.*.create_permission`), else 403 naming it. Run it inside the
 * transaction of the change that uses the result. Concurrent creators of one name converge on one row
 * (`ON CONFLICT DO NOTHING`, then re-read).
 */
export async function resolveOrCreate(db: Executor, caller: Caller, kind: keyof typeof KINDS, names: string[], now = Date.now()): Promise<Named[]> {
  const k = KINDS[kind];
  const wanted = [...new Set(names)];
  if (wanted.length === 0) return [];
  // The two tables share the columns used here; Kysely cannot type a table chosen at run time.
  const q = db as unknown as Executor & { selectFrom(t: string): any; insertInto(t: string): any };
  const read = (): Promise<Named[]> => q.selectFrom(k.table).select(['id', `${k.column} as name`])
    .where('workspace_id', '=', caller.workspaceId).where(k.column, 'in', wanted).execute();
  const found = await read();
  const missing = wanted.filter((n) => !found.some((r) => r.name === n));
  if (missing.length === 0) return found;
  requirePermissions(caller, k.createPermission);
  const rows = missing.map((name) => ({
    id: newId(k.idPrefix), workspace_id: caller.workspaceId, name, ...(kind === 'permission' ? { slug: name } : {}),
    description: null, created_at: now, updated_at: now,
  }));
  await q.insertInto(k.table).values(rows).onConflict((oc: any) => oc.columns(['workspace_id', k.column]).doNothing()).execute();
  const all = await read();
  const createdIds = new Set(rows.map((r) => r.id));
  await recordAudit(db, all.filter((r) => createdIds.has(r.id)).map((r): AuditEntry => ({
    workspaceId: caller.workspaceId, event: `${kind}.create`, actor: actorOf(caller), target: { type: kind, id: r.id },
    requestId: caller.requestId, diff: { name: r.name },
  })), now);
  return all;
}
