import type { Change, ChangeKind, ChangeListener } from '../changes.ts';
import type { RootKeyRow } from './root-keys.ts';

/**
 * What a change of each kind (a `root-key` change is found through its id at once) makes stale here: the
 * cached root keys `rows` matches. A workspace change drops the workspace's root keys (its deletion ends
 * them); nothing else a root key's authentication reads changes with the other kinds.
 */
const STALE: Record<Exclude<ChangeKind, 'root-key'>, ((row: RootKeyRow, id: string) => boolean) | null> = {
  key: null,
  api: null,
  identity: null,
  workspace: (row, id) => row.workspace_id === id,
  namespace: null,
  'keys-added': null,
};

/** What the cache did since it was made (plain counters, read by /metrics and the bench). */
export interface RootKeyCacheStats {
  /** Authentications answered from a live entry: no store read. */
  hits: number;
  /** Authentications that read the store. */
  misses: number;
}

export interface RootKeyCacheOptions {
  /** Root keys kept at most (the oldest cached is dropped first); default 10,000. */
  maxEntries?: number;
  /** How long a root key stays cached without a change dropping it (ms); default 60 s (the safety net). */
  ttlMs?: number;
}

/** A cached root key: its row as authentication reads it, with its permissions parsed once. */
export interface CachedRootKey {
  row: RootKeyRow;
  permissions: ReadonlySet<string>;
}

interface Entry {
  key: CachedRootKey;
  expiresAt: number;
}

/**
 * Found root keys by hash, in memory: a hit costs no store read. What the row says is checked on every use
 * (callerOf): a key cached before its expiry is refused from that millisecond on. Revocation, a permission
 * change (`root-key` changes) and a workspace's deletion drop the entry as soon as this node hears of the
 * change: at once for its own, pushed for other processes' (PostgreSQL NOTIFY, Redis), or at the latest by
 * the change feed's poll. A load that raced with an invalidation is not cached (the `generation` check), so
 * a change is never overwritten by the state from before it. Unknown hashes are not kept here (the guard
 * remembers them briefly).
 */
export class RootKeyCache implements ChangeListener {
  readonly #entries = new Map<string, Entry>();
  readonly #hashById = new Map<string, string>();
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  #generation = 0;
  readonly stats: RootKeyCacheStats = { hits: 0, misses: 0 };

  constructor(opts: RootKeyCacheOptions = {}) {
    this.#maxEntries = opts.maxEntries ?? 10_000;
    this.#ttlMs = opts.ttlMs ?? 60_000;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The live entry of `hash`, or undefined (then the caller reads the store and offers the row with `set`). */
  get(hash: string, now: number): CachedRootKey | undefined {
    const entry = this.#entries.get(hash);
    if (entry !== undefined && entry.expiresAt > now) {
      this.stats.hits++;
      return entry.key;
    }
    if (entry !== undefined) this.#delete(hash);
    this.stats.misses++;
    return undefined;
  }

  /** Where a load starts: hand it back to `set`, which refuses the row if something was invalidated meanwhile. */
  get generation(): number {
    return this.#generation;
  }

  /** Caches a row read when the generation was `generation`; returns the cached form (parsed permissions). */
  set(hash: string, row: RootKeyRow, generation: number, now: number): CachedRootKey {
    const key: CachedRootKey = { row, permissions: new Set(JSON.parse(row.permissions) as string[]) };
    if (generation !== this.#generation) return key;
    this.#delete(hash);
    if (this.#entries.size >= this.#maxEntries) this.#delete(this.#entries.keys().next().value!);
    this.#entries.set(hash, { key, expiresAt: now + this.#ttlMs });
    this.#hashById.set(row.id, hash);
    return key;
  }

  invalidate(changes: readonly Change[]): void {
    let dropped = false;
    for (const c of changes) {
      if (c.kind === 'root-key') {
        dropped = true;
        const hash = this.#hashById.get(c.id);
        if (hash) this.#delete(hash);
        continue;
      }
      // A kind this version does not know (a newer node's, during a rolling upgrade): everything may be stale.
      const stale = c.kind in STALE ? STALE[c.kind as keyof typeof STALE] : () => true;
      if (!stale) continue;
      dropped = true;
      for (const [hash, { key }] of this.#entries) if (stale(key.row, c.id)) this.#delete(hash);
    }
    if (dropped) this.#generation++;
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
    this.#hashById.delete(entry.key.row.id);
  }
}
