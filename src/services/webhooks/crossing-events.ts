import type { EventType } from '../../domain/webhook-events.ts';
import { announceJobs } from '../../jobs/queue.ts';
import type { Db } from '../../store/store.ts';
import { emitEvent } from './emit.ts';

/** A verified key, as the events of its verifications name it. */
export interface EventKey {
  id: string;
  workspaceId: string;
  apiId: string;
}

/** The endpoints of a workspace that receive each verification event, with their credit thresholds. */
interface Subscriptions {
  loadedAt: number;
  low: Array<{ endpointId: string; below: number }>;
  byType: Map<EventType, string[]>;
}

const VERIFICATION_TYPES: EventType[] = ['key.credits.exhausted', 'key.credits.refilled', 'key.ratelimited', 'ratelimit.exceeded'];
/** How long a workspace's subscriptions are used before they are read again: a new endpoint hears of crossings after at most this. */
export const SUBSCRIPTIONS_TTL_MS = 5_000;
/** Workspaces whose subscriptions are kept, and background tasks waiting, at most. */
const MAX_WORKSPACES = 10_000;
const MAX_QUEUED = 10_000;
/** Rate-limit windows remembered as reported by this server, at most (the store's unique event key decides across servers). */
const MAX_REPORTED = 100_000;

/**
 * Events caused by verifications and ratelimits.limit, recorded only on crossings: a spend that takes a key's
 * credits below an endpoint's `creditsLowBelow` or to 0, a refill, the first denial of a rate-limit window.
 * An ordinary verification costs a lookup in memory here and no store access (the workspace's subscriptions
 * are read at most every SUBSCRIPTIONS_TTL_MS). Exactly once per crossing: a credit crossing is seen by the one
 * guarded spend statement that made it (on any server); a window's first denial may be seen by several
 * servers, and the event's unique key (`dedupe_key`) lets one of them write it. The event is written in a
 * transaction of its own right after the verification's statement (a server killed between the two loses it).
 */
export class CrossingEvents {
  readonly #db: Db;
  readonly #subs = new Map<string, Subscriptions>();
  readonly #reported = new Map<string, number>();
  readonly #queue: Array<() => Promise<void>> = [];
  #busy = false;
  #wake?: () => void;
  readonly #onError: (err: unknown) => void;

  constructor(db: Db, onError: (err: unknown) => void = () => {}) {
    this.#db = db;
    this.#onError = onError;
    void this.#loop();
  }

  /** A spend of `cost` credits of `key` left `after`: key.credits.low for each threshold crossed, key.credits.exhausted at 0. */
  creditsSpent(key: EventKey, cost: number, after: number): void {
    const before = after + cost;
    this.#with(key.workspaceId, (subs) => {
      const crossed = subs.low.filter((l) => before >= l.below && after < l.below);
      for (const below of new Set(crossed.map((l) => l.below))) {
        const endpointIds = crossed.filter((l) => l.below === below).map((l) => l.endpointId);
        this.#emit(
          key.workspaceId,
          'key.credits.low',
          { keyId: key.id, apiId: key.apiId, remaining: after, threshold: below },
          endpointIds,
        );
      }
      if (after === 0 && before > 0)
        this.#emit(key.workspaceId, 'key.credits.exhausted', { keyId: key.id, apiId: key.apiId }, subs.byType.get('key.credits.exhausted'));
    });
  }

  /** A verification refilled `key` to `remaining` (the guarded refill: once per period). */
  creditsRefilled(key: EventKey, remaining: number): void {
    this.#with(key.workspaceId, (subs) =>
      this.#emit(
        key.workspaceId,
        'key.credits.refilled',
        { keyId: key.id, apiId: key.apiId, remaining },
        subs.byType.get('key.credits.refilled'),
      ),
    );
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
    const cached = this.#subs.get(workspaceId);
    if (cached && Date.now() - cached.loadedAt < SUBSCRIPTIONS_TTL_MS) use(cached);
    else this.#background(async () => use(await this.#fresh(workspaceId)));
  }

  async #fresh(workspaceId: string): Promise<Subscriptions> {
    const cached = this.#subs.get(workspaceId);
    return cached && Date.now() - cached.loadedAt < SUBSCRIPTIONS_TTL_MS ? cached : this.#load(workspaceId);
  }

  async #load(workspaceId: string): Promise<Subscriptions> {
    const rows = await this.#db
      .selectFrom('webhook_endpoints')
      .select(['id', 'events', 'credits_low_below'])
      .where('workspace_id', '=', workspaceId)
      .where('enabled', '=', 1)
      .execute();
    const subs: Subscriptions = { loadedAt: Date.now(), low: [], byType: new Map() };
    for (const row of rows) {
      const events = JSON.parse(row.events) as EventType[];
      if (events.includes('key.credits.low')) subs.low.push({ endpointId: row.id, below: Number(row.credits_low_below) });
      for (const type of VERIFICATION_TYPES) if (events.includes(type)) subs.byType.set(type, [...(subs.byType.get(type) ?? []), row.id]);
    }
    if (this.#subs.size >= MAX_WORKSPACES) this.#subs.clear();
    this.#subs.set(workspaceId, subs);
    return subs;
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
  #background(task: () => Promise<void>): void {
    if (this.#queue.length >= MAX_QUEUED) return; // a store that does not answer: crossings beyond this are not reported
    this.#queue.push(task);
    this.#wake?.();
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
