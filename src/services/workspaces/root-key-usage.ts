import type { Db } from '../../store/store.ts';
import { moveLastUsedForward } from '../../store/last-used.ts';

/** A root key's `last_used_at` is written at most once per this interval per process (it is shown, not enforced). */
export const LAST_USED_INTERVAL_MS = 60_000;
/** Root keys whose last use is held at most, waiting for a write (about 100 bytes each). */
export const ROOT_KEY_USAGE_CAPACITY = 10_000;

/**
 * Records when root keys authenticate, for the dashboard's "last used", in the background: authentication
 * keeps one read and no write on the request's path.
 *
 * A key's use is taken at most once a minute; it waits in memory with the other keys' until the running write
 * ends, then they are written together (one conditional UPDATE per IN_LIST_CHUNK keys, never moving a time
 * back), one write at a time. A write that fails (the store is down or locked) puts its times back, merged
 * with those taken meanwhile, and the next use writes them. At most `capacity` keys are held, those being
 * written included; the use of another key beyond that is dropped and counted (`dropped`).
 */
export class RootKeyUsage {
  readonly #db: Db;
  readonly #capacity: number;
  /** When each key's use was last taken (bounded: cleared when it reaches `capacity`). */
  readonly #takenAt = new Map<string, number>();
  /** Latest use per key, not written yet. */
  #pending = new Map<string, number>();
  /** Keys in the write that runs (0: none runs). */
  #writing = 0;
  /** The write that runs, if one does. */
  #running: Promise<boolean> | undefined;
  #dropped = 0;

  constructor(db: Db, capacity = ROOT_KEY_USAGE_CAPACITY) {
    this.#db = db;
    this.#capacity = capacity;
  }

  /** Uses dropped since this was made, because `capacity` keys were held. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Keys held: waiting for a write, and being written. */
  get held(): number {
    return this.#pending.size + this.#writing;
  }

  used(rootKeyId: string, now: number): void {
    const last = this.#takenAt.get(rootKeyId);
    if (last === undefined || now - last >= LAST_USED_INTERVAL_MS) this.#take(rootKeyId, now);
    if (!this.#running && this.#pending.size > 0) this.#running = this.#write();
  }

  /** Resolves once no write runs and nothing waits (for tests and shutdown); rejects if the last write failed. */
  async flush(): Promise<void> {
    while (this.#running) await this.#running;
    if (this.#pending.size === 0) return;
    this.#running = this.#write();
    if (!(await this.#running)) throw new Error('root-key last use could not be written');
  }

  #take(rootKeyId: string, now: number): void {
    const pending = this.#pending.get(rootKeyId);
    if (pending === undefined && this.held >= this.#capacity) {
      this.#dropped++;
      return;
    }
    if (pending === undefined || pending < now) this.#pending.set(rootKeyId, now);
    if (this.#takenAt.size >= this.#capacity) this.#takenAt.clear();
    this.#takenAt.set(rootKeyId, now);
  }

  /** Writes what is pending; on failure puts it back. Resolves to whether it was written. */
  async #write(): Promise<boolean> {
    const batch = this.#pending;
    this.#pending = new Map();
    this.#writing = batch.size;
    try {
      await moveLastUsedForward(this.#db, 'root_keys', batch);
      return true;
    } catch {
      for (const [id, at] of batch) {
        const later = this.#pending.get(id);
        if (later === undefined || later < at) this.#pending.set(id, at);
      }
      return false;
    } finally {
      this.#writing = 0;
      this.#running = undefined;
    }
  }
}
