import type { Updateable } from 'kysely';
import { AppError, invalid, type FieldProblem } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { parseJson } from '../../domain/json.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { KeyRow } from '../../store/schema.ts';
import { recordAudit } from '../audit/record-audit.ts';
import { actorOf, requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { ensureIdentity } from '../identities/identities.ts';
import { replaceLinks } from './key-links.ts';
import { keyAttributeProblems, type RatelimitInput, type RefillInput } from './keys.ts';
import { requireKey } from '../lookups.ts';
import { permissionReference, referenceProblems, type PermissionItem, type Reference } from '../rbac/resolve-references.ts';
import { addCredits, MAX_REMAINING } from './credits.ts';

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
  enabled?: boolean;
  environment?: string | null;
  roles?: Reference[];
  permissions?: PermissionItem[];
}

/** The largest credit count a key can hold (exact in JSON numbers, in SQLite and in PostgreSQL bigint). */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

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
  if (permissions) problems.push(...referenceProblems((permissions as PermissionItem[]).map(permissionReference), '/permissions', 'must have id, slug or name'));
  return problems;
}

type RefillView = { interval: string; amount: number; refillDay?: number } | null;
type RatelimitView = { type: string; limit: number; duration: number } | null;

const refillOf = (r: Pick<KeyRow, 'refill_interval' | 'refill_amount' | 'refill_day'>): RefillView =>
  r.refill_interval !== null && r.refill_amount !== null
    ? { interval: r.refill_interval, amount: r.refill_amount, ...(r.refill_day !== null ? { refillDay: r.refill_day } : {}) }
    : null;

const ratelimitType = (rl: RatelimitInput): 'fast' | 'consistent' => rl.type ?? (rl.async ? 'fast' : 'consistent');

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
    const found = await requireKey(tx, caller.workspaceId, keyId);
    requirePermissions(caller, `api.${found.api_id}.update_key`,
      ...(input.roles ? ['rbac.*.add_role_to_key'] : []),
      ...(input.permissions ? ['rbac.*.add_permission_to_key', 'rbac.*.remove_permission_from_key'] : []));
    const now = Date.now();
    // Written first: takes the key's lock, and returns the key as it is now that no one else can change it.
    const before = await tx.updateTable('keys').set({ updated_at: now })
      .where('id', '=', keyId).where('deleted_at', 'is', null).returningAll().executeTakeFirst();
    if (!before) throw new AppError('data/key-not-found', `key ${keyId} not found`);
    changes.key(keyId);

    // SPEC §4: a refill needs remaining. Judged on the key as it will be, so both a refill added to a key
    // without remaining and remaining cleared on a key that keeps its refill are refused.
    const refillAfter = input.refill !== undefined ? input.refill : refillOf(before);
    const remainingAfter = input.remaining !== undefined ? input.remaining : before.remaining;
    if (refillAfter && remainingAfter === null) {
      throw invalid([input.refill
        ? { path: '/refill', message: 'refill requires remaining: the key has none; set remaining too' }
        : { path: '/remaining', message: 'the key has a refill, which requires remaining; send refill: null to remove it as well' }]);
    }

    const set: Updateable<KeyRow> = {};
    const diff: Record<string, { from: unknown; to: unknown }> = {};
    if (input.name !== undefined) { set.name = input.name; diff.name = { from: before.name, to: input.name }; }
    if (input.meta !== undefined) {
      set.meta = input.meta === null ? null : JSON.stringify(input.meta);
      diff.meta = { from: parseJson(before.meta), to: input.meta };
    }
    if (input.expires !== undefined) { set.expires_at = input.expires; diff.expires = { from: before.expires_at, to: input.expires }; }
    if (input.remaining !== undefined) { set.remaining = input.remaining; diff.remaining = { from: before.remaining, to: input.remaining }; }
    if (input.refill !== undefined) {
      const r = input.refill;
      set.refill_interval = r?.interval ?? null;
      set.refill_amount = r?.amount ?? null;
      // Daily refills have no day (they stay daily); monthly ones default to the 1st.
      set.refill_day = r?.interval === 'monthly' ? r.refillDay ?? 1 : null;
      // A new schedule starts now: the first refill is its next due time, not one already past.
      set.last_refill_at = r ? now : null;
      diff.refill = { from: refillOf(before), to: r ? refillOf({ refill_interval: r.interval, refill_amount: r.amount, refill_day: set.refill_day }) : null };
    }
    if (input.enabled !== undefined) { set.enabled = input.enabled ? 1 : 0; diff.enabled = { from: before.enabled === 1, to: input.enabled }; }
    if (input.environment !== undefined) { set.environment = input.environment; diff.environment = { from: before.environment, to: input.environment }; }

    // externalId wins over its deprecated alias ownerId: a string links the key to that identity (created on
    // first use), null unlinks it (the identity stays).
    const externalId = input.externalId !== undefined ? input.externalId : input.ownerId;
    if (externalId !== undefined) {
      set.identity_id = externalId === null ? null : (await ensureIdentity(tx, caller.workspaceId, externalId, now)).id;
      diff.externalId = { from: await externalIdOf(tx, before.identity_id), to: externalId };
    }
    if (Object.keys(set).length) await tx.updateTable('keys').set(set).where('id', '=', keyId).execute();

    if (input.ratelimit !== undefined) {
      const current = await tx.selectFrom('ratelimits').select(['type', 'limit', 'duration'])
        .where('key_id', '=', keyId).where('name', '=', 'default').executeTakeFirst();
      const rl = input.ratelimit;
      if (rl === null) {
        await tx.deleteFrom('ratelimits').where('key_id', '=', keyId).where('name', '=', 'default').execute();
      } else {
        // The object replaces the limit as a whole (an absent type means consistent, as at creation).
        const values = { type: ratelimitType(rl), limit: rl.limit, duration: rl.duration ?? rl.refillInterval!, auto_apply: 1, updated_at: now };
        await tx.insertInto('ratelimits')
          .values({ id: newId('rl'), workspace_id: caller.workspaceId, key_id: keyId, identity_id: null, name: 'default', created_at: now, ...values })
          .onConflict((oc) => oc.columns(['key_id', 'name']).doUpdateSet(values))
          .execute();
      }
      diff.ratelimit = {
        from: current ? { type: current.type, limit: current.limit, duration: current.duration } satisfies RatelimitView : null,
        to: rl ? { type: ratelimitType(rl), limit: rl.limit, duration: rl.duration ?? rl.refillInterval! } satisfies RatelimitView : null,
      };
    }

    if (input.roles) await replaceLinks(tx, caller, 'role', keyId, input.roles, now);
    if (input.permissions) await replaceLinks(tx, caller, 'permission', keyId, input.permissions.map(permissionReference), now);

    await recordAudit(tx, [{
      workspaceId: caller.workspaceId, event: 'key.update', actor: actorOf(caller), target: { type: 'key', id: keyId },
      requestId: caller.requestId, diff,
    }], now);
  });
}

async function externalIdOf(db: Executor, identityId: string | null): Promise<string | null> {
  if (identityId === null) return null;
  const row = await db.selectFrom('identities').select('external_id').where('id', '=', identityId).executeTakeFirst();
  return row?.external_id ?? null;
}

export type RemainingOp = 'increment' | 'decrement' | 'set';
export interface UpdateRemainingInput { keyId: string; op: RemainingOp; value: number | null }

/** The cross-field rule of keys.updateRemaining that needs no stored state; safe on a body that failed the schema. */
export function updateRemainingProblems(input: unknown): FieldProblem[] {
  if (!isObject(input)) return [];
  if ((input.op === 'increment' || input.op === 'decrement') && input.value === null) {
    return [{ path: '/value', message: `cannot ${input.op} by null; use op "set" with null to make the key unlimited` }];
  }
  return [];
}

/**
 * keys.updateRemaining. `increment`/`decrement` are one guarded SQL update (`remaining = remaining ± value`),
 * so concurrent calls — and concurrent verifications spending credits — are all counted exactly, on any
 * number of nodes. `set` writes the value; `set` with null makes the key unlimited.
 *
 * Refused with 400, changing nothing: increment/decrement of an unlimited key (use `set`); a decrement
 * larger than what is left (remaining never goes below 0, and a partial decrement is never applied); an
 * increment past MAX_REMAINING; `set` null on a key that has a refill (a refill needs remaining: remove it
 * with keys.updateKey `refill: null`). Unknown, deleted or foreign key → 404; needs `api.<apiId>.update_key`.
 * Returns the remaining credits after the change; audited as `key.update`.
 */
export async function updateRemaining(db: Db, caller: Caller, input: UpdateRemainingInput): Promise<{ remaining: number | null }> {
  const problems = updateRemainingProblems(input);
  if (problems.length) throw invalid(problems);
  const { keyId, op, value } = input;
  return transact(db, async (tx, changes) => {
    const key = await requireKey(tx, caller.workspaceId, keyId);
    requirePermissions(caller, `api.${key.api_id}.update_key`);
    const now = Date.now();
    let from: number | null;
    let to: number | null;
    if (op === 'set') {
      // Takes the key's lock first, so the audit's `from` is the value this call replaced.
      const locked = await tx.updateTable('keys').set({ updated_at: now })
        .where('id', '=', keyId).where('deleted_at', 'is', null).returning(['remaining', 'refill_amount']).executeTakeFirst();
      if (!locked) throw new AppError('data/key-not-found', `key ${keyId} not found`);
      if (value === null && locked.refill_amount !== null) {
        throw invalid([{ path: '/value', message: 'the key has a refill, which requires remaining; remove it first (keys.updateKey refill: null)' }]);
      }
      await tx.updateTable('keys').set({ remaining: value }).where('id', '=', keyId).execute();
      [from, to] = [locked.remaining, value];
    } else {
      const amount = value!;
      const updated = await addCredits(tx, keyId, op === 'increment' ? amount : -amount, now);
      if (updated === undefined) throw await whyNotAdjusted(tx, keyId, op, amount);
      [from, to] = [op === 'increment' ? updated - amount : updated + amount, updated];
    }
    changes.key(keyId);
    await recordAudit(tx, [{
      workspaceId: caller.workspaceId, event: 'key.update', actor: actorOf(caller), target: { type: 'key', id: keyId },
      requestId: caller.requestId, description: `${op} remaining by ${value}`, diff: { remaining: { from, to }, op, value },
    }], now);
    return { remaining: to };
  });
}

/** The error for an increment/decrement the guard refused, from the key's current state. */
async function whyNotAdjusted(db: Executor, keyId: string, op: 'increment' | 'decrement', amount: number): Promise<AppError> {
  const row = await db.selectFrom('keys').select('remaining').where('id', '=', keyId).where('deleted_at', 'is', null).executeTakeFirst();
  if (!row) return new AppError('data/key-not-found', `key ${keyId} not found`);
  if (row.remaining === null) {
    return invalid([{ path: '/op', message: `cannot ${op} a key with unlimited remaining; use op "set" to give it a count` }]);
  }
  return op === 'decrement'
    ? invalid([{ path: '/value', message: `cannot decrement by ${amount}: the key has ${row.remaining} remaining, and remaining never goes below 0` }])
    : invalid([{ path: '/value', message: `cannot increment by ${amount}: remaining would exceed ${MAX_REMAINING}` }]);
}
