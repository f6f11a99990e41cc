import type { Change, ChangeKind, ChangeListener } from '../changes.ts';
import type { KeyRecord } from './key-record.ts';

/** Which cached records a change of each kind makes stale (a `key` change is found through its id at once). */
const STALE: Record<Exclude<ChangeKind, 'key'>, (record: KeyRecord, id: string) => boolean> = {
  api: (record, id) => record.apiId === id,
  identity: (record, id) => record.identity?.id === id,
  workspace: (record, id) => record.workspaceId === id,
  namespace: () => false, // keys do not depend on rate-limit namespaces
};

/** What the cache did since it was made (plain counters, read by /metrics). */
export interface KeyCacheStats {
  /** `get` calls that found a live entry. */
  hits: number;
  /** `get` calls that found none (absent or expired). */
  misses: number;
  /** Entries dropped by `set` to stay within `maxEntries`. */
  evictions: number;
}

/**
 * Verified keys by hash, in memory. A hit costs no store read. Entries are dropped by changes (see
 * services/changes.ts) as soon as this node learns of them, and expire after `ttlMs` as a safety net.
 * A load that raced with an invalidation is not cached (the `generation` check), so a change can never be
 * overwritten by the state from before it.
 */
export class KeyCache implements ChangeListener {
  readonly #entries = new Map<string, { record: KeyRecord; expiresAt: number }>();
  readonly #hashById = new Map<string, string>();
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  #generation = 0;
  readonly stats: KeyCacheStats = { hits: 0, misses: 0, evictions: 0 };

  constructor(opts: { maxEntries?: number; ttlMs?: number } = {}) {
    this.#maxEntries = opts.maxEntries ?? 100_000;
    this.#ttlMs = opts.ttlMs ?? 60_000;
  }

  /** Changes with every invalidation; pass the value read before a load to `set`. */
  get generation(): number {
    return this.#generation;
  }
  get size(): number {
    return this.#entries.size;
  }

  get(hash: string, now = Date.now()): KeyRecord | undefined {
    const entry = this.#entries.get(hash);
    if (!entry) {
      this.stats.misses++;
      return undefined;
    }
    if (entry.expiresAt <= now) {
      this.#delete(hash);
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    return entry.record;
  }

  /** Caches a record loaded when `generation` was current; ignored if anything was invalidated since. */
  set(record: KeyRecord, generation: number, now = Date.now()): void {
    if (generation !== this.#generation) return;
    if (this.#entries.size >= this.#maxEntries) {
      this.#delete(this.#entries.keys().next().value!);
      this.stats.evictions++;
    }
    this.#entries.set(record.hash, { record, expiresAt: now + this.#ttlMs });
    this.#hashById.set(record.id, record.hash);
  }

  invalidate(changes: readonly Change[]): void {
    this.#generation++;
    for (const c of changes) {
      if (c.kind === 'key') {
        const hash = this.#hashById.get(c.id);
        if (hash) this.#delete(hash);
        continue;
      }
      const stale = STALE[c.kind];
      for (const [hash, { record }] of this.#entries) if (stale(record, c.id)) this.#delete(hash);
    }
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#hashById.clear();
  }

  #delete(hash: string): void {
    const entry = this.#entries.get(hash);
    if (!entry) return;
    this.#entries.delete(hash);
    this.#hashById.delete(entry.record.id);
  }
}
