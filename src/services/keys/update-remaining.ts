import { type AppError, invalid, notFound, type FieldProblem } from '../../domain/errors.ts';
import { isObject } from '../../domain/json.ts';
import type { Db, Executor } from '../../store/store.ts';
import { recordAudit, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { requireKey } from '../lookups.ts';
import { addCredits, MAX_REMAINING } from './credits.ts';

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
      const locked = await tx
        .updateTable('keys')
        .set({ updated_at: now })
        .where('id', '=', keyId)
        .where('deleted_at', 'is', null)
        .returning(['remaining', 'refill_amount'])
        .executeTakeFirst();
      if (!locked) throw notFound('key', keyId);
      if (value === null && locked.refill_amount !== null) {
        throw invalid([
          { path: '/value', message: 'the key has a refill, which requires remaining; remove it first (keys.updateKey refill: null)' },
        ]);
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
    return { remaining: to };
  });
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
