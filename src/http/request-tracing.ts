import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { App } from './types.ts';

/**
 * One request's SERVER span (OpenTelemetry, src/tracing.ts): started when the request arrives (continuing an
 * incoming W3C `traceparent`), ended with what the answer was. Only the method, the route (a path pattern, never
 * the URL with its query), the status and the workspace id are recorded: never a header, key or body.
 */
export interface RequestSpan {
  end(route: string, status: number, workspaceId: string | undefined): void;
}

/** Starts request spans; absent (not even loaded) while tracing is off. */
export interface RequestTracing {
  /** `startedAt`: when the request arrived (epoch ms), if before now. */
  start(method: string, headers: IncomingHttpHeaders, startedAt?: number): RequestSpan;
  shutdown(): Promise<void>;
}

/** A SERVER span around every request Fastify answers (the lane starts its own: lane.ts). */
export function installRequestTracing(app: App, tracing: RequestTracing): void {
  const spans = new WeakMap<FastifyRequest, RequestSpan>();
  app.addHook('onRequest', async (request) => {
    spans.set(request, tracing.start(request.method, request.headers));
  });
  app.addHook('onResponse', async (request, reply) => {
    const caller = request.caller as { workspaceId?: string } | null;
    spans.get(request)?.end(request.routeOptions.url ?? 'unknown', reply.statusCode, caller?.workspaceId);
  });
  app.addHook('onClose', () => tracing.shutdown());
}
