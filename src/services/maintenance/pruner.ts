import { randomUUID } from 'node:crypto';
import type { RetentionConfig } from '../../config/retention.ts';
import type { Store } from '../../store/store.ts';
import { isStoreUnavailable } from '../../store/errors.ts';
import { PruneLease } from './prune-lease.ts';
import { runPrunePass, type PruneCounts } from './prune.ts';
import type { PruneKind } from './retention-rules.ts';

/** What /metrics reports of the retention passes this process ran. */
export interface PrunerStats {
  /** Rows removed per kind since the process started. */
  pruned: Partial<Record<PruneKind, number>>;
  /** When the last pass that ran here ended (epoch ms; 0: none yet). */
  lastPassAt: number;
  lastPassMs: number;
}

export interface PrunerOptions {
  retention: RetentionConfig;
  /** Before the first pass (ms): a start is not slowed by it, and a server restarted often still prunes. */
  firstPassDelayMs?: number;
  logger?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/** A node that stopped renewing its lease this long ago (crashed mid-pass) is replaced by another. */
const LEASE_TTL_MS = 5 * 60_000;
const RENEW_EVERY_MS = 60_000;

/**
 * Runs the retention pass in the background: first `firstPassDelayMs` after the start, then every
 * `retention.pruneIntervalMinutes` (none when 0), on one node of a cluster at a time (PruneLease; a node that
 * finds it held skips its turn). A failed pass (the store unavailable) is logged and tried again at the
 * next interval; stopping ends a pass between two batches.
 */
export class Pruner {
  readonly stats: PrunerStats = { pruned: {}, lastPassAt: 0, lastPassMs: 0 };
  readonly #store: Store;
  readonly #options: PrunerOptions;
  readonly #lease: PruneLease;
  #timer?: NodeJS.Timeout;
  #running?: Promise<void>;
  #stopping = false;

  constructor(store: Store, options: PrunerOptions) {
    this.#store = store;
    this.#options = options;
    this.#lease = new PruneLease(store.db, `pruner_${randomUUID()}`, LEASE_TTL_MS);
  }

  start(): void {
    if (this.#options.retention.pruneIntervalMinutes > 0) this.#schedule(this.#options.firstPassDelayMs ?? 60_000);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#running = this.#pass().finally(() => {
        this.#running = undefined;
        if (!this.#stopping) this.#schedule(this.#options.retention.pruneIntervalMinutes * 60_000);
      });
    }, ms);
    this.#timer.unref();
  }

  async #pass(): Promise<void> {
    const { logger } = this.#options;
    const started = Date.now();
    try {
      if (!(await this.#lease.take())) return;
      let renewed = started;
      const counts: PruneCounts = await runPrunePass(this.#store, this.#options.retention, {
        shouldStop: () => this.#stopping,
        onBatch: async (kind, rows) => {
          this.stats.pruned[kind] = (this.stats.pruned[kind] ?? 0) + rows;
          if (Date.now() - renewed > RENEW_EVERY_MS) {
            renewed = Date.now();
            await this.#lease.take(renewed);
          }
        },
      });
      await this.#lease.release();
      this.stats.lastPassAt = Date.now();
      this.stats.lastPassMs = this.stats.lastPassAt - started;
      const removed = Object.values(counts).reduce((a, n) => a + (n ?? 0), 0);
      if (removed) logger?.info({ pruned: counts, ms: this.stats.lastPassMs }, 'retention pass removed old rows');
    } catch (err) {
      // An outage is logged once by the store's availability reporter; the next interval tries again.
      if (!isStoreUnavailable(err)) logger?.warn({ err: (err as Error)?.message ?? String(err) }, 'retention pass failed');
    }
  }
}
