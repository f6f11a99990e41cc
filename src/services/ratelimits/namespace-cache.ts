import { OverrideSet } from '../../domain/override-match.ts';
import type { Executor } from '../../store/store.ts';
import type { Change, ChangeListener } from '../changes.ts';
import { findNamespaceById, findNamespaceByName } from './namespaces.ts';
import { overrideRules } from './overrides.ts';

/** A namespace as ratelimits.limit needs it: its id and its overrides, ready to match. */
export interface CachedNamespace {
  id: string;
  overrides: OverrideSet;
}

/** The cache key of a namespace name: NUL cannot occur in stored text, so it separates unambiguously. */
const cacheKey = (workspaceId: string, name: string): string => `${workspaceId}\u0000${name}`;

/**
 * Rate-limit namespaces with their overrides, by workspace and name, in memory: a hit costs ratelimits.limit
 * no store read. A `namespace` change (the namespace deleted, an override set or deleted) drops its entry as
 * soon as this node learns of it — at once for its own changes, within the change feed's poll interval (or
 * through Redis) for other nodes' — and entries expire after `ttlMs` as a safety net. Absent namespaces are
 * not cached: the next request creates the namespace or is refused. Concurrent misses of one name share one
 * load, and a load that raced with a change is returned but not cached.
 */
export class NamespaceCache implements ChangeListener {
  readonly #entries = new Map<string, { ns: CachedNamespace; expiresAt: number }>();
  readonly #keyById = new Map<string, string>();
  readonly #loading = new Map<string, Promise<CachedNamespace | undefined>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  #generation = 0;

  /** `maxEntries` bounds memory whatever number of namespaces root keys create: the oldest entry is dropped first. */
  constructor(opts: { ttlMs?: number; maxEntries?: number } = {}) {
    this.#ttlMs = opts.ttlMs ?? 60_000;
    this.#maxEntries = opts.maxEntries ?? 100_000;
  }

  /**
   * The namespace `name` of the workspace, from memory or loaded from `db`; undefined when it does not exist.
   * `fresh`: never joins a load already in flight, which may have read the store before a namespace the
   * caller has just created was committed (it would answer "no such namespace"); starts a new one instead.
   */
  get(db: Executor, workspaceId: string, name: string, opts: { fresh?: boolean } = {}): Promise<CachedNamespace | undefined> {
    const key = cacheKey(workspaceId, name);
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > Date.now()) return Promise.resolve(hit.ns);
    return this.#loadShared(db, key, workspaceId, name, opts);
  }

  /** The namespace `name` of the workspace when its live entry is in memory (no promise, no load), else undefined. */
  peek(workspaceId: string, name: string): CachedNamespace | undefined {
    const hit = this.#entries.get(cacheKey(workspaceId, name));
    return hit && hit.expiresAt > Date.now() ? hit.ns : undefined;
  }

  #loadShared(db: Executor, key: string, workspaceId: string, name: string, opts: { fresh?: boolean }) {
    const loading = opts.fresh ? undefined : this.#loading.get(key);
    if (loading) return loading;
    const load = this.#load(db, key, workspaceId, name).finally(() => {
      if (this.#loading.get(key) === load) this.#loading.delete(key);
    });
    this.#loading.set(key, load);
    return load;
  }

  /**
   * The namespace of this id in the workspace (v2 names namespaces by id too), from memory when its entry is
   * there, else found by id and loaded as `get` loads it by name; undefined when the workspace has none.
   */
  async getById(db: Executor, workspaceId: string, id: string): Promise<CachedNamespace | undefined> {
    const key = this.#keyById.get(id);
    const hit = key?.startsWith(cacheKey(workspaceId, '')) ? this.#entries.get(key) : undefined;
    if (hit && hit.expiresAt > Date.now()) return hit.ns;
    const row = await findNamespaceById(db, workspaceId, id);
    const ns = row ? await this.get(db, workspaceId, row.name) : undefined;
    // Deleted and made again under its name in between: that is another namespace.
    return ns?.id === id ? ns : undefined;
  }

  invalidate(changes: readonly Change[]): void {
    for (const c of changes) {
      if (c.kind !== 'namespace') continue;
      this.#generation++;
      this.#loading.clear(); // a load in flight may have read the state from before: later requests start a new one
      const key = this.#keyById.get(c.id);
      if (key === undefined) continue;
      this.#entries.delete(key);
      this.#keyById.delete(c.id);
    }
  }

  async #load(db: Executor, key: string, workspaceId: string, name: string): Promise<CachedNamespace | undefined> {
    const generation = this.#generation;
    const row = await findNamespaceByName(db, workspaceId, name);
    if (!row) return undefined;
    const ns = { id: row.id, overrides: new OverrideSet(await overrideRules(db, row.id)) };
    if (generation === this.#generation) {
      this.#entries.delete(key); // re-inserted last: the Map's order is the age of its entries
      if (this.#entries.size >= this.#maxEntries) this.#evictOldest();
      this.#entries.set(key, { ns, expiresAt: Date.now() + this.#ttlMs });
      this.#keyById.set(row.id, key);
    }
    return ns;
  }

  #evictOldest(): void {
    for (const [key, { ns }] of this.#entries) {
      this.#entries.delete(key);
      this.#keyById.delete(ns.id);
      return;
    }
  }
}
