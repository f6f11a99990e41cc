import type { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import type { Db, Store } from '../../store/store.ts';
import type { Notifications } from '../../store/dialects/postgres-notifications.ts';
import { changeBus, changesOfNotification, type Change, type ChangeListener } from '../changes.ts';

type OnChanges = (changes: Change[]) => void;

/** Rows read per query, and queries per poll (a poll that hits the cap goes on from `since` next tick). */
const PAGE_SIZE = 5000;
const MAX_PAGES_PER_POLL = 100;

/**
 * Polls the store's change feed, so a change committed by any process sharing the store (another server,
 * the CLI) reaches this node within one interval. Rows are read with an overlap window, because
 * concurrent transactions can commit out of creation-time order; ids already seen are skipped.
 */
export class ChangeFeedPoller {
  readonly #db: Db;
  readonly #onChanges: OnChanges;
  readonly #intervalMs: number;
  readonly #overlapMs: number;
  readonly #seen = new Map<string, number>();
  #since: number;
  #timer?: NodeJS.Timeout;
  #running?: Promise<void>;
  #lastPrune = 0;

  constructor(db: Db, onChanges: OnChanges, opts: { intervalMs?: number; overlapMs?: number } = {}) {
    this.#db = db;
    this.#onChanges = onChanges;
    this.#intervalMs = opts.intervalMs ?? 200;
    this.#overlapMs = opts.overlapMs ?? 5000;
    this.#since = Date.now();
  }

  start(): void {
    const tick = () => {
      this.#running = this.poll()
        .catch(() => {
          /* store unavailable: try again next tick */
        })
        .finally(() => {
          if (this.#timer) this.#timer = setTimeout(tick, this.#intervalMs).unref();
        });
    };
    this.#timer = setTimeout(tick, this.#intervalMs).unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /**
   * One poll: hands new changes to the listener; prunes feed rows older than an hour once a minute.
   * The window is read in pages (keyset on created_at, id) to its end: reading only its first page would
   * stall the feed for good once the overlap window holds more rows than a page (a burst of changes),
   * because `since` would never move past that page and later changes would never be read.
   */
  async poll(now = Date.now()): Promise<void> {
    const from = this.#since - this.#overlapMs;
    let after: { createdAt: number; id: string } | undefined;
    for (let page = 0; page < MAX_PAGES_PER_POLL; page++) {
      let q = this.#db.selectFrom('change_feed').select(['id', 'kind', 'ref', 'created_at']).where('created_at', '>=', from);
      if (after) {
        const { createdAt, id } = after;
        q = q.where((eb) => eb.or([eb('created_at', '>', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '>', id)])]));
      }
      const rows = await q.orderBy('created_at').orderBy('id').limit(PAGE_SIZE).execute();
      const fresh: Change[] = [];
      for (const r of rows) {
        if (this.#seen.has(r.id)) continue;
        this.#seen.set(r.id, r.created_at);
        fresh.push({ kind: r.kind as Change['kind'], id: r.ref });
        if (r.created_at > this.#since) this.#since = r.created_at;
      }
      if (fresh.length) this.#onChanges(fresh);
      if (rows.length < PAGE_SIZE) break;
      const last = rows[rows.length - 1];
      after = { createdAt: last.created_at, id: last.id };
    }
    for (const [id, at] of this.#seen) if (at < this.#since - 2 * this.#overlapMs) this.#seen.delete(id);
    if (now - this.#lastPrune > 60_000) {
      this.#lastPrune = now;
      await this.#db
        .deleteFrom('change_feed')
        .where('created_at', '<', now - 3_600_000)
        .execute();
    }
  }
}

const CHANNEL = 'keyhold:changes';
/** How long `start()` waits for the subscription; a Redis that is down does not hold up a server's start. */
const SUBSCRIBE_WAIT_MS = 1_000;

/**
 * Carries changes between nodes through Redis pub/sub, in milliseconds rather than a poll interval:
 * publishes what this process commits, and hands what other processes publish to the listener.
 * The change feed stays the guarantee; this is the fast path. While Redis is down nothing is carried (the
 * feed is); its subscriber reconnects by itself and subscribes again when Redis returns.
 */
export class RedisChangeBridge {
  readonly #origin = randomUUID();
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  readonly #publish = (changes: Change[]) => {
    this.#publisher.publish(CHANNEL, JSON.stringify({ origin: this.#origin, changes })).catch(() => {
      /* the feed still carries it */
    });
  };

  constructor(redis: Redis, onChanges: OnChanges) {
    this.#publisher = redis;
    // No command timeout and no retry limit: SUBSCRIBE waits, queued, for Redis to be there.
    this.#subscriber = redis.duplicate({ commandTimeout: undefined, maxRetriesPerRequest: null });
    this.#subscriber.on('error', () => {
      /* the publisher's connection reports Redis' health; this one just reconnects */
    });
    this.#subscriber.on('message', (_channel: string, message: string) => {
      try {
        const { origin, changes } = JSON.parse(message) as { origin: string; changes: Change[] };
        if (origin !== this.#origin) onChanges(changes);
      } catch {
        /* not ours */
      }
    });
  }

  /** Subscribes: resolves once subscribed, or after SUBSCRIBE_WAIT_MS with the subscription still pending (Redis down). */
  async start(): Promise<void> {
    changeBus.on('committed', this.#publish);
    const subscribed = this.#subscriber.subscribe(CHANNEL).catch(() => {
      /* stopped before Redis came back */
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([subscribed, new Promise<void>((resolve) => (timer = setTimeout(resolve, SUBSCRIBE_WAIT_MS)))]);
    clearTimeout(timer);
  }

  async stop(): Promise<void> {
    changeBus.off('committed', this.#publish);
    this.#subscriber.disconnect();
  }
}

/**
 * PostgreSQL: hands the changes other processes commit (the CLI's included) to `onChanges` as their NOTIFY
 * arrives, in milliseconds. Changes too many for one notification, and whatever was sent while the LISTEN
 * connection was away, are read from the change feed at once (`poller`). Undefined on SQLite.
 */
export function listenForChanges(store: Store, onChanges: OnChanges, poller: ChangeFeedPoller): Notifications | undefined {
  const catchUp = () => {
    poller.poll().catch(() => {
      /* store unavailable: the poller's own tick tries again */
    });
  };
  return store.listen?.({
    onPayload(payload) {
      const changes = changesOfNotification(payload);
      if (changes === 'poll') catchUp();
      else if (changes) onChanges(changes);
    },
    onConnected: catchUp,
  });
}

/**
 * Hands every change to every cache in `caches`: this process' commits at once (changeBus), other processes'
 * pushed by PostgreSQL NOTIFY and by Redis pub/sub when `redis` is given, and always through the change feed's
 * poll. Returns the LISTEN connection (PostgreSQL) and what stops it all.
 */
export async function startChangePropagation(
  store: Store,
  redis: Redis | undefined,
  caches: ChangeListener[],
  pollMs?: number,
): Promise<{ notifications?: Notifications; stop(): Promise<void> }> {
  const invalidate = (changes: Change[]) => {
    for (const c of caches) c.invalidate(changes);
  };
  changeBus.on('committed', invalidate);
  const poller = new ChangeFeedPoller(store.db, invalidate, { intervalMs: pollMs });
  poller.start();
  const notifications = listenForChanges(store, invalidate, poller);
  const bridge = redis ? new RedisChangeBridge(redis, invalidate) : undefined;
  await bridge?.start();
  return {
    notifications,
    async stop() {
      changeBus.off('committed', invalidate);
      await poller.stop();
      await notifications?.stop();
      await bridge?.stop();
    },
  };
}
