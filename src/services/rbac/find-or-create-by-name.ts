import { newId } from '../../domain/ids.ts';
import type { Executor } from '../../store/store.ts';
import { recordAudit, type AuditEntry, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';

export interface Named {
  id: string;
  name: string;
}

const KINDS = {
  role: { table: 'roles', column: 'name', idPrefix: 'role', createPermission: 'rbac.*.create_role' },
  permission: { table: 'permissions', column: 'slug', idPrefix: 'perm', createPermission: 'rbac.*.create_permission' },
} as const;

export type RbacKind = keyof typeof KINDS;

// The two tables share the columns used here; Kysely cannot type a table chosen at run time.
// biome-ignore lint/suspicious/noExplicitAny: see above
type Untyped = Executor & { selectFrom(t: string): any; insertInto(t: string): any };

const readNamed = (db: Executor, workspaceId: string, kind: RbacKind, names: string[]): Promise<Named[]> => {
  const k = KINDS[kind];
  return (db as Untyped)
    .selectFrom(k.table)
    .select(['id', `${k.column} as name`])
    .where('workspace_id', '=', workspaceId)
    .where(k.column, 'in', names)
    .execute();
};

/**
 * Resolves role names (or permission slugs) of the caller's workspace. Missing ones are created when the
 * caller holds `rbac.*.create_role` (`rbac.*.create_permission`), else 403 naming it. Run it inside the
 * transaction of the change that uses the result. Concurrent creators of one name converge on one row
 * (`ON CONFLICT DO NOTHING`, then re-read).
 */
export async function resolveOrCreate(db: Executor, caller: Caller, kind: RbacKind, names: string[], now = Date.now()): Promise<Named[]> {
  return (await resolveOrCreateAll(db, caller, { [kind]: names }, now))[kind];
}

/**
 * `resolveOrCreate` for roles and permissions at once: every create permission needed is checked before
 * anything is written, so a 403 names all of them (and writes nothing).
 */
export async function resolveOrCreateAll(
  db: Executor,
  caller: Caller,
  wanted: Partial<Record<RbacKind, string[]>>,
  now = Date.now(),
): Promise<Record<RbacKind, Named[]>> {
  const kinds = Object.keys(KINDS) as RbacKind[];
  const found: Record<RbacKind, Named[]> = { role: [], permission: [] };
  const missing: Record<RbacKind, string[]> = { role: [], permission: [] };
  for (const kind of kinds) {
    // Sorted: concurrent creators insert shared names in one order, so they wait on each other instead of deadlocking.
    const names = [...new Set(wanted[kind] ?? [])].sort();
    if (names.length === 0) continue;
    found[kind] = await readNamed(db, caller.workspaceId, kind, names);
    missing[kind] = names.filter((n) => !found[kind].some((r) => r.name === n));
  }
  requirePermissions(caller, ...kinds.filter((kind) => missing[kind].length > 0).map((kind) => KINDS[kind].createPermission));
  for (const kind of kinds) {
    if (missing[kind].length === 0) continue;
    const k = KINDS[kind];
    const rows = missing[kind].map((name) => ({
      id: newId(k.idPrefix),
      workspace_id: caller.workspaceId,
      name,
      ...(kind === 'permission' ? { slug: name } : {}),
      description: null,
      created_at: now,
      updated_at: now,
    }));
    await (db as Untyped)
      .insertInto(k.table)
      .values(rows)
      // biome-ignore lint/suspicious/noExplicitAny: the table is chosen at run time (Untyped)
      .onConflict((oc: any) => oc.columns(['workspace_id', k.column]).doNothing())
      .execute();
    found[kind] = await readNamed(db, caller.workspaceId, kind, [...new Set(wanted[kind])]);
    const createdIds = new Set(rows.map((r) => r.id));
    await recordAudit(
      db,
      found[kind]
        .filter((r) => createdIds.has(r.id))
        .map((r): AuditEntry => callerAudit(caller, `${kind}.create`, { type: kind, id: r.id }, { diff: { name: r.name } })),
      now,
    );
  }
  return found;
}
