import type { Caller } from '../caller.ts';
import { counterBucket, type LimitRequest, type LimitResult } from '../verification/rate-limiter.ts';
import {
  decide,
  limitRequest,
  namespacesToLimit,
  type CachedLookup,
  type LimitDecision,
  type LimitInput,
  type RatelimitContext,
} from './limit.ts';

/** A limit request naming its namespace by name or by id (Unkey v2's `namespace`). */
export interface NamedLimitInput extends LimitInput {
  namespace: string;
}

export interface MultiLimitItem extends LimitDecision {
  namespace: string;
  identifier: string;
}

export interface MultiLimitResult {
  /** Every item passed: then, and only then, every item's cost was counted. */
  passed: boolean;
  limits: MultiLimitItem[];
}

/** Every namespace id starts so (domain/ids.ts); only such a value is looked up as an id. */
const ID_PREFIX = 'rlns_';

/** Finds a namespace by id first, then by name (the cache's entries are by name: an id costs a read until cached). */
const byNameOrId =
  (ctx: RatelimitContext, workspaceId: string): CachedLookup =>
  async (value) =>
    (value.startsWith(ID_PREFIX) ? await ctx.namespaces.getById(ctx.db, workspaceId, value) : undefined) ??
    ctx.namespaces.get(ctx.db, workspaceId, value);

/**
 * ratelimits.limit of Unkey v2: the same decision as v1's (limit.ts), in a namespace named by name or id;
 * one named by neither is created under that name.
 */
export async function limitNamed(ctx: RatelimitContext, caller: Caller, input: NamedLimitInput): Promise<LimitDecision> {
  const namespaces = await namespacesToLimit(ctx, caller, [input.namespace], byNameOrId(ctx, caller.workspaceId));
  return decide(ctx, caller, namespaces.get(input.namespace)!, input);
}

/**
 * ratelimit.multiLimit: several limits decided together, all or nothing. The limiter decides each request
 * on its own, so the batch is decided in two steps at one instant: first every counter is read (cost 0,
 * consuming nothing) and each item is said to fit when its counter has room for its cost plus the costs of
 * the items before it on the same counter; only when every item fits are the costs counted. When one does
 * not, nothing is counted and every item reports its counter as read (`passed` says whether that item fit).
 * Between the two steps another request may take the room an item was shown: that item is then refused
 * while the others keep their cost (the limits are never exceeded; the batch, then refused, has spent some).
 */
export async function multiLimit(ctx: RatelimitContext, caller: Caller, inputs: readonly NamedLimitInput[]): Promise<MultiLimitResult> {
  const namespaces = await namespacesToLimit(
    ctx,
    caller,
    inputs.map((i) => i.namespace),
    byNameOrId(ctx, caller.workspaceId),
  );
  const planned = inputs.map((input) => ({
    input,
    ns: namespaces.get(input.namespace)!,
    ...limitRequest(namespaces.get(input.namespace)!, input),
  }));
  const requests = planned.map((p) => p.request);
  const now = Date.now();
  const started = performance.now();
  const read = await ctx.limiter.check(
    requests.map((r) => ({ ...r, cost: 0 })),
    now,
  );
  const fits = fitInOrder(requests, read);
  const counted = fits.every(Boolean);
  const results: LimitResult[] = counted ? await ctx.limiter.check(requests, now) : read.map((r, i) => ({ ...r, passed: fits[i] }));
  const limits = planned.map(({ input, ns, override }, i): MultiLimitItem => {
    const r = results[i];
    ctx.recorder.record({
      workspaceId: caller.workspaceId,
      namespaceId: ns.id,
      identifier: input.identifier,
      passed: counted && r.passed,
      time: now,
      requestId: caller.requestId,
      latency: performance.now() - started,
    });
    if (!r.passed) ctx.events?.namespaceDenied(caller.workspaceId, ns.id, input.identifier, r.reset);
    return {
      namespace: input.namespace,
      identifier: input.identifier,
      success: r.passed,
      limit: r.limit,
      remaining: r.remaining,
      reset: r.reset,
      ...(override ? { overrideId: override.id } : {}),
    };
  });
  return { passed: limits.every((l) => l.success), limits };
}

/**
 * Whether each request fits its counter as `read` (cost 0) found it, after the requests before it on the
 * same counter: a cost fits when the count is within the limit and the room left holds it.
 */
function fitInOrder(requests: readonly LimitRequest[], read: readonly LimitResult[]): boolean[] {
  const taken = new Map<string, number>();
  return requests.map((r, i) => {
    const counter = counterBucket(r.identifier, r.name, r.limit, r.duration, 0);
    const total = (taken.get(counter) ?? 0) + r.cost;
    taken.set(counter, total);
    return read[i].passed && read[i].remaining >= total;
  });
}
