import { AppError, type FieldProblem } from '../../domain/errors.ts';
import type { Executor } from '../../store/store.ts';
import type { Caller } from '../caller.ts';
import { resolveOrCreate, type Named } from './find-or-create-by-name.ts';

/**
 * A role or permission named in a request: by `id` (wins when both are given), or by `name` — a role's
 * name or a permission's slug. `create: true` creates a missing name (needs `rbac.*.create_role` /
 * `rbac.*.create_permission`).
 */
export interface Reference {
  id?: string;
  name?: string;
  create?: boolean;
}

/** A permission item as clients send it: `slug`, or its deprecated alias `name`; `slug` wins when both are given. */
export interface PermissionItem {
  id?: string;
  slug?: string;
  name?: string;
  create?: boolean;
}

export const permissionReference = (p: PermissionItem): Reference => ({ id: p.id, name: p.slug ?? p.name, create: p.create });

/** Items that name nothing (no id, no name/slug): one problem each, at `<path>/<index>`. */
export function referenceProblems(refs: Reference[], path: string, message: string): FieldProblem[] {
  return refs.flatMap((r, i) => (r.id === undefined && r.name === undefined ? [{ path: `${path}/${i}`, message }] : []));
}

const NOT_FOUND = {
  role: { kind: 'data/role-not-found', ids: 'role ids not found', names: 'roles not found' },
  permission: { kind: 'data/permission-not-found', ids: 'permission ids not found', names: 'permissions not found' },
} as const;

/**
 * Resolves references to rows of the caller's workspace, inside the caller's transaction. Duplicates
 * collapse (the result has one entry per id; for permissions `name` is the slug). Every unknown id and
 * every unknown name without `create: true` is reported in one 404; then missing creatable names are
 * created through `resolveOrCreate` (403 when the create permission is not held).
 */
export async function resolveReferences(
  tx: Executor,
  caller: Caller,
  kind: 'role' | 'permission',
  refs: Reference[],
  now: number,
): Promise<Named[]> {
  const ids = [...new Set(refs.filter((r) => r.id !== undefined).map((r) => r.id!))];
  const named = refs.filter((r) => r.id === undefined);
  const names = [...new Set(named.map((r) => r.name!))];
  const creatable = new Set(named.filter((r) => r.create === true).map((r) => r.name!));

  const [foundById, foundByName] = await Promise.all([
    ids.length ? selectByIds(tx, caller.workspaceId, kind, ids) : [],
    names.length ? selectByNames(tx, caller.workspaceId, kind, names) : [],
  ]);
  const unknownIds = ids.filter((id) => !foundById.some((r) => r.id === id));
  const unknownNames = names.filter((n) => !creatable.has(n) && !foundByName.some((r) => r.name === n));
  if (unknownIds.length || unknownNames.length) {
    const m = NOT_FOUND[kind];
    throw new AppError(
      m.kind,
      [
        ...(unknownIds.length ? [`${m.ids}: ${unknownIds.join(', ')}`] : []),
        ...(unknownNames.length ? [`${m.names}: ${unknownNames.join(', ')}`] : []),
      ].join('; '),
    );
  }
  const resolvedByName = foundByName.length === names.length ? foundByName : await resolveOrCreate(tx, caller, kind, names, now);
  return [...new Map<string, Named>([...foundById, ...resolvedByName].map((r) => [r.id, r])).values()];
}

function selectByIds(tx: Executor, workspaceId: string, kind: 'role' | 'permission', ids: string[]): Promise<Named[]> {
  return kind === 'role'
    ? tx.selectFrom('roles').select(['id', 'name']).where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute()
    : tx.selectFrom('permissions').select(['id', 'slug as name']).where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute();
}

function selectByNames(tx: Executor, workspaceId: string, kind: 'role' | 'permission', names: string[]): Promise<Named[]> {
  return kind === 'role'
    ? tx.selectFrom('roles').select(['id', 'name']).where('workspace_id', '=', workspaceId).where('name', 'in', names).execute()
    : tx
        .selectFrom('permissions')
        .select(['id', 'slug as name'])
        .where('workspace_id', '=', workspaceId)
        .where('slug', 'in', names)
        .execute();
}

/** Orders `{id, name}` items by name, then id (permission names need not be unique). */
export const byName = (a: Named, b: Named): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The `{id, name}` of permissions as responses show them: `name` is the permission's name (equal to its
 * slug unless permissions.createPermission was given a different slug), sorted by name.
 */
export async function permissionNames(tx: Executor, ids: string[]): Promise<Named[]> {
  if (ids.length === 0) return [];
  const rows = await tx.selectFrom('permissions').select(['id', 'name']).where('id', 'in', ids).execute();
  return rows.sort(byName);
}
