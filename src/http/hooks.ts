import { AppError } from '../domain/errors.ts';
import { RootKeyGuard } from '../services/workspaces/root-key-guard.ts';
import type { Store } from '../store/store.ts';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { createAccessLog, type AccessLog } from './access-log.ts';
import { sendError } from './errors.ts';
import type { Metrics } from './metrics.ts';
import type { App } from './types.ts';
import { installBodyRules } from './validation.ts';
import { InternalCallers, TICKET_HEADER } from './internal-callers.ts';

export interface HookOptions {
  /** Where the access log goes. */
  logger?: FastifyBaseLogger;
  /** One log line per answered request; off by default. */
  accessLog?: boolean;
  /** Failed root-key authentications per client address and minute before 429 (RootKeyGuard; 0: no limit). */
  authFailureLimit?: number;
  /** Root keys whose last use waits for a write at most (RootKeyGuard `usageCapacity`; default its own). */
  rootKeyUsageCapacity?: number;
}

/**
 * What runs around every route of every API version: the request id header, root-key authentication
 * (through a RootKeyGuard: unknown keys remembered, failures limited per client address), the validation
 * path of routes with body rules, metrics and the access log, and the envelope for unknown paths and methods.
 * The lane (lane.ts) runs none of these: what a hook here adds to every response, the lane adds too (a test
 * compares their headers). Returns, for the lane, the access log (undefined when off) and the RootKeyGuard,
 * which the lane's authenticated operations share with the hooks (one failure count, one unknown-key memory);
 * and, for the dashboard, the tickets by which its in-process requests name their caller.
 */
export function installHooks(
  app: App,
  store: Store,
  metrics: Metrics,
  options: HookOptions = {},
): { accessLog: AccessLog | undefined; guard: RootKeyGuard; internal: InternalCallers } {
  const internal = new InternalCallers();
  const guard = new RootKeyGuard(store.db, { failureLimit: options.authFailureLimit, usageCapacity: options.rootKeyUsageCapacity });
  app.addHook('onClose', async () => guard.close());
  metrics.watch({ rootKeys: guard.stats, rootKeyCache: guard.cache.stats });
  const methodsByPath = new Map<string, string[]>();
  app.addHook('onRoute', (route) => {
    installBodyRules(route);
    const methods = ([] as string[]).concat(route.method);
    methodsByPath.set(route.url, [...(methodsByPath.get(route.url) ?? []), ...methods]);
  });

  app.addHook('onRequest', authenticate(guard, internal));
  const accessLog = createAccessLog(options.logger, options.accessLog ?? false);
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url;
    metrics.observe(route ?? 'unknown', reply.statusCode, reply.elapsedTime / 1000);
    accessLog?.({
      requestId: request.id,
      method: request.method,
      route: route ?? 'unknown',
      status: reply.statusCode,
      ms: reply.elapsedTime,
    });
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = methodsByPath.get(path)?.filter((m) => m !== 'HEAD');
    if (allowed?.length) {
      reply.header('Allow', allowed.join(', '));
      return sendError(
        request,
        reply,
        'request/method-not-allowed',
        `${request.method} is not allowed on ${path}; use ${allowed.join(' or ')}`,
      );
    }
    return sendError(request, reply, 'request/route-not-found', `No operation at ${request.method} ${path}`);
  });
  return { accessLog, guard, internal };
}

/** The request id header, then authentication: before the body is read or validated, and before any lookup. */
function authenticate(guard: RootKeyGuard, internal: InternalCallers) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('X-Request-Id', request.id);
    const url = request.routeOptions.url;
    if (!(url?.startsWith('/v1/') || url?.startsWith('/v2/')) || request.routeOptions.config.public) return;
    // An in-process request of the dashboard carries its session's caller (internal-callers.ts), with the
    // dashboard request's id: audit records of the change name the request the browser made.
    const ticketed = request.headers[TICKET_HEADER] === undefined ? undefined : internal.take(request.headers[TICKET_HEADER]);
    if (ticketed) {
      request.caller = ticketed;
      return;
    }
    try {
      request.caller = await guard.authenticate(request.headers.authorization, request.id, request.ip);
    } catch (err) {
      if (err instanceof AppError && err.kind === 'limit/rate-limited') reply.header('Retry-After', String(guard.retryAfterSeconds()));
      throw err;
    }
  };
}
