import { EventEmitter } from 'node:events';
import { newId } from '../domain/ids.ts';
import type { Db, Tx } from '../store/store.ts';

/**
 * What a committed change makes stale in verification caches: one key, every key of an API, or every key
 * of a workspace (role/permission definitions, identity limits: changes that reach many keys at once).
 */
export interface Change { kind: 'key' | 'api' | 'identity' | 'workspace'; id: string }

/** Changes collected while a transaction runs; written to the change feed in that same transaction. */
export class ChangeSet {
  readonly items: Change[] = [];
  key(id: string): this { this.items.push({ kind: 'key', id }); return this; }
  api(id: string): this { this.items.push({ kind: 'api', id }); return this; }
  identity(id: string): this { this.items.push({ kind: 'identity', id }); return this; }
  workspace(id: string): this { this.items.push({ kind: 'workspace', id }); return this; }
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
    if (changes.items.length) {
      const now = Date.now();
      await tx.insertInto('change_feed')
        .values(changes.items.map((c) => ({ id: newId('chg'), kind: c.kind, ref: c.id, created_at: now })))
        .execute();
    }
    return value;
  });
  if (changes.items.length) changeBus.emit('committed', changes.items);
  return result;
}
