import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { RequestMetrics } from './request-metrics.ts';
import type { JobQueueStats } from '../jobs/queue.ts';
import type { DependencyHealth } from '../services/dependency-health.ts';
import type { KeyCacheStats } from '../services/verification/key-cache.ts';
import type { VerifierStats } from '../services/verification/verifier.ts';
import type { RootKeyGuardStats } from '../services/workspaces/root-key-guard.ts';
import type { RootKeyCacheStats } from '../services/workspaces/root-key-cache.ts';
import type { PrunerStats } from '../services/maintenance/pruner.ts';

/**
 * What /metrics reads at scrape time, each added once it exists (`watch`). The hot path only increments
 * plain counters in these objects; prom-client's `collect` callbacks copy them into metrics per scrape.
 */
export interface MetricSources {
  verifier?: { stats: VerifierStats };
  cache?: { stats: KeyCacheStats; size: number; capacity: number };
  health?: Pick<DependencyHealth, 'snapshot'>;
  /** Reads the job queue (a store query per scrape). */
  jobs?: () => Promise<JobQueueStats>;
  rootKeys?: RootKeyGuardStats;
  rootKeyCache?: RootKeyCacheStats;
  /** The background retention passes (absent when they are off). */
  pruner?: PrunerStats;
  /** The buffers that fill while the store or Redis is down: entries held and dropped, by buffer. */
  buffers?: () => Record<string, { held: number; dropped: number }>;
  /** Webhook delivery attempts recorded by this process by outcome, and when the oldest pending delivery was created (a store read per scrape). */
  webhooks?: { outcomes: Record<string, number>; oldestPending: () => Promise<number | null> };
  /** Usage report attempts recorded by this process, by outcome. */
  usageReports?: Record<string, number>;
}

/** Prometheus metrics of one app instance (its own registry, so several apps can live in one process). */
export function createMetrics(withProcessMetrics: boolean) {
  const registry = new Registry();
  if (withProcessMetrics) collectDefaultMetrics({ register: registry, prefix: 'keyhold_' });
  const requests = new RequestMetrics();
  requests.register(registry);
  /** Counts one answered request and its time to respond. */
  const observe = (route: string, status: number, seconds: number): void => requests.observe(route, status, seconds);
  const sources: MetricSources = {};
  registerVerificationMetrics(registry, sources);
  registerJobMetrics(registry, sources);
  registerHealthMetrics(registry, sources);
  registerRetentionMetrics(registry, sources);
  registerBufferMetrics(registry, sources);
  registerWebhookMetrics(registry, sources);
  /** Adds sources for the metrics computed at scrape time. */
  const watch = (more: MetricSources): void => {
    Object.assign(sources, more);
  };
  return { registry, observe, watch };
}
export type Metrics = ReturnType<typeof createMetrics>;

/** A counter whose value is copied from a plain counter at each scrape. */
function mirroredCounter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[],
  read: (set: (labels: Record<L, string>, value: number) => void) => void,
) {
  return new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      read((labels, value) => this.inc(labels as never, value));
    },
  });
}

/** Verification outcomes (lane and route alike: both call the verifier), key cache, rate-limit decisions. */
function registerVerificationMetrics(registry: Registry, sources: MetricSources): void {
  mirroredCounter(registry, 'keyhold_verifications_total', 'keys.verifyKey outcomes by code', ['code'], (set) => {
    for (const [code, n] of Object.entries(sources.verifier?.stats.outcomes ?? {})) set({ code }, n);
  });
  mirroredCounter(
    registry,
    'keyhold_ratelimit_decisions_total',
    'Rate-limit decisions of verifications, by limit type',
    ['type', 'decision'],
    (set) => {
      for (const [type, d] of Object.entries(sources.verifier?.stats.rateLimits ?? {})) {
        set({ type, decision: 'passed' }, d.passed);
        set({ type, decision: 'denied' }, d.denied);
      }
    },
  );
  const cache = (name: string, help: string, read: (s: KeyCacheStats) => number) =>
    mirroredCounter(registry, name, help, [], (set) => {
      if (sources.cache) set({}, read(sources.cache.stats));
    });
  cache('keyhold_key_cache_hits_total', 'Verifications that found their key in the key cache', (s) => s.hits);
  cache('keyhold_key_cache_misses_total', 'Verifications that read their key from the store', (s) => s.misses);
  cache(
    'keyhold_key_cache_unknown_hits_total',
    'Verifications of a key recently found unknown, answered without a store read',
    (s) => s.unknownHits,
  );
  cache(
    'keyhold_key_cache_evictions_total',
    'Cached keys dropped to make room (the cache was full; least recently used first)',
    (s) => s.evictions,
  );
  const gauge = (name: string, help: string, read: (c: NonNullable<MetricSources['cache']>) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(sources.cache ? read(sources.cache) : 0);
      },
    });
  gauge('keyhold_key_cache_entries', 'Keys in the key cache', (c) => c.size);
  gauge('keyhold_key_cache_capacity', 'Keys the key cache holds at most (KEYHOLD_KEY_CACHE_SIZE)', (c) => c.capacity);
}

/** The job queue's depth and the age of its oldest pending job. */
function registerJobMetrics(registry: Registry, sources: MetricSources): void {
  // Both job gauges come from one read of the queue per scrape: they are collected together, so the read in
  // flight is shared. A store that does not answer leaves them out of the scrape; keyhold_dependency_up says why.
  let reading: Promise<JobQueueStats | undefined> | undefined;
  const readJobs = (): Promise<JobQueueStats | undefined> => {
    if (!sources.jobs) return Promise.resolve(undefined);
    if (!reading) {
      reading = sources.jobs().catch(() => undefined);
      void reading.finally(() => {
        reading = undefined;
      });
    }
    return reading;
  };
  new Gauge({
    name: 'keyhold_jobs',
    help: 'Jobs in the queue by status',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const stats = await readJobs();
      if (stats) for (const status of ['pending', 'running', 'failed'] as const) this.set({ status }, stats[status]);
    },
  });
  new Gauge({
    name: 'keyhold_jobs_oldest_pending_age_seconds',
    help: 'Age of the oldest pending job (0 when none is pending)',
    registers: [registry],
    async collect() {
      this.reset();
      const stats = await readJobs();
      if (stats) this.set(stats.oldestPendingCreatedAt === null ? 0 : Math.max(0, Date.now() - stats.oldestPendingCreatedAt) / 1000);
    },
  });
}

/** Dependency health, root-key authentication failures. */
function registerHealthMetrics(registry: Registry, sources: MetricSources): void {
  new Gauge({
    name: 'keyhold_dependency_up',
    help: "1 when the dependency's last call succeeded, else 0",
    labelNames: ['dependency'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [dependency, s] of Object.entries(sources.health?.snapshot() ?? {})) this.set({ dependency }, s.up ? 1 : 0);
    },
  });
  const health = (name: string, help: string, read: (s: { errors: number; outages: number }) => number) =>
    mirroredCounter(registry, name, help, ['dependency'], (set) => {
      for (const [dependency, s] of Object.entries(sources.health?.snapshot() ?? {})) set({ dependency }, read(s));
    });
  health('keyhold_dependency_errors_total', 'Failed calls to a dependency (store, redis)', (s) => s.errors);
  health('keyhold_dependency_outages_total', 'Times a dependency went from up to down', (s) => s.outages);
  const auth = (name: string, help: string, read: (s: RootKeyGuardStats) => number) =>
    mirroredCounter(registry, name, help, [], (set) => {
      if (sources.rootKeys) set({}, read(sources.rootKeys));
    });
  auth('keyhold_root_key_auth_failures_total', 'Root-key authentications refused with 401 (unknown, revoked, expired)', (s) => s.failures);
  auth(
    'keyhold_root_key_auth_limited_total',
    'Requests refused with 429: their address had too many failed authentications',
    (s) => s.limited,
  );
  auth('keyhold_root_key_unknown_hits_total', 'Unknown root keys answered from memory, without a store read', (s) => s.unknownHits);
  const cache = (name: string, help: string, read: (s: RootKeyCacheStats) => number) =>
    mirroredCounter(registry, name, help, [], (set) => {
      if (sources.rootKeyCache) set({}, read(sources.rootKeyCache));
    });
  cache(
    'keyhold_root_key_cache_hits_total',
    'Root-key authentications answered from the root-key cache, without a store read',
    (s) => s.hits,
  );
  cache(
    'keyhold_root_key_cache_misses_total',
    'Root-key authentications that read the store (or knew the key as unknown)',
    (s) => s.misses,
  );
}

/** Rows the retention passes of this process removed, per kind, and when the last pass ended. */
function registerRetentionMetrics(registry: Registry, sources: MetricSources): void {
  mirroredCounter(registry, 'keyhold_pruned_rows_total', 'Rows removed by retention passes of this process, by kind', ['kind'], (set) => {
    for (const [kind, n] of Object.entries(sources.pruner?.pruned ?? {})) set({ kind }, n ?? 0);
  });
  new Gauge({
    name: 'keyhold_prune_last_pass_timestamp_seconds',
    help: 'When the last retention pass of this process ended (unix seconds; 0: none yet)',
    registers: [registry],
    collect() {
      this.set((sources.pruner?.lastPassAt ?? 0) / 1000);
    },
  });
  new Gauge({
    name: 'keyhold_prune_last_pass_duration_seconds',
    help: 'How long the last retention pass of this process took',
    registers: [registry],
    collect() {
      this.set((sources.pruner?.lastPassMs ?? 0) / 1000);
    },
  });
}

/** The outage buffers (docs/reliability.md, "When the store or Redis fails"): what each holds and what it dropped when full. */
function registerBufferMetrics(registry: Registry, sources: MetricSources): void {
  mirroredCounter(registry, 'keyhold_dropped_total', 'Entries an outage buffer dropped because it was full, by buffer', ['what'], (set) => {
    for (const [what, b] of Object.entries(sources.buffers?.() ?? {})) set({ what }, b.dropped);
  });
  new Gauge({
    name: 'keyhold_buffered_entries',
    help: 'Entries an outage buffer holds (waiting for the store or Redis, or being written), by buffer',
    labelNames: ['what'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [what, b] of Object.entries(sources.buffers?.() ?? {})) this.set({ what }, b.held);
    },
  });
}

/** Attempts recorded by this process, by outcome (delivered, retried: failed and scheduled again, failed: for good). */
const attemptCounter = (registry: Registry, name: string, what: string, outcomes: () => Record<string, number> | undefined) =>
  new Counter({
    name,
    help: `${what} attempts recorded by this process, by outcome (delivered, retried: failed and scheduled again, failed: for good)`,
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [outcome, n] of Object.entries(outcomes() ?? {})) this.inc({ outcome }, n);
    },
  });

/** Webhook deliveries and usage reports: attempts by outcome (this process), and the age of the oldest pending delivery. */
function registerWebhookMetrics(registry: Registry, sources: MetricSources): void {
  attemptCounter(registry, 'keyhold_webhook_delivery_attempts_total', 'Webhook delivery', () => sources.webhooks?.outcomes);
  attemptCounter(registry, 'keyhold_usage_report_attempts_total', 'Usage report', () => sources.usageReports);
  new Gauge({
    name: 'keyhold_webhook_oldest_pending_delivery_age_seconds',
    help: 'Age of the oldest webhook delivery not yet delivered or failed (0 when none is pending)',
    registers: [registry],
    async collect() {
      this.reset();
      const oldest = await sources.webhooks?.oldestPending().catch(() => undefined);
      if (oldest !== undefined) this.set(oldest === null ? 0 : Math.max(0, Date.now() - oldest) / 1000);
    },
  });
}
