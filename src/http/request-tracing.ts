import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { App } from './types.ts';

/**
 * One request's SERVER span (OpenTelemetry, src/tracing.ts): started when the request arrives (continuing an
 * incoming W3C `traceparent`), ended with what the answer was. Only the method, the route (a path pattern, never
 * the URL with its query), the status and the workspace id are recorded: never a header, key or body.
 */
export interface RequestSpan {
  /**
   * Runs `work` with this span as the active one, so that what it starts (store statements, Redis commands) are
   * its children; `raw` (a request whose body is read later) has the listeners added to it run so too.
   */
  activate<T>(work: () => T, raw?: IncomingMessage): T;
  end(route: string, status: number, workspaceId: string | undefined): void;
}

/** Starts request spans; absent (not even loaded) while tracing is off. */
export interface RequestTracing {
  /** `startedAt`: when the request arrived (epoch ms), if before now. */
  start(method: string, headers: IncomingHttpHeaders, startedAt?: number): RequestSpan;
}

/**
 * A SERVER span around every request Fastify answers, active from the first hook to the reply (the lane starts
 * its own: lane.ts). Installed before the other hooks, so root-key authentication runs inside it too.
 */
export function installRequestTracing(app: App, tracing: RequestTracing): void {
  const spans = new WeakMap<FastifyRequest, RequestSpan>();
  app.addHook('onRequest', (request, _reply, done) => {
    const span = tracing.start(request.method, request.headers);
    spans.set(request, span);
    span.activate(done, request.raw);
  });
  app.addHook('onResponse', async (request, reply) => {
    const caller = request.caller as { workspaceId?: string } | null;
    spans.get(request)?.end(request.routeOptions.url ?? 'unknown', reply.statusCode, caller?.workspaceId);
  });
}
