import type { Updateable } from 'kysely';
import { invalid, type FieldProblem, notFound } from '../../domain/errors.ts';
import { isObject, parseJson } from '../../domain/json.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { KeyRow } from '../../store/schema.ts';
import { recordAudit, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { ensureIdentity } from '../identities/identities.ts';
import { replaceLinks } from './key-links.ts';
import {
  defaultRatelimitRow,
  keyAttributeProblems,
  ratelimitType,
  refillColumns,
  type NamedRatelimitInput,
  type RatelimitInput,
  type RefillInput,
} from './key-attributes.ts';
import { replaceKeyRatelimits } from './key-ratelimits.ts';
import { requireKey } from '../lookups.ts';
import { emitEvent } from '../webhooks/emit.ts';
import { permissionReference, referenceProblems, type PermissionItem, type Reference } from '../rbac/resolve-references.ts';

/**
 * keys.updateKey: every member but `keyId` is optional; absent leaves the attribute as it is, `null` clears it.
 * `roles` / `permissions` replace the key's direct roles / permissions exactly as keys.setRoles /
 * keys.setPermissions do (an empty list removes them all).
 */
export interface UpdateKeyInput {
  keyId: string;
  name?: string | null;
  /** Deprecated alias of externalId; externalId wins when both are given. */
  ownerId?: string | null;
  externalId?: string | null;
  meta?: Record<string, unknown> | null;
  expires?: number | null;
  remaining?: number | null;
  refill?: RefillInput | null;
  ratelimit?: RatelimitInput | null;
  /** The key's limits become exactly these, by name (v2; `default` is `ratelimit`'s name): see replaceKeyRatelimits. */
  ratelimits?: NamedRatelimitInput[];
  enabled?: boolean;
  environment?: string | null;
  roles?: Reference[];
  permissions?: PermissionItem[];
}

/**
 * The cross-field rules of keys.updateKey that need no stored state; every problem at once. Safe on a body
 * that failed schema validation (members of the wrong type are skipped), so the route lists both kinds together.
 * The rules that depend on the stored key (refill needs remaining) are checked by updateKey under the key's lock.
 */
export function updateKeyProblems(input: unknown): FieldProblem[] {
  if (!isObject(input)) return [];
  const problems = keyAttributeProblems({
    meta: input.meta ?? undefined,
    ratelimit: input.ratelimit ?? undefined,
    ratelimits: input.ratelimits,
    refill: input.refill ?? undefined,
    // Whether the key will have remaining is known only with the stored key; see updateKey.
    remaining: 0,
  } as Parameters<typeof keyAttributeProblems>[0]);
  if (isObject(input.refill) && input.remaining === null) {
    problems.push({ path: '/refill', message: 'refill requires remaining; this request clears remaining' });
  }
  const items = (list: unknown): Array<Record<string, unknown>> | undefined =>
    Array.isArray(list) && list.every(isObject) ? list : undefined;
  const roles = items(input.roles);
  if (roles) problems.push(...referenceProblems(roles as Reference[], '/roles', 'must have id or name'));
  const permissions = items(input.permissions);
  if (permissions)
    problems.push(
      ...referenceProblems((permissions as PermissionItem[]).map(permissionReference), '/permissions', 'must have id, slug or name'),
    );
  return problems;
}

type RefillView = { interval: string; amount: number; refillDay?: number } | null;
type RatelimitView = { type: string; limit: number; duration: number } | null;

const refillOf = (r: Pick<KeyRow, 'refill_interval' | 'refill_amount' | 'refill_day'>): RefillView =>
  r.refill_interval !== null && r.refill_amount !== null
    ? { interval: r.refill_interval, amount: r.refill_amount, ...(r.refill_day !== null ? { refillDay: r.refill_day } : {}) }
    : null;

/**
 * keys.updateKey, in one transaction (all or nothing): the key row is written first — its row lock
 * (PostgreSQL) / the write lock (SQLite) serializes concurrent changes to one key — then its identity link,
 * its `default` rate limit, its roles and permissions; one `key.update` audit record lists every provided
 * attribute as `{from, to}` (role and permission changes get their connect/disconnect records, as with
 * keys.setRoles). Verification caches drop the key on every node.
 *
 * Order: 400 (request alone) → 404 (key unknown, deleted or of another workspace) → 403 naming every
 * missing permission (`api.<apiId>.update_key`; with `roles` also `rbac.*.add_role_to_key`; with
 * `permissions` also `rbac.*.add_permission_to_key` and `rbac.*.remove_permission_from_key`) → 400 for a
 * key that would end with a refill but no remaining → 404/403 of the roles and permissions (create rights).
 *
 * Expired, used-up and disabled keys become valid again through this call (a future or null `expires`,
 * `remaining` > 0, `enabled: true`); the `enabled` flag changes only when `enabled` is given.
 */
export async function updateKey(db: Db, caller: Caller, input: UpdateKeyInput): Promise<void> {
  const problems = updateKeyProblems(input);
  if (problems.length) throw invalid(problems);
  const { keyId } = input;
  await transact(db, async (tx, changes) => {
    const now = Date.now();
    const before = await lockKeyForUpdate(tx, caller, input, now);
    changes.key(keyId);
    requireRefillWithRemaining(input, before);
    const { set, diff } = columnChanges(input, before, now);
    // externalId wins over its deprecated alias ownerId: a string links the key to that identity (created on
    // first use), null unlinks it (the identity stays).
    const externalId = input.externalId !== undefined ? input.externalId : input.ownerId;
    if (externalId !== undefined) {
      set.identity_id = externalId === null ? null : (await ensureIdentity(tx, caller.workspaceId, externalId, now)).id;
      diff.externalId = { from: await externalIdOf(tx, before.identity_id), to: externalId };
    }
    if (Object.keys(set).length) await tx.updateTable('keys').set(set).where('id', '=', keyId).execute();
    // The named set first: it would otherwise remove a `default` this same request sets.
    if (input.ratelimits) diff.ratelimits = await replaceKeyRatelimits(tx, caller.workspaceId, keyId, input.ratelimits, now);
    if (input.ratelimit !== undefined) diff.ratelimit = await replaceDefaultRatelimit(tx, caller.workspaceId, keyId, input.ratelimit, now);
    if (input.roles) await replaceLinks(tx, caller, 'role', keyId, input.roles, now);
    if (input.permissions) await replaceLinks(tx, caller, 'permission', keyId, input.permissions.map(permissionReference), now);
    await recordAudit(tx, [callerAudit(caller, 'key.update', { type: 'key', id: keyId }, { diff })], now);
    const changed = Object.entries(input).flatMap(([k, v]) => (k === 'keyId' || v === undefined ? [] : [k]));
    await emitEvent(tx, caller.workspaceId, 'key.updated', { keyId, apiId: before.api_id, changed }, { now, changes });
  });
}

/**
 * 404 for a key the caller cannot see, 403 naming every permission the update needs; then takes the key's
 * lock by writing it first, and returns the key as it is now that no one else can change it.
 */
async function lockKeyForUpdate(tx: Executor, caller: Caller, input: UpdateKeyInput, now: number): Promise<KeyRow> {
  const found = await requireKey(tx, caller.workspaceId, input.keyId);
  requirePermissions(
    caller,
    `api.${found.api_id}.update_key`,
    ...(input.roles ? ['rbac.*.add_role_to_key'] : []),
    ...(input.permissions ? ['rbac.*.add_permission_to_key', 'rbac.*.remove_permission_from_key'] : []),
  );
  const before = await tx
    .updateTable('keys')
    .set({ updated_at: now })
    .where('id', '=', input.keyId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!before) throw notFound('key', input.keyId);
  return before;
}

/**
 * A refill needs remaining. Judged on the key as it will be, so both a refill added to a key without
 * remaining and remaining cleared on a key that keeps its refill are refused.
 */
function requireRefillWithRemaining(input: UpdateKeyInput, before: KeyRow): void {
  const refillAfter = input.refill !== undefined ? input.refill : refillOf(before);
  const remainingAfter = input.remaining !== undefined ? input.remaining : before.remaining;
  if (refillAfter && remainingAfter === null) {
    throw invalid([
      input.refill
        ? { path: '/refill', message: 'refill requires remaining: the key has none; set remaining too' }
        : { path: '/remaining', message: 'the key has a refill, which requires remaining; send refill: null to remove it as well' },
    ]);
  }
}

type Diff = Record<string, { from: unknown; to: unknown }>;

/** The key's own columns the input changes, and their `{from, to}` for the audit record. */
function columnChanges(input: UpdateKeyInput, before: KeyRow, now: number): { set: Updateable<KeyRow>; diff: Diff } {
  const set: Updateable<KeyRow> = {};
  const diff: Diff = {};
  if (input.name !== undefined) {
    set.name = input.name;
    diff.name = { from: before.name, to: input.name };
  }
  if (input.meta !== undefined) {
    set.meta = input.meta === null ? null : JSON.stringify(input.meta);
    diff.meta = { from: parseJson(before.meta), to: input.meta };
  }
  if (input.expires !== undefined) {
    set.expires_at = input.expires;
    diff.expires = { from: before.expires_at, to: input.expires };
  }
  if (input.remaining !== undefined) {
    set.remaining = input.remaining;
    diff.remaining = { from: before.remaining, to: input.remaining };
  }
  if (input.refill !== undefined) {
    // A new schedule starts now: the first refill is its next due time, not one already past.
    const columns = refillColumns(input.refill, now);
    Object.assign(set, columns);
    diff.refill = { from: refillOf(before), to: input.refill ? refillOf(columns) : null };
  }
  if (input.enabled !== undefined) {
    set.enabled = input.enabled ? 1 : 0;
    diff.enabled = { from: before.enabled === 1, to: input.enabled };
  }
  if (input.environment !== undefined) {
    set.environment = input.environment;
    diff.environment = { from: before.environment, to: input.environment };
  }
  return { set, diff };
}

/** Replaces (or with null removes) the key's `default` rate limit as a whole; its `{from, to}` for the audit record. */
async function replaceDefaultRatelimit(
  tx: Executor,
  workspaceId: string,
  keyId: string,
  rl: RatelimitInput | null,
  now: number,
): Promise<Diff[string]> {
  const current = await tx
    .selectFrom('ratelimits')
    .select(['type', 'limit', 'duration'])
    .where('key_id', '=', keyId)
    .where('name', '=', 'default')
    .executeTakeFirst();
  if (rl === null) {
    await tx.deleteFrom('ratelimits').where('key_id', '=', keyId).where('name', '=', 'default').execute();
  } else {
    // The object replaces the limit as a whole: an absent type means consistent, as at creation.
    const row = defaultRatelimitRow(workspaceId, keyId, rl, now);
    const { type, limit, duration, auto_apply, updated_at } = row;
    await tx
      .insertInto('ratelimits')
      .values(row)
      .onConflict((oc) => oc.columns(['key_id', 'name']).doUpdateSet({ type, limit, duration, auto_apply, updated_at }))
      .execute();
  }
  return {
    from: current ? ({ type: current.type, limit: current.limit, duration: current.duration } satisfies RatelimitView) : null,
    to: rl ? ({ type: ratelimitType(rl), limit: rl.limit, duration: rl.duration ?? rl.refillInterval! } satisfies RatelimitView) : null,
  };
}

async function externalIdOf(db: Executor, identityId: string | null): Promise<string | null> {
  if (identityId === null) return null;
  const row = await db.selectFrom('identities').select('external_id').where('id', '=', identityId).executeTakeFirst();
  return row?.external_id ?? null;
}
