import { lastRefillDue } from '../../domain/refill.ts';
import type { CompiledQuery, ExpressionBuilder } from 'kysely';
import type { Db, Executor } from '../../store/store.ts';
import { announceJobs } from '../../jobs/queue.ts';
import { emitEvents } from '../webhooks/emit.ts';
import type { Database } from '../../store/schema.ts';

/** The largest credit count a key can hold. */
export const MAX_REMAINING = Number.MAX_SAFE_INTEGER;

/**
 * Spends `cost` credits of a key if it has at least that many: one guarded
 * `UPDATE … SET remaining = remaining - cost WHERE remaining >= cost RETURNING remaining`. The row lock
 * (PostgreSQL) or the write lock (SQLite) makes it exact under any concurrency and any number of processes:
 * N calls on R credits succeed exactly min(N, R) times (for cost 1). Returns what is left, or null when refused.
 */
export async function decrementCreditsIfEnough(
  db: Executor,
  keyId: string,
  cost: number,
  compiledBy: Executor = db,
): Promise<number | null> {
  const { rows } = await db.executeQuery<{ remaining: number }>({ ...decrementQuery(compiledBy), parameters: [cost, keyId, cost] });
  return rows.length ? rows[0].remaining : null;
}

/**
 * decrementCreditsIfEnough's statement, compiled once per database (or transaction; a caller running it in a
 * transaction of that database may pass the database as `compiledBy`): every verification of a key with
 * credits runs it, so building the same query each time is work for nothing. Its parameters
 * are cost, key id, cost.
 */
const decrementQueries = new WeakMap<Executor, CompiledQuery<{ remaining: number }>>();

function decrementQuery(db: Executor): CompiledQuery<{ remaining: number }> {
  let compiled = decrementQueries.get(db);
  if (!compiled) {
    compiled = db
      .updateTable('keys')
      .set((eb) => ({ remaining: eb('remaining', '-', -1) }))
      .where('id', '=', '')
      .where('remaining', '>=', -1)
      .returning('remaining')
      .compile();
    const [cost, id, guard] = compiled.parameters;
    if (compiled.parameters.length !== 3 || cost !== -1 || id !== '' || guard !== -1)
      throw new Error('decrementCreditsIfEnough: unexpected parameters in its compiled query');
    decrementQueries.set(db, compiled);
  }
  return compiled;
}

/** The credits a key has now (null: unlimited, or no such key). */
export async function currentRemaining(db: Executor, keyId: string): Promise<number | null> {
  const row = await db.selectFrom('keys').select('remaining').where('id', '=', keyId).executeTakeFirst();
  return row?.remaining ?? null;
}

/** The guard that makes a refill happen once per period: no refill since the period's due time. */
const notRefilledSince = (due: number) => (eb: ExpressionBuilder<Database, 'keys'>) =>
  eb.or([eb('last_refill_at', 'is', null), eb('last_refill_at', '<', due)]);

/**
 * Sets remaining to `amount` if no refill happened since `due`: exactly once per period, whichever node
 * or sweep gets there first (the others' guarded update matches no row). Returns whether it refilled.
 */
export async function refillIfDue(db: Executor, keyId: string, amount: number, due: number, now: number): Promise<boolean> {
  const res = await db
    .updateTable('keys')
    .set({ remaining: amount, last_refill_at: now })
    .where('id', '=', keyId)
    .where('refill_amount', 'is not', null)
    .where(notRefilledSince(due))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/**
 * Refills every key whose refill is due (the sweep behind getKey/listKeys showing refilled credits even
 * before a verification touches the key). Same guard as refillIfDue, so sweeps on several nodes and
 * verifications never refill a key twice in one period. The keys of workspaces with an endpoint receiving
 * key.credits.refilled are refilled in a transaction with their events (one per key); the others by one
 * plain statement per schedule. Returns how many keys were refilled.
 */
export async function refillDueKeys(db: Db, now: number): Promise<number> {
  const schedules: Array<{ interval: 'daily' | 'monthly'; refillDay: number | null }> = [
    { interval: 'daily', refillDay: null },
    ...Array.from({ length: 31 }, (_, i) => ({ interval: 'monthly' as const, refillDay: i + 1 })),
  ];
  // `events` is a JSON array of type names: the quoted name matches exactly that element.
  const subscribed = db
    .selectFrom('webhook_endpoints')
    .select('workspace_id')
    .where('enabled', '=', 1)
    .where('events', 'like', '%"key.credits.refilled"%');
  const anySubscribed = (await subscribed.limit(1).executeTakeFirst()) !== undefined;
  let refilled = 0;
  let emitted = false;
  for (const s of schedules) {
    const due = lastRefillDue(s, now);
    const dueKeys = (tx: Executor) => {
      let q = tx
        .updateTable('keys')
        .set((eb) => ({ remaining: eb.ref('refill_amount'), last_refill_at: now }))
        .where('refill_interval', '=', s.interval)
        .where('refill_amount', 'is not', null)
        .where('deleted_at', 'is', null)
        .where(notRefilledSince(due));
      if (s.refillDay !== null) q = q.where('refill_day', '=', s.refillDay);
      return q;
    };
    if (!anySubscribed) {
      refilled += Number((await dueKeys(db).executeTakeFirst()).numUpdatedRows);
      continue;
    }
    const withEvents = await db.transaction().execute(async (tx) => {
      const rows = await dueKeys(tx)
        .where('workspace_id', 'in', subscribed)
        .returning(['id', 'workspace_id', 'api_id', 'remaining'])
        .execute();
      const byWorkspace = Map.groupBy(rows, (r) => r.workspace_id);
      for (const [workspaceId, keys] of byWorkspace) {
        const datas = keys.map((k) => ({ keyId: k.id, apiId: k.api_id, remaining: k.remaining }));
        emitted = (await emitEvents(tx, workspaceId, 'key.credits.refilled', datas, { now })) > 0 || emitted;
      }
      return rows.length;
    });
    refilled += withEvents + Number((await dueKeys(db).where('workspace_id', 'not in', subscribed).executeTakeFirst()).numUpdatedRows);
  }
  if (emitted) announceJobs();
  return refilled;
}

/**
 * Adds `delta` credits (negative: takes them) to a live key that has a credit count, if the result stays
 * within 0..MAX_REMAINING: one guarded `UPDATE … SET remaining = remaining + delta WHERE … RETURNING remaining`.
 * Exact under any concurrency (the row lock on PostgreSQL, the write lock on SQLite). Returns the new count,
 * or undefined when the guard refused (nothing changed).
 */
export async function addCredits(db: Executor, keyId: string, delta: number, now: number): Promise<number | undefined> {
  let q = db
    .updateTable('keys')
    .set((eb) => ({ remaining: eb('remaining', '+', delta), updated_at: now }))
    .where('id', '=', keyId)
    .where('deleted_at', 'is', null)
    .where('remaining', 'is not', null);
  q = delta < 0 ? q.where('remaining', '>=', -delta) : q.where('remaining', '<=', MAX_REMAINING - delta);
  const row = await q.returning('remaining').executeTakeFirst();
  return row ? row.remaining! : undefined;
}
