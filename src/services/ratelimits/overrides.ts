import { AppError, notFound } from '../../domain/errors.ts';
import { MAX_OVERRIDES_PER_NAMESPACE, MAX_PATTERNS_PER_NAMESPACE } from '../../domain/bounds.ts';
import { newId } from '../../domain/ids.ts';
import { isPattern, OverrideSet, type OverrideRule } from '../../domain/override-match.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { RatelimitOverrideRow } from '../../store/schema.ts';
import { callerAudit, recordAudit } from '../audit/record-audit.ts';
import { can, requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { cappedCount, DEFAULT_PAGE_SIZE, ownedRows, splitPage } from '../pagination.ts';
import { namespaceByRef, requireNamespace, type NamespaceLocator, type NamespaceRef } from './namespaces.ts';

export interface OverrideInput extends NamespaceRef {
  identifier: string;
  limit: number;
  duration: number;
  async?: boolean;
}

/** The Override object of v1: `async` only when the override sets it. */
export interface OverrideView {
  id: string;
  identifier: string;
  limit: number;
  duration: number;
  async?: boolean;
  /** When it was last set (epoch ms); not part of v1's Override object, whose schema leaves it out. */
  updatedAt: number;
}

export interface OverridePage {
  overrides: OverrideView[];
  /** Overrides in the namespace, counted up to TOTAL_CAP + 1 ("more than TOTAL_CAP"); absent when not asked for. */
  total?: number;
  cursor?: string;
}

const asyncOf = (row: RatelimitOverrideRow): boolean | null => (row.async === null ? null : row.async === 1);

export const overrideView = (row: RatelimitOverrideRow): OverrideView => ({
  id: row.id,
  identifier: row.identifier,
  limit: Number(row.limit),
  duration: Number(row.duration),
  ...(row.async === null ? {} : { async: row.async === 1 }),
  updatedAt: Number(row.updated_at),
});

/** Every override of a namespace, as the limiter matches them. */
export async function overrideRules(db: Executor, namespaceId: string): Promise<OverrideRule[]> {
  const rows = await db.selectFrom('ratelimit_overrides').selectAll().where('namespace_id', '=', namespaceId).execute();
  return rows.map((r) => ({ ...overrideView(r), async: asyncOf(r), createdAt: Number(r.created_at) }));
}

async function requireOverride(db: Executor, namespaceId: string, identifier: string): Promise<RatelimitOverrideRow> {
  const row = await db
    .selectFrom('ratelimit_overrides')
    .selectAll()
    .where('namespace_id', '=', namespaceId)
    .where('identifier', '=', identifier)
    .executeTakeFirst();
  if (!row) throw notFound('override', identifier);
  return row;
}

/**
 * 412 when a new override would take the namespace past MAX_OVERRIDES_PER_NAMESPACE, or a new pattern past
 * MAX_PATTERNS_PER_NAMESPACE; replacing an existing override always fits. (Two callers adding at once may
 * each see room for one: the bound may be passed by the number of concurrent requests, which is harmless.)
 */
async function requireRoomFor(tx: Executor, namespaceId: string, identifier: string): Promise<void> {
  const existing = await tx
    .selectFrom('ratelimit_overrides')
    .select('id')
    .where('namespace_id', '=', namespaceId)
    .where('identifier', '=', identifier)
    .executeTakeFirst();
  if (existing) return;
  const counts = await tx
    .selectFrom('ratelimit_overrides')
    .select((eb) => [
      eb.fn.countAll<number>().as('all'),
      eb.fn.sum<number>(eb.case().when('identifier', 'like', '%*%').then(1).else(0).end()).as('patterns'),
    ])
    .where('namespace_id', '=', namespaceId)
    .executeTakeFirstOrThrow();
  if (Number(counts.all) >= MAX_OVERRIDES_PER_NAMESPACE) {
    throw new AppError(
      'state/precondition-failed',
      `The namespace holds ${MAX_OVERRIDES_PER_NAMESPACE} overrides, the most it may; delete one first`,
    );
  }
  if (isPattern(identifier) && Number(counts.patterns ?? 0) >= MAX_PATTERNS_PER_NAMESPACE) {
    throw new AppError(
      'state/precondition-failed',
      `The namespace holds ${MAX_PATTERNS_PER_NAMESPACE} pattern overrides (with *), the most it may; delete one first`,
    );
  }
}

/**
 * ratelimits.setOverride: creates or replaces the override of (namespace, identifier) — one row per pair,
 * also when two callers set it at once. Needs `ratelimit.<namespaceId>.set_override`.
 */
export const setOverride = (db: Db, caller: Caller, input: OverrideInput): Promise<{ overrideId: string }> =>
  setOverrideIn(db, caller, namespaceByRef(input), input);

/**
 * setOverride in the namespace `locate` finds (v1 and v2). `keepAsync`: a replaced override keeps its
 * `async` (v2 has no such member, so it leaves what a v1 client set); a new one gets none (each request decides).
 */
export async function setOverrideIn(
  db: Db,
  caller: Caller,
  locate: NamespaceLocator,
  input: Omit<OverrideInput, keyof NamespaceRef>,
  opts: { keepAsync?: boolean } = {},
): Promise<{ overrideId: string }> {
  const now = Date.now();
  return transact(db, async (tx, changes) => {
    const ns = await locate(tx, caller.workspaceId);
    requirePermissions(caller, `ratelimit.${ns.id}.set_override`);
    await requireRoomFor(tx, ns.id, input.identifier);
    const async = input.async === undefined ? null : input.async ? 1 : 0;
    const values = { limit: input.limit, duration: input.duration };
    const updated = opts.keepAsync ? values : { ...values, async };
    const row = await tx
      .insertInto('ratelimit_overrides')
      .values({
        id: newId('rlor'),
        workspace_id: caller.workspaceId,
        namespace_id: ns.id,
        identifier: input.identifier,
        ...values,
        async,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(['namespace_id', 'identifier']).doUpdateSet({ ...updated, updated_at: now }))
      .returning('id')
      .executeTakeFirstOrThrow();
    changes.namespace(ns.id);
    const diff = { namespaceId: ns.id, identifier: input.identifier, ...values, ...(opts.keepAsync ? {} : { async: input.async ?? null }) };
    await recordAudit(tx, [callerAudit(caller, 'ratelimit.set_override', { type: 'ratelimitOverride', id: row.id }, { diff })], now);
    return { overrideId: row.id };
  });
}

/** ratelimits.getOverride: the override of exactly this identifier. Needs `ratelimit.<namespaceId>.read_override`. */
export async function getOverride(db: Db, caller: Caller, q: NamespaceRef & { identifier: string }): Promise<OverrideView> {
  const ns = await requireNamespace(db, caller.workspaceId, q, 'query');
  requirePermissions(caller, `ratelimit.${ns.id}.read_override`);
  return overrideView(await requireOverride(db, ns.id, q.identifier));
}

/**
 * The override that applies to `identifier` when limiting (exactly its own, else the best `*` pattern, as
 * ratelimits.limit matches them), in the namespace `locate` finds: v2's getOverride. Without
 * `ratelimit.<namespaceId>.read_override` it answers as if there were none (v2 hides overrides so).
 */
export async function matchOverrideIn(db: Db, caller: Caller, locate: NamespaceLocator, identifier: string): Promise<OverrideRule> {
  const ns = await locate(db, caller.workspaceId);
  const rule = new OverrideSet(await overrideRules(db, ns.id)).match(identifier);
  if (!rule || !can(caller, `ratelimit.${ns.id}.read_override`)) throw notFound('override', identifier);
  return rule;
}

/** ratelimits.listOverrides: by id, with cursor pagination. Needs `ratelimit.<namespaceId>.read_override`. */
export const listOverrides = (db: Db, caller: Caller, q: NamespaceRef & { limit?: number; cursor?: string }): Promise<OverridePage> =>
  listOverridesIn(db, caller, namespaceByRef(q, 'query'), q);

/**
 * listOverrides in the namespace `locate` finds (v1 and v2): a range of ratelimit_overrides_namespace (namespace_id,
 * id). `total` (v1's; v2 has none and skips it) counts up to TOTAL_CAP + 1.
 */
export async function listOverridesIn(
  db: Db,
  caller: Caller,
  locate: NamespaceLocator,
  q: { limit?: number; cursor?: string; withTotal?: boolean },
): Promise<OverridePage> {
  const ns = await locate(db, caller.workspaceId);
  requirePermissions(caller, `ratelimit.${ns.id}.read_override`);
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  const base = db.selectFrom('ratelimit_overrides');
  const [rows, total] = await Promise.all([
    ownedRows(base, 'namespace_id', ns.id, { after: q.cursor })
      .selectAll()
      .limit(limit + 1)
      .execute(),
    q.withTotal === false ? undefined : cappedCount(db, ownedRows(base, 'namespace_id', ns.id)),
  ]);
  const { page, cursor } = splitPage(rows, limit);
  return { overrides: page.map(overrideView), ...(total === undefined ? {} : { total }), cursor };
}

/** ratelimits.deleteOverride: removes it for good (setting it again later creates a new one). Needs `ratelimit.<namespaceId>.delete_override`. */
export const deleteOverride = (db: Db, caller: Caller, input: NamespaceRef & { identifier: string }): Promise<void> =>
  deleteOverrideIn(db, caller, namespaceByRef(input), input.identifier);

/** deleteOverride of exactly `identifier` (no pattern matching) in the namespace `locate` finds (v1 and v2). */
export async function deleteOverrideIn(db: Db, caller: Caller, locate: NamespaceLocator, identifier: string): Promise<void> {
  await transact(db, async (tx, changes) => {
    const ns = await locate(tx, caller.workspaceId);
    requirePermissions(caller, `ratelimit.${ns.id}.delete_override`);
    const row = await requireOverride(tx, ns.id, identifier);
    // A concurrent delete that committed first leaves nothing to delete: a 404, not a second audit record.
    const deleted = await tx.deleteFrom('ratelimit_overrides').where('id', '=', row.id).executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw notFound('override', identifier);
    changes.namespace(ns.id);
    await recordAudit(tx, [
      callerAudit(
        caller,
        'ratelimit.delete_override',
        { type: 'ratelimitOverride', id: row.id },
        { diff: { namespaceId: ns.id, identifier: row.identifier } },
      ),
    ]);
  });
}
