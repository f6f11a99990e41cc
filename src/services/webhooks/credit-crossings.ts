import { sql } from 'kysely';
import { newId } from '../../domain/ids.ts';
import type { Capabilities, Db, Executor } from '../../store/store.ts';
import { decrementCreditsIfEnough, refillIfDue } from '../keys/credits.ts';
import { emitEvent } from './emit.ts';

/** A verified key, as the events of its verifications name it. */
export interface EventKey {
  id: string;
  workspaceId: string;
  apiId: string;
}

/** One spend statement's effect on a key's credits: from `before` to `after` (a coalesced spend of several verifications is one). */
export interface CreditSpend {
  key: EventKey;
  before: number;
  after: number;
}

/**
 * Whether a spend from `before` to `after` crossed one of `thresholds`: `before ≥ t > after`. A
 * key.credits.low threshold is an endpoint's `creditsLowBelow`; key.credits.exhausted is the threshold 1
 * (credits are never negative, so `after < 1` is `after = 0`).
 */
export const crossesAny = (before: number, after: number, thresholds: readonly number[]): boolean =>
  thresholds.some((t) => before >= t && after < t);

/**
 * Writes the events of a spend's crossing with `tx`: key.credits.low once for each distinct `creditsLowBelow`
 * of the enabled endpoints receiving it that the spend crossed (to those endpoints), key.credits.exhausted when
 * it reached 0. The endpoints are those enabled now (the caller's thresholds may be up to
 * SUBSCRIPTIONS_TTL_MS old). Returns whether an event was written.
 */
export async function emitCreditCrossing(tx: Executor, spend: CreditSpend, now: number): Promise<boolean> {
  const { key, before, after } = spend;
  const rows = await tx
    .selectFrom('webhook_endpoints')
    .select(['id', 'events', 'credits_low_below'])
    .where('workspace_id', '=', key.workspaceId)
    .where('enabled', '=', 1)
    .execute();
  const low = new Map<number, string[]>();
  const exhausted: string[] = [];
  for (const row of rows) {
    const events = JSON.parse(row.events) as string[];
    const below = Number(row.credits_low_below);
    if (events.includes('key.credits.low') && crossesAny(before, after, [below])) low.set(below, [...(low.get(below) ?? []), row.id]);
    if (events.includes('key.credits.exhausted') && crossesAny(before, after, [1])) exhausted.push(row.id);
  }
  let emitted = false;
  for (const [threshold, endpointIds] of [...low].sort((a, b) => b[0] - a[0])) {
    const data = { keyId: key.id, apiId: key.apiId, remaining: after, threshold };
    emitted = (await emitEvent(tx, key.workspaceId, 'key.credits.low', data, { endpointIds, now })) !== undefined || emitted;
  }
  if (exhausted.length) {
    const data = { keyId: key.id, apiId: key.apiId };
    emitted =
      (await emitEvent(tx, key.workspaceId, 'key.credits.exhausted', data, { endpointIds: exhausted, now })) !== undefined || emitted;
  }
  return emitted;
}

/**
 * Spends `cost` credits of `key` (the guard of decrementCreditsIfEnough) so that a crossing of `thresholds`
 * commits with the spend, and an ordinary spend costs what it costs without webhooks:
 *
 * - PostgreSQL (`writableCtes`): ONE statement, `WITH spent AS (UPDATE … RETURNING remaining) INSERT INTO
 *   webhook_credit_crossings SELECT … FROM spent WHERE <a threshold was crossed>`, whose insert writes a row
 *   only on a crossing; drainCreditCrossings turns the row into events. A transaction spending and emitting
 *   would cost two more round trips (BEGIN, COMMIT) on every verification of the workspace's keys.
 * - SQLite: a transaction (a savepoint of the group commit, in-process, so no round trip) that spends and,
 *   on a crossing, writes the events at once.
 *
 * Each statement reports the crossings of its own range [after, before), so a coalesced spend of several
 * verifications reports each threshold once, and spends on other servers (other ranges) never again.
 * Returns what is left (null: refused) and whether a crossing was recorded (`pending`: as a row to drain).
 */
export async function spendRecordingCrossing(
  db: Db,
  caps: Capabilities,
  key: EventKey,
  cost: number,
  thresholds: readonly number[],
  now: number,
): Promise<{ left: number | null; crossed: 'none' | 'emitted' | 'pending' }> {
  if (caps.writableCtes) {
    const { rows } = await sql<{ remaining: number }>`with spent as (
        update keys set remaining = remaining - ${cost} where id = ${key.id} and remaining >= ${cost} returning remaining
      ), crossing as (
        insert into webhook_credit_crossings (id, workspace_id, key_id, api_id, remaining_before, remaining_after, created_at)
        select ${newId('wcc')}, ${key.workspaceId}, ${key.id}, ${key.apiId}, remaining + ${cost}, remaining, ${now} from spent
        where exists (select 1 from unnest(${[...thresholds]}::bigint[]) as t(b) where remaining < t.b and remaining + ${cost} >= t.b)
      )
      select remaining from spent`.execute(db);
    const left = rows.length ? Number(rows[0].remaining) : null;
    return { left, crossed: left !== null && crossesAny(left + cost, left, thresholds) ? 'pending' : 'none' };
  }
  return db.transaction().execute(async (tx) => {
    const left = await decrementCreditsIfEnough(tx, key.id, cost, db);
    if (left === null || !crossesAny(left + cost, left, thresholds)) return { left, crossed: 'none' as const };
    const emitted = await emitCreditCrossing(tx, { key, before: left + cost, after: left }, now);
    return { left, crossed: emitted ? ('emitted' as const) : ('none' as const) };
  });
}

/** Crossings turned into events per transaction of drainCreditCrossings. */
const DRAIN_BATCH = 100;

/**
 * Turns the crossings spends recorded (webhook_credit_crossings) into their events and deletes them, in one
 * transaction per DRAIN_BATCH rows, oldest first; rows another server is draining are skipped
 * (`FOR UPDATE SKIP LOCKED`; SQLite has one writer). Returns how many rows it turned into events.
 */
export async function drainCreditCrossings(db: Db, caps: Capabilities): Promise<{ drained: number; emitted: boolean }> {
  let drained = 0;
  let emitted = false;
  for (;;) {
    // A read first: nothing to do is the usual case, and costs no transaction (no write lock on SQLite).
    const any = await db.selectFrom('webhook_credit_crossings').select('id').limit(1).executeTakeFirst();
    if (!any) break;
    const batch = await db.transaction().execute(async (tx) => {
      const rows = await tx
        .selectFrom('webhook_credit_crossings')
        .selectAll()
        .orderBy('created_at')
        .limit(DRAIN_BATCH)
        .$if(caps.skipLocked, (q) => q.forUpdate().skipLocked())
        .execute();
      let wrote = false;
      for (const r of rows) {
        const key = { id: r.key_id, workspaceId: r.workspace_id, apiId: r.api_id };
        const spend = { key, before: Number(r.remaining_before), after: Number(r.remaining_after) };
        wrote = (await emitCreditCrossing(tx, spend, Number(r.created_at))) || wrote;
      }
      if (rows.length)
        await tx
          .deleteFrom('webhook_credit_crossings')
          .where(
            'id',
            'in',
            rows.map((r) => r.id),
          )
          .execute();
      return { n: rows.length, wrote };
    });
    drained += batch.n;
    emitted ||= batch.wrote;
    if (batch.n < DRAIN_BATCH) break;
  }
  return { drained, emitted };
}

/**
 * Refills `key` to `amount` if its refill since `due` has not happened (refillIfDue), with its
 * key.credits.refilled event in the same transaction when `subscribed`: a refill happens once per period,
 * so its transaction costs nothing that matters. Returns whether it refilled and whether an event was written.
 */
export async function refillRecordingEvent(
  db: Db,
  key: EventKey,
  amount: number,
  due: number,
  now: number,
  subscribed: boolean,
): Promise<{ refilled: boolean; emitted: boolean }> {
  if (!subscribed) return { refilled: await refillIfDue(db, key.id, amount, due, now), emitted: false };
  return db.transaction().execute(async (tx) => {
    if (!(await refillIfDue(tx, key.id, amount, due, now))) return { refilled: false, emitted: false };
    const data = { keyId: key.id, apiId: key.apiId, remaining: amount };
    return { refilled: true, emitted: (await emitEvent(tx, key.workspaceId, 'key.credits.refilled', data, { now })) !== undefined };
  });
}
