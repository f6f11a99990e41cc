import { AppError } from '../../domain/errors.ts';
import type { Db } from '../../store/store.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import type { OverrideRule } from '../../domain/override-match.ts';
import type { LimitRequest, RateLimiter } from '../verification/rate-limiter.ts';
import type { CachedNamespace, NamespaceCache } from './namespace-cache.ts';
import { createNamespace } from './namespaces.ts';
import type { CrossingEvents } from '../webhooks/crossing-events.ts';
import type { RatelimitRecorder } from './ratelimit-recorder.ts';

/** What ratelimits.limit works with: the runtime's limiter (shared with key rate limits), namespace cache and analytics. */
export interface RatelimitContext {
  db: Db;
  limiter: RateLimiter;
  namespaces: NamespaceCache;
  recorder: Pick<RatelimitRecorder, 'record'>;
  /** Webhook events of a window's first denial (ratelimit.exceeded); set by the app. */
  events?: CrossingEvents;
}

export interface LimitInput {
  namespace?: string;
  identifier: string;
  limit: number;
  duration: number;
  cost?: number;
  async?: boolean;
}

export interface LimitResponse {
  success: boolean;
  limit: number;
  remaining: number;
  /** The end of the current window, epoch ms. */
  reset: number;
}

export const DEFAULT_NAMESPACE = 'default';

/** A decision, with the override whose limit and duration it used (v2 answers its id). */
export interface LimitDecision extends LimitResponse {
  overrideId?: string;
}

/** How a limit request finds the namespace it names: undefined when there is none yet (it is then created). */
export type CachedLookup = (ref: string) => Promise<CachedNamespace | undefined>;

/**
 * ratelimits.limit: one fixed-window decision for (namespace, identifier) by the same limiter as key rate
 * limits. Its counters are named by the namespace id (`rlns_…`) where key limits use a key or identity id,
 * so the two never share a counter. An override matching the identifier replaces the request's limit and
 * duration (and its `async`, when the override sets one). `async: false` is exact across nodes; `async: true`
 * decides on this node and syncs in the background.
 *
 * Needs `ratelimit.<namespaceId>.limit`; a namespace that does not exist yet is created, which needs
 * `ratelimit.*.create_namespace` and, since its id is not known before, `ratelimit.*.limit` — both checked
 * before anything is written.
 */
export async function limit(ctx: RatelimitContext, caller: Caller, input: LimitInput): Promise<LimitResponse> {
  const name = input.namespace ?? DEFAULT_NAMESPACE;
  // The hot path: a namespace in memory, checked as namespacesToLimit checks a found one.
  let ns = ctx.namespaces.peek(caller.workspaceId, name);
  if (ns) requirePermissions(caller, `ratelimit.${ns.id}.limit`);
  else ns = (await namespacesToLimit(ctx, caller, [name], (n) => ctx.namespaces.get(ctx.db, caller.workspaceId, n))).get(name)!;
  const { success, limit, remaining, reset } = await decide(ctx, caller, ns, input);
  return { success, limit, remaining, reset };
}

/**
 * The namespaces limit requests name (`refs`, found by `lookup`), the missing ones created (by that name):
 * every permission is checked before anything is written, so a refused request creates no namespace.
 */
export async function namespacesToLimit(
  ctx: RatelimitContext,
  caller: Caller,
  refs: readonly string[],
  lookup: CachedLookup,
): Promise<Map<string, CachedNamespace>> {
  const unique = [...new Set(refs)];
  const found = await Promise.all(unique.map(lookup));
  for (const ns of found) if (ns) requirePermissions(caller, `ratelimit.${ns.id}.limit`);
  const missing = unique.filter((_, i) => !found[i]);
  if (missing.length > 0) requirePermissions(caller, 'ratelimit.*.create_namespace', 'ratelimit.*.limit');
  const out = new Map<string, CachedNamespace>();
  for (const [i, ref] of unique.entries()) if (found[i]) out.set(ref, found[i]);
  for (const name of missing) {
    await createNamespace(ctx.db, caller, name);
    // Fresh: a load another request started before the namespace was committed would answer "none".
    const ns = await ctx.namespaces.get(ctx.db, caller.workspaceId, name, { fresh: true });
    // Deleted by another request between the two statements: as if it had never been created.
    if (!ns) throw new AppError('data/conflict', `Namespace "${name}" was deleted while this request created it; nothing was counted`);
    out.set(name, ns);
  }
  return out;
}

/** The limiter's request for `input` in namespace `ns`: a matching override's limit, duration and `async` win. */
export function limitRequest(ns: CachedNamespace, input: LimitInput): { request: LimitRequest; override?: OverrideRule } {
  const override = ns.overrides.match(input.identifier);
  const async = override?.async ?? input.async ?? false;
  const request: LimitRequest = {
    identifier: ns.id,
    name: input.identifier,
    limit: override?.limit ?? input.limit,
    duration: override?.duration ?? input.duration,
    cost: input.cost ?? 1,
    type: async ? 'fast' : 'consistent',
  };
  return { request, override };
}

/** One decision in namespace `ns`, counted and recorded for analytics. */
export async function decide(ctx: RatelimitContext, caller: Caller, ns: CachedNamespace, input: LimitInput): Promise<LimitDecision> {
  const { request, override } = limitRequest(ns, input);
  const now = Date.now();
  const started = performance.now();
  // An `async` decision is made in memory: no promise per request (the same decision check makes).
  const r = ctx.limiter.checkInMemory(request, now) ?? (await ctx.limiter.check([request], now))[0];
  ctx.recorder.record({
    workspaceId: caller.workspaceId,
    namespaceId: ns.id,
    identifier: input.identifier,
    passed: r.passed,
    time: now,
    requestId: caller.requestId,
    latency: performance.now() - started,
  });
  if (!r.passed) ctx.events?.namespaceDenied(caller.workspaceId, ns.id, input.identifier, r.reset);
  return { success: r.passed, limit: r.limit, remaining: r.remaining, reset: r.reset, ...(override ? { overrideId: override.id } : {}) };
}
