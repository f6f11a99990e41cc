import { AppError } from '../../domain/errors.ts';
import { AddressLimiter } from '../../domain/address-limiter.ts';
import type { Db } from '../../store/store.ts';
import type { Caller } from '../caller.ts';
import type { Change, ChangeListener } from '../changes.ts';
import { callerOf, findRootKey, rootKeyEvents, rootKeyHashOf } from './root-keys.ts';
import { RootKeyUsage } from './root-key-usage.ts';
import { RootKeyCache, type CachedRootKey } from './root-key-cache.ts';

export interface RootKeyGuardOptions {
  /** Failed authentications allowed per client address and window; the next ones are 429. 0: no limit. Default 100. */
  failureLimit?: number;
  /** The failure window (ms, fixed windows). Default 60 s. */
  windowMs?: number;
  /**
   * How long a hash the store did not know is answered as unknown without a read (ms). Default 1 s: a root
   * key created by another process (the CLI) is accepted within that bound, as every CLI change must be.
   */
  unknownTtlMs?: number;
  /** How long a hash that authenticated keeps passing an over-limit address (ms; it is still checked every time). Default 10 min. */
  trustedTtlMs?: number;
  /** Entries each memory (unknown hashes, trusted hashes, addresses) holds at most; the oldest goes first. Default 10,000. */
  maxEntries?: number;
  /** Root keys whose last use waits for a write at most (RootKeyUsage; default ROOT_KEY_USAGE_CAPACITY). */
  usageCapacity?: number;
  /** How long a found root key stays cached without a change dropping it (ms; RootKeyCache's default 60 s). */
  cacheTtlMs?: number;
}

/** What the guard did since it was made (plain counters, read by /metrics). */
export interface RootKeyGuardStats {
  /** Authentications refused with 401 (unknown, revoked, expired) after a lookup or from the unknown-hash memory. */
  failures: number;
  /** Requests refused with 429 because their address was over its failure limit. */
  limited: number;
  /** Unknown hashes answered from memory, without a store read. */
  unknownHits: number;
}

/**
 * Root-key authentication for the HTTP server: authenticateRootKey (root-keys.ts) made cheap to succeed and
 * to fail.
 *
 * - Found keys are cached (RootKeyCache): a cached key costs no store read, and its expiry and revocation are
 *   checked on every request. The guard is a ChangeListener: the runtime hands it every change (this
 *   process' at once, other processes' pushed or polled), so a revocation or permission change made here
 *   applies from the next request, and one made elsewhere within the push's delay (1 s at most).
 * - A hash the store did not know is remembered for `unknownTtlMs`: the same unknown key again costs no
 *   store read. A root key created in this process is forgotten as unknown at once (rootKeyEvents, plus a
 *   generation check so a lookup that raced with the creation does not remember it); one created by
 *   another process is accepted once the entry expires. Generated root keys carry 128+ random bits, so
 *   nobody presents one before it exists; only a given key (KEYHOLD_BOOTSTRAP_ROOT_KEY) can be presented
 *   early, and the first start bootstraps before the server listens.
 * - Failures (unknown, revoked, expired; not a missing or malformed header, which cost nothing) are counted
 *   per client address in fixed windows. An address over `failureLimit` is answered 429 `limit/rate-limited`
 *   before any lookup, except with a key that authenticated recently (it is then checked as usual, so a
 *   revocation still applies at once): successful callers behind the same address are not refused, and
 *   every other address is unaffected. Successes add no I/O on the request's path (their last use is
 *   written in the background, at most once a minute per key: root-key-usage.ts).
 */
export class RootKeyGuard implements ChangeListener {
  readonly stats: RootKeyGuardStats = { failures: 0, limited: 0, unknownHits: 0 };
  readonly #db: Db;
  readonly #unknown: ExpiringSet;
  readonly #trusted: ExpiringSet;
  /** Failed authentications per client address. */
  readonly #failures: AddressLimiter;
  readonly #usage: RootKeyUsage;
  /**
   * The hash of each `Authorization` header that authenticated lately: hashing (SHA-256) was most of what a
   * cached root key cost. Only the hash is remembered, a pure function of the header: the cache entry it
   * finds is looked up, and its revocation and expiry checked, on every request as before. Headers that
   * failed are never added, so unknown keys cannot crowd it.
   */
  readonly #hashes: HeaderHashes;
  /** Store reads in flight, by hash, with the generations they started at (at most one per hash). */
  readonly #loads = new Map<string, { found: Promise<CachedRootKey | undefined>; generation: number; cacheGeneration: number }>();
  /** Found root keys (its stats are the cache's hit rate). */
  readonly cache: RootKeyCache;
  /** Changes with every root key created in this process. */
  #generation = 0;
  readonly #forget = (hash: string): void => {
    this.#generation++;
    this.#unknown.delete(hash);
  };

  constructor(db: Db, opts: RootKeyGuardOptions = {}) {
    this.#db = db;
    const maxEntries = opts.maxEntries ?? 10_000;
    this.#failures = new AddressLimiter(opts.failureLimit ?? 100, { windowMs: opts.windowMs, maxAddresses: maxEntries });
    this.#unknown = new ExpiringSet(opts.unknownTtlMs ?? 1000, maxEntries);
    this.#trusted = new ExpiringSet(opts.trustedTtlMs ?? 600_000, maxEntries);
    this.#usage = new RootKeyUsage(db, opts.usageCapacity);
    this.#hashes = new HeaderHashes(Math.min(maxEntries, HEADER_HASHES));
    this.cache = new RootKeyCache({ maxEntries, ttlMs: opts.cacheTtlMs });
    rootKeyEvents.on('created', this.#forget);
  }

  /** Drops the cached root keys these committed changes make stale. */
  invalidate(changes: readonly Change[]): void {
    this.cache.invalidate(changes);
  }

  /** The caller of an `Authorization` header sent from `address`, or 401 (as authenticateRootKey) or 429. */
  async authenticate(header: string | undefined, requestId: string, address: string, now = Date.now()): Promise<Caller> {
    const hash = this.#hashes.get(header) ?? rootKeyHashOf(header);
    if (this.#failures.isOver(address, now) && !this.#trusted.has(hash, now)) {
      this.stats.limited++;
      throw new AppError(
        'limit/rate-limited',
        `Too many failed root-key authentications from ${address}; retry in ${this.retryAfterSeconds(now)} s`,
      );
    }
    const found = this.cache.get(hash, now) ?? (await this.#find(hash, now));
    try {
      const caller = callerOf(found?.row, requestId, now, found?.permissions);
      this.#hashes.set(header!, hash);
      this.#trusted.add(hash, now);
      this.#usage.used(caller.rootKeyId, now);
      return caller;
    } catch (err) {
      this.#trusted.delete(hash);
      this.#countFailure(address, now);
      throw err;
    }
  }

  /** Seconds until the current failure window ends (the Retry-After of a 429). */
  retryAfterSeconds(now = Date.now()): number {
    return this.#failures.retryAfterSeconds(now);
  }

  /** Root-key uses whose last-use time was dropped: `usageCapacity` keys waited for a write (the store was down). */
  get droppedUses(): number {
    return this.#usage.dropped;
  }

  /** Root keys whose last use waits for a write, or is being written. */
  get heldUses(): number {
    return this.#usage.held;
  }

  /** Stops listening for root keys created in this process; writes the last uses it holds, if the store takes them. */
  async close(): Promise<void> {
    rootKeyEvents.off('created', this.#forget);
    await this.#usage.flush().catch(() => {
      /* the store is down: what it holds is lost, as an unwritten last use always was */
    });
  }

  async #find(hash: string, now: number): Promise<CachedRootKey | undefined> {
    if (this.#unknown.has(hash, now)) {
      this.stats.unknownHits++;
      return undefined;
    }
    const generation = this.#generation;
    const cacheGeneration = this.cache.generation;
    // Requests for a hash whose read is in flight share it (at a cached key's expiry, every request arriving
    // during the read used to read too: on PostgreSQL a few hundred reads a minute under load). Only while
    // nothing was invalidated or created since it started, so no request gets a state from before a change
    // it follows.
    const pending = this.#loads.get(hash);
    if (pending && pending.generation === generation && pending.cacheGeneration === cacheGeneration) return pending.found;
    const found = this.#load(hash, now, generation, cacheGeneration);
    this.#loads.set(hash, { found, generation, cacheGeneration });
    const done = () => {
      if (this.#loads.get(hash)?.found === found) this.#loads.delete(hash);
    };
    found.then(done, done);
    return found;
  }

  async #load(hash: string, now: number, generation: number, cacheGeneration: number): Promise<CachedRootKey | undefined> {
    const row = await findRootKey(this.#db, hash);
    if (row) return this.cache.set(hash, row, cacheGeneration, now);
    if (generation === this.#generation) this.#unknown.add(hash, now);
    return undefined;
  }

  #countFailure(address: string, now: number): void {
    this.stats.failures++;
    this.#failures.count(address, now);
  }
}

/** How stale a remembered string's expiry may get before adding it again renews it (ms). */
const REFRESH_MS = 1000;

/** Strings remembered for a while, at most `max` of them (the oldest added is dropped first). */
class ExpiringSet {
  readonly #expiries = new Map<string, number>();
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(ttlMs: number, max: number) {
    this.#ttlMs = ttlMs;
    this.#max = max;
  }

  has(value: string, now: number): boolean {
    const expiresAt = this.#expiries.get(value);
    if (expiresAt === undefined) return false;
    if (expiresAt > now) return true;
    this.#expiries.delete(value);
    return false;
  }

  add(value: string, now: number): void {
    const expiresAt = now + this.#ttlMs;
    // Added again within a second (every request of a busy caller): its place and expiry barely change.
    if ((this.#expiries.get(value) ?? 0) > expiresAt - REFRESH_MS) return;
    this.#expiries.delete(value); // re-added values move to the end: the oldest stays first
    if (this.#expiries.size >= this.#max) this.#expiries.delete(this.#expiries.keys().next().value!);
    this.#expiries.set(value, expiresAt);
  }

  delete(value: string): void {
    this.#expiries.delete(value);
  }
}

/** Headers whose hash is remembered at most: a few callers send nearly every request. */
const HEADER_HASHES = 1000;

/** Header → hash, at most `max` of them; when full, the oldest added is dropped. */
class HeaderHashes {
  readonly #hashes = new Map<string, string>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get(header: string | undefined): string | undefined {
    return header === undefined ? undefined : this.#hashes.get(header);
  }

  set(header: string, hash: string): void {
    if (this.#hashes.has(header)) return;
    if (this.#hashes.size >= this.#max) this.#hashes.delete(this.#hashes.keys().next().value!);
    this.#hashes.set(header, hash);
  }
}
