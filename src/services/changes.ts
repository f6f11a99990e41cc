import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { PostgresAdapter, sql } from 'kysely';
import { newId } from '../domain/ids.ts';
import type { Db, Tx } from '../store/store.ts';
import { NOTIFY_CHANNEL } from '../store/dialects/postgres-notifications.ts';
import { announceJobs } from '../jobs/queue.ts';

/**
 * What a committed change makes stale in caches: one key, every key of an API, of an identity, or of a
 * workspace (role/permission definitions: changes that reach many keys at once), a rate-limit namespace
 * with its overrides, keys added to a workspace by an import, or one root key (revoked, its permissions
 * changed).
 *
 * Adding a kind: name it here and add a method to ChangeSet; the type checker then asks every cache what the
 * new kind makes stale (KeyCache's STALE table). The runtime (verification/runtime.ts) hands every change —
 * from this process, the change feed and Redis — to every cache in its CACHES list, so a new cache only has
 * to be listed there.
 */
export type ChangeKind = 'key' | 'api' | 'identity' | 'workspace' | 'namespace' | 'keys-added' | 'root-key';
export interface Change {
  kind: ChangeKind;
  id: string;
}

/** What a cache of store state implements to stay correct: drop what these committed changes make stale. */
export interface ChangeListener {
  invalidate(changes: readonly Change[]): void;
}

/** Changes collected while a transaction runs; written to the change feed in that same transaction. */
export class ChangeSet {
  readonly items: Change[] = [];
  /** Jobs were enqueued in the transaction (webhook deliveries): this process' workers are woken once it commits. */
  jobsEnqueued = false;
  key(id: string): this {
    return this.#add('key', id);
  }
  api(id: string): this {
    return this.#add('api', id);
  }
  identity(id: string): this {
    return this.#add('identity', id);
  }
  workspace(id: string): this {
    return this.#add('workspace', id);
  }
  /** A rate-limit namespace: itself or its overrides. */
  namespace(id: string): this {
    return this.#add('namespace', id);
  }
  /**
   * Keys were added to the workspace with hashes chosen outside Keyhold (imports): a node that was asked for
   * one of them before it existed must forget that it was unknown. (keys.createKey needs none: its keys are
   * new random secrets nobody can have sent before.)
   */
  keysAdded(workspaceId: string): this {
    return this.#add('keys-added', workspaceId);
  }
  /** A root key: revoked, or its permissions changed (the root-key cache of every node drops it). */
  rootKey(id: string): this {
    return this.#add('root-key', id);
  }
  #add(kind: ChangeKind, id: string): this {
    this.items.push({ kind, id });
    return this;
  }
}

/**
 * Process-wide: emits `committed` with Change[] after a transaction that recorded changes has committed.
 * The verification cache of every app in this process listens, so a change is visible at once on the
 * node that made it; the change feed (and Redis, when configured) carries it to the other nodes.
 */
export const changeBus = new EventEmitter();
changeBus.setMaxListeners(0);

/**
 * Runs `fn` in one transaction. Changes it records are written to `change_feed` inside that transaction
 * (so no committed change can be missed by other nodes) and announced on `changeBus` after the commit
 * (so this node never re-caches the state from before it).
 */
export async function transact<T>(db: Db, fn: (tx: Tx, changes: ChangeSet) => Promise<T>): Promise<T> {
  const changes = new ChangeSet();
  const result = await db.transaction().execute(async (tx) => {
    const value = await fn(tx, changes);
    await writeChangeFeed(tx, changes.items);
    return value;
  });
  if (changes.items.length) announce(changes.items);
  if (changes.jobsEnqueued) announceJobs();
  return result;
}

/**
 * Writes changes to the change feed inside `tx`, the transaction that makes them. Every node (this one
 * included) hears of them within its poll interval once `tx` commits; `transact` also announces them here at
 * once. On PostgreSQL they are also sent with NOTIFY in `tx` (delivered only if it commits), so other nodes
 * hear of them in milliseconds. For writes whose transaction is not `transact`'s (a job's).
 */
export async function writeChangeFeed(tx: Tx, items: readonly Change[]): Promise<void> {
  if (items.length === 0) return;
  const now = Date.now();
  await tx
    .insertInto('change_feed')
    .values(items.map((c) => ({ id: newId('chg'), kind: c.kind, ref: c.id, created_at: now })))
    .execute();
  if (tx.getExecutor().adapter instanceof PostgresAdapter) {
    // The schema first: every Keyhold schema of the database shares the channel (see listenForNotifications).
    await sql`select pg_notify(${NOTIFY_CHANNEL}, current_schema() || ' ' || ${notificationPayload(items)})`.execute(tx);
  }
}

/** This process, in its notifications: it skips its own (announced here at once already). */
export const PROCESS_ORIGIN = randomUUID();
/** NOTIFY payloads are limited to 8000 bytes: a larger set of changes is sent as "read the feed now". */
const MAX_PAYLOAD = 7000;

/** A notification's payload: `{o: origin, c: [[kind, id], …]}`, or `c: null` when the changes do not fit. */
export function notificationPayload(items: readonly Change[]): string {
  const full = JSON.stringify({ o: PROCESS_ORIGIN, c: items.map((c) => [c.kind, c.id]) });
  return Buffer.byteLength(full) <= MAX_PAYLOAD ? full : JSON.stringify({ o: PROCESS_ORIGIN, c: null });
}

/**
 * The changes a notification carries: undefined when it is this process' own or not Keyhold's, `'poll'` when
 * they did not fit (the listener reads the change feed now).
 */
export function changesOfNotification(payload: string): Change[] | 'poll' | undefined {
  try {
    const { o, c } = JSON.parse(payload) as { o: string; c: Array<[ChangeKind, string]> | null };
    if (o === PROCESS_ORIGIN) return undefined;
    return c === null ? 'poll' : c.map(([kind, id]) => ({ kind, id }));
  } catch {
    return undefined;
  }
}

/**
 * Hands committed changes to every `committed` listener. The transaction has committed: a listener that
 * throws must neither fail the request that made the change (its caller would be told it failed) nor keep
 * the listeners after it from hearing of it. What it missed still reaches it through the change feed, which
 * every node polls, its own changes included.
 */
function announce(items: Change[]): void {
  for (const listener of changeBus.rawListeners('committed')) {
    try {
      (listener as (changes: Change[]) => void)(items);
    } catch {
      /* the change feed carries the change */
    }
  }
}
