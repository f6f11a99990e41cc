import type { Db } from '../../store/store.ts';

/** A root key's `last_used_at` is written at most once per this interval per process (it is shown, not enforced). */
export const LAST_USED_INTERVAL_MS = 60_000;
const MAX_TRACKED = 10_000;

/**
 * Records when root keys authenticate, for the dashboard's "last used": one conditional UPDATE per key and
 * minute in the background (never moving the time back), so authentication keeps one read and no write on
 * the request's path. A failed write is dropped; the next use after it writes again.
 */
export class RootKeyUsage {
  readonly #db: Db;
  readonly #writtenAt = new Map<string, number>();

  constructor(db: Db) {
    this.#db = db;
  }

  used(rootKeyId: string, now: number): void {
    const last = this.#writtenAt.get(rootKeyId);
    if (last !== undefined && now - last < LAST_USED_INTERVAL_MS) return;
    if (this.#writtenAt.size >= MAX_TRACKED) this.#writtenAt.clear();
    this.#writtenAt.set(rootKeyId, now);
    this.#db
      .updateTable('root_keys')
      .set({ last_used_at: now })
      .where('id', '=', rootKeyId)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', now)]))
      .execute()
      .catch(() => this.#writtenAt.delete(rootKeyId));
  }
}
