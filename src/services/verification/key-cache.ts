import type { Change, ChangeKind, ChangeListener } from '../changes.ts';
import type { KeyRecord } from './key-record.ts';

/**
 * What a change of each kind (a `key` change is found through its id at once) makes stale: the cached records
 * `records` matches, and, with `unknown`, every remembered unknown hash (keys were added: one of them may be
 * a key this node was asked for before it existed).
 */
const STALE: Record<Exclude<ChangeKind, 'key'>, { records?: (record: KeyRecord, id: string) => boolean; unknown?: true }> = {
  api: { records: (record, id) => record.apiId === id },
  identity: { records: (record, id) => record.identity?.id === id },
  workspace: { records: (record, id) => record.workspaceId === id },
  namespace: {}, // keys do not depend on rate-limit namespaces
  'keys-added': { unknown: true },
  'root-key': {}, // keys do not depend on root keys (they are checked per request by their own cache)
};

/** What the cache did since it was made (plain counters, read by /metrics). */
export interface KeyCacheStats {
  /** Lookups that found a live entry. */
  hits: number;
  /** Lookups that found none (absent or expired) and read the store (or joined a read in flight). */
  misses: number;
  /** Lookups answered by a remembered unknown hash: no store read. */
  unknownHits: number;
  /** Entries dropped to stay within `maxEntries` (least recently used first). */
  evictions: number;
}

export interface KeyCacheOptions {
  /** Keys kept at most (least recently used dropped first); default 100,000. */
  maxEntries?: number;
  /** How long a key stays cached without a change dropping it (ms); default 60 s. */
  ttlMs?: number;
  /** Unknown hashes remembered at most (when full, all are forgotten); default 10,000. */
  maxUnknown?: number;
  /** How long an unknown hash is remembered (ms); default 10 s. */
  unknownTtlMs?: number;
}

/** A cached record, linked into the recency list (least recently used first). */
interface Entry {
  record: KeyRecord;
  expiresAt: number;
  prev: Entry;
  next: Entry;
}

/**
 * Verified keys by hash, in memory, at most `maxEntries`, least recently used dropped first. A hit costs no
 * store read. Entries are dropped by changes (see services/changes.ts) as soon as this node learns of them,
 * and expire after `ttlMs` as a safety net. Hashes the store did not know are remembered briefly, so a
 * client retrying an unknown key costs no store read each time; adding keys (imports) forgets them all.
 * Concurrent misses of one hash share one load. A load that raced with an invalidation is not cached (the
 * `generation` check), so a change can never be overwritten by the state from before it.
 */
export class KeyCache implements ChangeListener {
  readonly #entries = new Map<string, Entry>();
  /**
   * The recency list's sentinel: `next` is the least recently used entry, `prev` the most recent. A list
   * rather than the Map's insertion order: evicting through `keys().next()` would step over every entry
   * deleted from the front since the Map last rehashed, which makes eviction under churn cost O(n).
   */
  readonly #lru = { prev: undefined, next: undefined } as unknown as Entry;
  readonly #hashById = new Map<string, string>();
  readonly #unknown = new Map<string, number>();
  readonly #loading = new Map<string, Promise<KeyRecord | null>>();
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  readonly #maxUnknown: number;
  readonly #unknownTtlMs: number;
  #generation = 0;
  readonly stats: KeyCacheStats = { hits: 0, misses: 0, unknownHits: 0, evictions: 0 };

  constructor(opts: KeyCacheOptions = {}) {
    this.#maxEntries = opts.maxEntries ?? 100_000;
    this.#ttlMs = opts.ttlMs ?? 60_000;
    this.#maxUnknown = opts.maxUnknown ?? 10_000;
    this.#unknownTtlMs = opts.unknownTtlMs ?? 10_000;
    this.#lru.next = this.#lru.prev = this.#lru;
  }

  get capacity(): number {
    return this.#maxEntries;
  }
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The record of `hash`: cached, or loaded by `load` (null: no such live key) and cached, unless something
   * was invalidated while it loaded. Concurrent calls for one hash share one load.
   */
  get(hash: string, load: (hash: string) => Promise<KeyRecord | null>, now = Date.now()): KeyRecord | null | Promise<KeyRecord | null> {
    const entry = this.#entries.get(hash);
    if (entry !== undefined && entry.expiresAt > now) {
      this.stats.hits++;
      unlink(entry);
      this.#append(entry);
      return entry.record;
    }
    if (entry !== undefined) this.#delete(hash);
    const unknownUntil = this.#unknown.get(hash);
    if (unknownUntil !== undefined) {
      if (unknownUntil > now) {
        this.stats.unknownHits++;
        return null;
      }
      this.#unknown.delete(hash);
    }
    this.stats.misses++;
    return this.#loading.get(hash) ?? this.#load(hash, load, now);
  }

  #load(hash: string, load: (hash: string) => Promise<KeyRecord | null>, now: number): Promise<KeyRecord | null> {
    const generation = this.#generation;
    const loading = load(hash).then((record) => {
      if (generation === this.#generation) {
        if (record) this.#set(record, now);
        else this.#setUnknown(hash, now);
      }
      return record;
    });
    this.#loading.set(hash, loading);
    const done = () => {
      if (this.#loading.get(hash) === loading) this.#loading.delete(hash);
    };
    loading.then(done, done);
    return loading;
  }

  #set(record: KeyRecord, now: number): void {
    this.#delete(record.hash);
    if (this.#entries.size >= this.#maxEntries) {
      this.#delete(this.#lru.next.record.hash);
      this.stats.evictions++;
    }
    // Every field in the literal: links added later would go to a separate property array (one more
    // object per cached key, and more garbage promoted to the old generation per eviction).
    const entry: Entry = { record, expiresAt: now + this.#ttlMs, prev: this.#lru, next: this.#lru };
    this.#append(entry);
    this.#entries.set(record.hash, entry);
    this.#hashById.set(record.id, record.hash);
  }

  /** Remembers an unknown hash; a full set starts afresh (cheaper than evicting one by one, and as bounded). */
  #setUnknown(hash: string, now: number): void {
    if (this.#unknown.size >= this.#maxUnknown) this.#unknown.clear();
    this.#unknown.set(hash, now + this.#unknownTtlMs);
  }

  /** Links `entry` in as the most recently used. */
  #append(entry: Entry): void {
    const last = this.#lru.prev;
    entry.prev = last;
    entry.next = this.#lru;
    last.next = entry;
    this.#lru.prev = entry;
  }

  invalidate(changes: readonly Change[]): void {
    this.#generation++;
    this.#loading.clear(); // a load in flight may have read the state from before: later lookups start a new one
    for (const c of changes) {
      if (c.kind === 'key') {
        const hash = this.#hashById.get(c.id);
        if (hash) this.#delete(hash);
        continue;
      }
      // A kind this version does not know (a newer node's, during a rolling upgrade): everything may be stale.
      const { records, unknown } = STALE[c.kind] ?? { records: () => true, unknown: true };
      if (unknown) this.#unknown.clear();
      if (records) for (const [hash, { record }] of this.#entries) if (records(record, c.id)) this.#delete(hash);
    }
  }

  clear(): void {
    this.#generation++;
    this.#loading.clear();
    this.#entries.clear();
    this.#lru.next = this.#lru.prev = this.#lru;
    this.#hashById.clear();
    this.#unknown.clear();
  }

  #delete(hash: string): void {
    const entry = this.#entries.get(hash);
    if (!entry) return;
    this.#entries.delete(hash);
    unlink(entry);
    this.#hashById.delete(entry.record.id);
  }
}

function unlink(entry: Entry): void {
  entry.prev.next = entry.next;
  entry.next.prev = entry.prev;
}
