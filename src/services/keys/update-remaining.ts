import { type AppError, invalid, notFound, type FieldProblem } from '../../domain/errors.ts';
import { isObject } from '../../domain/json.ts';
import type { Db, Executor } from '../../store/store.ts';
import { recordAudit, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { requireKey } from '../lookups.ts';
import { addCredits, MAX_REMAINING } from './credits.ts';
import { emitEvent } from '../webhooks/emit.ts';
import { refillColumns } from './key-attributes.ts';

export type RemainingOp = 'increment' | 'decrement' | 'set';
export interface UpdateRemainingInput {
  keyId: string;
  op: RemainingOp;
  value: number | null;
}

/** The cross-field rule of keys.updateRemaining that needs no stored state; safe on a body that failed the schema. */
export function updateRemainingProblems(input: unknown): FieldProblem[] {
  if (!isObject(input)) return [];
  if ((input.op === 'increment' || input.op === 'decrement') && input.value === null) {
    return [{ path: '/value', message: `cannot ${input.op} by null; use op "set" with null to make the key unlimited` }];
  }
  return [];
}

/**
 * How the two versions differ in what they refuse (v1 keys.updateRemaining, v2 keys.updateCredits):
 * `decrement` below 0 is refused (v1) or floors at 0 (v2); `set` null on a key with a refill is refused
 * (v1) or removes the refill with the count (v2: the key becomes unlimited, and a refill needs a count).
 */
export interface CreditRules {
  decrementBelowZero: 'refuse' | 'floor';
  unlimitedWithRefill: 'refuse' | 'clear-refill';
}
export const V1_CREDIT_RULES: CreditRules = { decrementBelowZero: 'refuse', unlimitedWithRefill: 'refuse' };

export interface CreditsAfter {
  /** null: unlimited. */
  remaining: number | null;
  refill?: { interval: 'daily' | 'monthly'; amount: number; refillDay?: number };
}

/**
 * keys.updateRemaining (v1) and keys.updateCredits (v2). `increment` (and v1's `decrement`) is one guarded SQL
 * update (`remaining = remaining ± value`), so concurrent calls — and concurrent verifications spending
 * credits — are all counted exactly, on any number of nodes; `set` and v2's flooring `decrement` write under
 * the key's row lock. `set` with null makes the key unlimited.
 *
 * Refused with 400, changing nothing: increment/decrement of an unlimited key (use `set`); an increment past
 * MAX_REMAINING; and as `rules` say, a decrement larger than what is left and `set` null on a key that has a
 * refill (v1: remove it with keys.updateKey `refill: null`). Unknown, deleted or foreign key → 404; needs
 * `api.<apiId>.update_key`. Returns the credits after the change; audited as `key.update`.
 */
export async function updateRemaining(
  db: Db,
  caller: Caller,
  input: UpdateRemainingInput,
  rules: CreditRules = V1_CREDIT_RULES,
): Promise<CreditsAfter> {
  const problems = updateRemainingProblems(input);
  if (problems.length) throw invalid(problems);
  const { keyId, op, value } = input;
  return transact(db, async (tx, changes) => {
    const key = await requireKey(tx, caller.workspaceId, keyId);
    requirePermissions(caller, `api.${key.api_id}.update_key`);
    const now = Date.now();
    let from: number | null;
    let to: number | null;
    if (op === 'set' || (op === 'decrement' && rules.decrementBelowZero === 'floor')) {
      [from, to] = await writeLocked(tx, keyId, op, value, rules, now);
    } else {
      const amount = value!;
      const updated = await addCredits(tx, keyId, op === 'increment' ? amount : -amount, now);
      if (updated === undefined) throw await whyNotAdjusted(tx, keyId, op, amount);
      [from, to] = [op === 'increment' ? updated - amount : updated + amount, updated];
    }
    changes.key(keyId);
    await recordAudit(
      tx,
      [
        callerAudit(
          caller,
          'key.update',
          { type: 'key', id: keyId },
          { description: `${op} remaining by ${value}`, diff: { remaining: { from, to }, op, value } },
        ),
      ],
      now,
    );
    await emitEvent(tx, caller.workspaceId, 'key.updated', { keyId, apiId: key.api_id, changed: ['remaining'] }, { now, changes });
    return { remaining: to, ...(await refillOf(tx, keyId)) };
  });
}

/**
 * `set`, or a decrement that floors at 0: takes the key's lock first (so the audit's `from` is the value this
 * call replaced and no concurrent change falls between the read and the write), then writes the new count.
 */
async function writeLocked(
  tx: Executor,
  keyId: string,
  op: RemainingOp,
  value: number | null,
  rules: CreditRules,
  now: number,
): Promise<[number | null, number | null]> {
  const locked = await tx
    .updateTable('keys')
    .set({ updated_at: now })
    .where('id', '=', keyId)
    .where('deleted_at', 'is', null)
    .returning(['remaining', 'refill_amount'])
    .executeTakeFirst();
  if (!locked) throw notFound('key', keyId);
  if (op === 'decrement') {
    if (locked.remaining === null) throw await whyNotAdjusted(tx, keyId, op, value!);
    const to = Math.max(0, locked.remaining - value!);
    await tx.updateTable('keys').set({ remaining: to }).where('id', '=', keyId).execute();
    return [locked.remaining, to];
  }
  const dropsRefill = value === null && locked.refill_amount !== null;
  if (dropsRefill && rules.unlimitedWithRefill === 'refuse') {
    throw invalid([
      { path: '/value', message: 'the key has a refill, which requires remaining; remove it first (keys.updateKey refill: null)' },
    ]);
  }
  await tx
    .updateTable('keys')
    .set({ remaining: value, ...(dropsRefill ? refillColumns(null, now) : {}) })
    .where('id', '=', keyId)
    .execute();
  return [locked.remaining, value];
}

/** The key's refill schedule as both versions show it, if it has one. */
async function refillOf(tx: Executor, keyId: string): Promise<Pick<CreditsAfter, 'refill'>> {
  const r = await tx
    .selectFrom('keys')
    .select(['refill_interval', 'refill_amount', 'refill_day'])
    .where('id', '=', keyId)
    .executeTakeFirst();
  if (!r || r.refill_interval === null || r.refill_amount === null) return {};
  const interval = r.refill_interval as 'daily' | 'monthly';
  return { refill: { interval, amount: r.refill_amount, ...(r.refill_day !== null ? { refillDay: r.refill_day } : {}) } };
}

/** The error for an increment/decrement the guard refused, from the key's current state. */
async function whyNotAdjusted(db: Executor, keyId: string, op: 'increment' | 'decrement', amount: number): Promise<AppError> {
  const row = await db.selectFrom('keys').select('remaining').where('id', '=', keyId).where('deleted_at', 'is', null).executeTakeFirst();
  if (!row) return notFound('key', keyId);
  if (row.remaining === null) {
    return invalid([{ path: '/op', message: `cannot ${op} a key with unlimited remaining; use op "set" to give it a count` }]);
  }
  return op === 'decrement'
    ? invalid([
        {
          path: '/value',
          message: `cannot decrement by ${amount}: the key has ${row.remaining} remaining, and remaining never goes below 0`,
        },
      ])
    : invalid([{ path: '/value', message: `cannot increment by ${amount}: remaining would exceed ${MAX_REMAINING}` }]);
}
