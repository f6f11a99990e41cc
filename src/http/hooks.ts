import { authenticateRootKey } from '../services/workspaces/root-keys.ts';
import type { Store } from '../store/store.ts';
import { sendError } from './errors.ts';
import type { Metrics } from './metrics.ts';
import type { App } from './types.ts';
import { installBodyRules } from './validation.ts';

/**
 * What runs around every route of every API version: the request id header, root-key authentication,
 * the validation path of routes with body rules, metrics, and the envelope for unknown paths and methods.
 * The verification lane (verify-lane.ts) runs none of these: what a hook here adds to every response, the
 * lane adds too (a test compares their headers).
 */
export function installHooks(app: App, store: Store, metrics: Metrics): void {
  const methodsByPath = new Map<string, string[]>();
  app.addHook('onRoute', (route) => {
    installBodyRules(route);
    const methods = ([] as string[]).concat(route.method);
    methodsByPath.set(route.url, [...(methodsByPath.get(route.url) ?? []), ...methods]);
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
    const url = request.routeOptions.url;
    // Authentication comes first: before the body is read or validated, and before any lookup.
    if (url?.startsWith('/v1/') && !request.routeOptions.config.public) {
      request.caller = await authenticateRootKey(store.db, request.headers.authorization, request.id);
    }
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.observe(request.routeOptions.url ?? 'unknown', reply.statusCode, reply.elapsedTime / 1000);
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
}
