import { AppError } from '../../domain/errors.ts';
import type { Db } from '../../store/store.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import type { RateLimiter } from '../verification/rate-limiter.ts';
import type { NamespaceCache } from './namespace-cache.ts';
import { createNamespace } from './namespaces.ts';
import type { RatelimitRecorder } from './ratelimit-recorder.ts';

/** What ratelimits.limit works with: the runtime's limiter (shared with key rate limits), namespace cache and analytics. */
export interface RatelimitContext {
  db: Db;
  limiter: RateLimiter;
  namespaces: NamespaceCache;
  recorder: Pick<RatelimitRecorder, 'record'>;
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
  let ns = await ctx.namespaces.get(ctx.db, caller.workspaceId, name);
  if (!ns) {
    requirePermissions(caller, 'ratelimit.*.create_namespace', 'ratelimit.*.limit');
    await createNamespace(ctx.db, caller, name);
    // Fresh: a load another request started before the namespace was committed would answer "none".
    ns = await ctx.namespaces.get(ctx.db, caller.workspaceId, name, { fresh: true });
    // Deleted by another request between the two statements: as if it had never been created.
    if (!ns) throw new AppError('data/conflict', `Namespace "${name}" was deleted while this request created it; nothing was counted`);
  } else {
    requirePermissions(caller, `ratelimit.${ns.id}.limit`);
  }
  const override = ns.overrides.match(input.identifier);
  const async = override?.async ?? input.async ?? false;
  const now = Date.now();
  const [r] = await ctx.limiter.check(
    [
      {
        identifier: ns.id,
        name: input.identifier,
        limit: override?.limit ?? input.limit,
        duration: override?.duration ?? input.duration,
        cost: input.cost ?? 1,
        type: async ? 'fast' : 'consistent',
      },
    ],
    now,
  );
  ctx.recorder.record({ workspaceId: caller.workspaceId, namespaceId: ns.id, identifier: input.identifier, passed: r.passed, time: now });
  return { success: r.passed, limit: r.limit, remaining: r.remaining, reset: r.reset };
}
