import { notFound } from '../../domain/errors.ts';
import type { Executor } from '../../store/store.ts';
import type { ApiRow } from '../../store/schema.ts';
import type { Change, ChangeKind, ChangeListener } from '../changes.ts';
import { findApi } from '../lookups.ts';

/**
 * What a change of each kind (an `api` change is found through its id at once) makes stale here: the cached
 * APIs `rows` matches. An API changes only by its deletion (an `api` change); its workspace's deletion ends it.
 */
const STALE: Record<Exclude<ChangeKind, 'api'>, ((row: ApiRow, id: string) => boolean) | null> = {
  key: null,
  identity: null,
  workspace: (row, id) => row.workspace_id === id,
  namespace: null,
  'keys-added': null,
  'root-key': null,
};

export interface ApiCacheOptions {
  /** APIs kept at most (the oldest cached is dropped first); default 10,000. */
  maxEntries?: number;
  /** How long an API stays cached without a change dropping it (ms); default 60 s. */
  ttlMs?: number;
}

/**
 * Live APIs by workspace and id, for keys.createKey: a hit costs no store read. Only found APIs are kept
 * (an unknown id is read each time). A deletion drops the API at once on the server that made it and on the
 * others as the change reaches them (pushed, or the change feed's poll: within 1 s); a key created on another
 * server in that window belongs to a deleted API and is never live (liveKeys). A read that raced with a change
 * is not cached (the generation check).
 */
export class ApiCache implements ChangeListener {
  readonly #entries = new Map<string, { row: ApiRow; expiresAt: number }>();
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  #generation = 0;
  readonly stats = { hits: 0, misses: 0 };

  constructor(opts: ApiCacheOptions = {}) {
    this.#maxEntries = opts.maxEntries ?? 10_000;
    this.#ttlMs = opts.ttlMs ?? 60_000;
  }

  /** The live API of the workspace, or 404 (as requireApi). */
  async require(db: Executor, workspaceId: string, apiId: string, now = Date.now()): Promise<ApiRow> {
    const key = `${workspaceId} ${apiId}`;
    const entry = this.#entries.get(key);
    if (entry !== undefined && entry.expiresAt > now) {
      this.stats.hits++;
      return entry.row;
    }
    this.stats.misses++;
    const generation = this.#generation;
    const row = await findApi(db, workspaceId, apiId);
    if (!row) throw notFound('api', apiId);
    if (generation === this.#generation) {
      this.#entries.delete(key);
      if (this.#entries.size >= this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { row, expiresAt: now + this.#ttlMs });
    }
    return row;
  }

  invalidate(changes: readonly Change[]): void {
    for (const c of changes) {
      // A kind this version does not know (a newer node's, during a rolling upgrade): everything may be stale.
      const stale =
        c.kind === 'api' ? (row: ApiRow, id: string) => row.id === id : c.kind in STALE ? STALE[c.kind as keyof typeof STALE] : () => true;
      if (!stale) continue;
      this.#generation++;
      for (const [key, { row }] of this.#entries) if (stale(row, c.id)) this.#entries.delete(key);
    }
  }
}
