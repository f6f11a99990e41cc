import type { EventType } from '../../domain/webhook-events.ts';
import { announceJobs } from '../../jobs/queue.ts';
import type { Capabilities, Db } from '../../store/store.ts';
import { decrementCreditsIfEnough } from '../keys/credits.ts';
import { drainCreditCrossings, refillRecordingEvent, spendRecordingCrossing, type EventKey } from './credit-crossings.ts';
import { emitEvent } from './emit.ts';

export type { EventKey } from './credit-crossings.ts';

/** The endpoints of a workspace that receive each verification event, with their credit thresholds. */
interface Subscriptions {
  loadedAt: number;
  /** The credit thresholds a spend must cross to emit something (crossesAny): each creditsLowBelow, 1 for exhausted. */
  thresholds: number[];
  byType: Map<EventType, string[]>;
}

const VERIFICATION_TYPES: EventType[] = ['key.credits.refilled', 'key.ratelimited', 'ratelimit.exceeded'];
/** How long a workspace's subscriptions are used before they are read again: a new endpoint hears of crossings after at most this. */
export const SUBSCRIPTIONS_TTL_MS = 5_000;
/** Workspaces whose subscriptions are kept, and background tasks waiting, at most. */
const MAX_WORKSPACES = 10_000;
const MAX_QUEUED = 10_000;
/** How often every server looks for crossings left to turn into events (a server killed after a spend's commit leaves them). */
export const CROSSING_DRAIN_MS = 5_000;
/** Rate-limit windows remembered as reported by this server, at most (the store's unique event key decides across servers). */
const MAX_REPORTED = 100_000;

/**
 * Events caused by verifications and ratelimits.limit, recorded only on crossings: a spend that takes a key's
 * credits below an endpoint's `creditsLowBelow` or to 0, a refill, the first denial of a rate-limit window.
 * An ordinary verification costs a lookup in memory here and no extra store access (the workspace's
 * subscriptions are read at most every SUBSCRIPTIONS_TTL_MS).
 *
 * Credit events are durable with their cause: a spend of a key whose workspace receives credit events is
 * spendRecordingCrossing (the crossing commits with the spend, in the spend's one statement on PostgreSQL,
 * whose rows this object drains right after, every CROSSING_DRAIN_MS and at start, for those a killed server
 * left), a refill is refillRecordingEvent (one transaction). Exactly once per crossing: each spend statement
 * reports the thresholds within its own range of credits.
 *
 * Rate-limit events have no committed cause (a denial writes nothing to the store), so they are written in a
 * transaction of their own in the background after the decision (a server killed in between loses that
 * event); a window's first denial may be seen by several servers, and the event's unique key (`dedupe_key`)
 * lets one of them write it.
 */
export class CrossingEvents {
  /** How long a workspace's subscriptions are used before they are read again (SUBSCRIPTIONS_TTL_MS; 0: read on every use). */
  readonly #subscriptionsTtlMs: number;
  readonly #db: Db;
  readonly #caps: Capabilities;
  readonly #subs = new Map<string, Subscriptions>();
  /** Subscriptions being read, so concurrent verifications of a workspace share one read. */
  readonly #loading = new Map<string, Promise<Subscriptions>>();
  readonly #reported = new Map<string, number>();
  readonly #queue: Array<() => Promise<void>> = [];
  #busy = false;
  #drainQueued = false;
  #wake?: () => void;
  readonly #drainTimer: NodeJS.Timeout;
  readonly #onError: (err: unknown) => void;

  constructor(db: Db, caps: Capabilities, onError: (err: unknown) => void = () => {}, subscriptionsTtlMs = SUBSCRIPTIONS_TTL_MS) {
    this.#subscriptionsTtlMs = subscriptionsTtlMs;
    this.#db = db;
    this.#caps = caps;
    this.#onError = onError;
    void this.#loop();
    this.#drain();
    this.#drainTimer = setInterval(() => this.#drain(), CROSSING_DRAIN_MS).unref();
  }

  /**
   * Spends `cost` credits of `key` (the guarded spend: null when refused, else what is left), recording a
   * crossing of the workspace's credit thresholds with it; without such subscriptions, the plain statement.
   */
  async spend(key: EventKey, cost: number, now: number): Promise<number | null> {
    const subs = this.#cached(key.workspaceId) ?? (await this.#fresh(key.workspaceId));
    if (subs.thresholds.length === 0) return decrementCreditsIfEnough(this.#db, key.id, cost);
    const { left, crossed } = await spendRecordingCrossing(this.#db, this.#caps, key, cost, subs.thresholds, now);
    if (crossed === 'emitted') announceJobs();
    else if (crossed === 'pending') this.#drain();
    return left;
  }

  /** Refills `key` to `amount` if due since `due` (once per period), with key.credits.refilled when subscribed. */
  async refill(key: EventKey, amount: number, due: number, now: number): Promise<boolean> {
    const subs = this.#cached(key.workspaceId) ?? (await this.#fresh(key.workspaceId));
    const subscribed = (subs.byType.get('key.credits.refilled')?.length ?? 0) > 0;
    const { refilled, emitted } = await refillRecordingEvent(this.#db, key, amount, due, now, subscribed);
    if (emitted) announceJobs();
    return refilled;
  }

  /** A verification of `key` was denied by its limit `name` in the window ending at `reset`: key.ratelimited, once per window. */
  keyLimitDenied(key: EventKey, name: string, reset: number): void {
    const dedupeKey = `key.ratelimited:${key.id}:${name}:${reset}`;
    if (!this.#firstHere(dedupeKey, reset)) return;
    this.#with(key.workspaceId, (subs) =>
      this.#emit(
        key.workspaceId,
        'key.ratelimited',
        { keyId: key.id, apiId: key.apiId, name, reset },
        subs.byType.get('key.ratelimited'),
        dedupeKey,
      ),
    );
  }

  /** ratelimits.limit denied `identifier` in a namespace in the window ending at `reset`: ratelimit.exceeded, once per window. */
  namespaceDenied(workspaceId: string, namespaceId: string, identifier: string, reset: number): void {
    const dedupeKey = `ratelimit.exceeded:${namespaceId}:${identifier}:${reset}`;
    if (!this.#firstHere(dedupeKey, reset)) return;
    this.#with(workspaceId, (subs) =>
      this.#emit(workspaceId, 'ratelimit.exceeded', { namespaceId, identifier, reset }, subs.byType.get('ratelimit.exceeded'), dedupeKey),
    );
  }

  /** Stops the periodic drain; resolves once every event being written has been (a stopping server). */
  async close(): Promise<void> {
    clearInterval(this.#drainTimer);
    await this.settled();
  }

  /** Resolves once every event being written has been (tests; a stopping server). */
  async settled(): Promise<void> {
    while (this.#queue.length || this.#busy) await new Promise((r) => setTimeout(r, 10));
  }

  /** Whether this server has not reported `dedupeKey` yet (then it is remembered until its window ends). */
  #firstHere(dedupeKey: string, reset: number): boolean {
    if (this.#reported.has(dedupeKey)) return false;
    if (this.#reported.size >= MAX_REPORTED) {
      const now = Date.now();
      for (const [k, end] of this.#reported) if (end < now) this.#reported.delete(k);
      if (this.#reported.size >= MAX_REPORTED) this.#reported.clear();
    }
    this.#reported.set(dedupeKey, reset);
    return true;
  }

  /** Runs `use` with the workspace's subscriptions: at once when they are fresh, else in the background after reading them. */
  #with(workspaceId: string, use: (subs: Subscriptions) => void): void {
    const cached = this.#cached(workspaceId);
    if (cached) use(cached);
    else this.#background(async () => use(await this.#fresh(workspaceId)));
  }

  /** The workspace's subscriptions when read less than SUBSCRIPTIONS_TTL_MS ago. */
  #cached(workspaceId: string): Subscriptions | undefined {
    const cached = this.#subs.get(workspaceId);
    return cached && Date.now() - cached.loadedAt < this.#subscriptionsTtlMs ? cached : undefined;
  }

  #fresh(workspaceId: string): Promise<Subscriptions> {
    const cached = this.#cached(workspaceId);
    if (cached) return Promise.resolve(cached);
    let loading = this.#loading.get(workspaceId);
    if (!loading) {
      loading = this.#load(workspaceId).finally(() => this.#loading.delete(workspaceId));
      this.#loading.set(workspaceId, loading);
    }
    return loading;
  }

  async #load(workspaceId: string): Promise<Subscriptions> {
    const rows = await this.#db
      .selectFrom('webhook_endpoints')
      .select(['id', 'events', 'credits_low_below'])
      .where('workspace_id', '=', workspaceId)
      .where('enabled', '=', 1)
      .execute();
    const thresholds = new Set<number>();
    const subs: Subscriptions = { loadedAt: Date.now(), thresholds: [], byType: new Map() };
    for (const row of rows) {
      const events = JSON.parse(row.events) as EventType[];
      if (events.includes('key.credits.low')) thresholds.add(Number(row.credits_low_below));
      if (events.includes('key.credits.exhausted')) thresholds.add(1);
      for (const type of VERIFICATION_TYPES) if (events.includes(type)) subs.byType.set(type, [...(subs.byType.get(type) ?? []), row.id]);
    }
    subs.thresholds = [...thresholds];
    if (this.#subs.size >= MAX_WORKSPACES) this.#subs.clear();
    this.#subs.set(workspaceId, subs);
    return subs;
  }

  /** Drains the crossings spends recorded (drainCreditCrossings) on this object's loop, once at a time. */
  #drain(): void {
    if (this.#drainQueued) return;
    this.#drainQueued = this.#background(async () => {
      this.#drainQueued = false;
      if ((await drainCreditCrossings(this.#db, this.#caps)).emitted) announceJobs();
    });
  }

  #emit(workspaceId: string, type: EventType, data: Record<string, unknown>, endpointIds: string[] | undefined, dedupeKey?: string): void {
    if (!endpointIds?.length) return;
    this.#background(async () => {
      const id = await this.#db.transaction().execute(async (tx) => {
        // Those still there and enabled: the subscriptions may be up to SUBSCRIPTIONS_TTL_MS old.
        const live = await tx
          .selectFrom('webhook_endpoints')
          .select('id')
          .where('id', 'in', endpointIds)
          .where('enabled', '=', 1)
          .execute();
        return live.length ? emitEvent(tx, workspaceId, type, data, { endpointIds: live.map((e) => e.id), dedupeKey }) : undefined;
      });
      if (id) announceJobs();
    });
  }

  /**
   * Runs `task` on this object's own loop, after the tasks before it: its reads and writes belong to no
   * request (the loop was started with the object, and a promise continues in the context it was awaited in).
   */
  #background(task: () => Promise<void>): boolean {
    if (this.#queue.length >= MAX_QUEUED) return false; // a store that does not answer: rate-limit events beyond this are not reported
    this.#queue.push(task);
    this.#wake?.();
    return true;
  }

  async #loop(): Promise<void> {
    for (;;) {
      const task = this.#queue.shift();
      if (!task) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
        continue;
      }
      this.#busy = true;
      try {
        await task();
      } catch (err) {
        this.#onError(err);
      } finally {
        this.#busy = false;
      }
    }
  }
}
