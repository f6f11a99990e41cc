import type { IncomingHttpHeaders } from 'node:http';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { RequestSpan, RequestTracing } from './http/request-tracing.ts';
import type { StoreTracing } from './store/store.ts';
import type { RedisTracing } from './store/redis.ts';
import type { SendTracing } from './services/webhooks/attempt.ts';
import type { JobTracing } from './jobs/worker.ts';
import { tracedDialect } from './tracing/store-spans.ts';
import { traceRedis, tracedJob, tracedSend } from './tracing/client-spans.ts';
import { rootSampling } from './tracing/root-sampling.ts';

/** Everything traced, each part handed to what it traces (server.ts); none of it exists while traces are off. */
export interface Tracing extends RequestTracing, StoreTracing, RedisTracing, SendTracing, JobTracing {
  /** Exports the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry traces, loaded (dynamic import from server.ts) only when OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. The SDK reads the standard settings itself: the exporter's
 * protocol (`http/protobuf` by default, `http/json`, `grpc`), headers and endpoint, OTEL_TRACES_SAMPLER(_ARG),
 * OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME (`keyhold` when neither names the service). Traces
 * only: no metrics or log exporters, no auto-instrumentation; the spans are Keyhold's own (docs/observability.md).
 * W3C trace context is propagated, in the process by the SDK's AsyncLocalStorage context manager.
 */
export function startTracing(serviceName: string | undefined): Tracing {
  const roots = rootSampling(process.env);
  const sdk = new NodeSDK({ serviceName, instrumentations: [], metricReaders: [], logRecordProcessors: [], sampler: roots.sampler });
  sdk.start();
  const tracer = trace.getTracer('keyhold');
  return {
    // Without an incoming trace context, a request not sampled never reaches the SDK (tracing/root-sampling.ts).
    start: (method, headers, startTime) =>
      headers.traceparent === undefined && !roots.sample() ? UNSAMPLED : requestSpan(tracer, method, headers, startTime),
    dialect: (dialect, kind) => tracedDialect(dialect, kind === 'postgres' ? 'postgresql' : 'sqlite', tracer),
    redis: (client) => traceRedis(client, tracer),
    send: (url, headers, send) => tracedSend(tracer, url, headers, send),
    job: (job, run) => (roots.sample() ? tracedJob(tracer, job, run) : run()),
    shutdown: () => sdk.shutdown(),
  };
}

/** The span of a request that is not sampled: nothing to activate or record. */
const UNSAMPLED: RequestSpan = { activate: (work) => work(), end() {} };

function requestSpan(tracer: Tracer, method: string, headers: IncomingHttpHeaders, startTime?: number): RequestSpan {
  const parent = propagation.extract(context.active(), headers);
  const attributes = { 'http.request.method': method };
  const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes, startTime }, parent);
  // Most requests at a ratio sampler's usual settings: no children, no attributes, nothing to end.
  if (!span.isRecording()) return UNSAMPLED;
  return {
    activate(work, raw) {
      const active = trace.setSpan(parent, span);
      if (raw) context.bind(active, raw);
      return context.with(active, work);
    },
    end(route, status, workspaceId) {
      span.updateName(`${method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
      if (workspaceId) span.setAttribute('keyhold.workspace.id', workspaceId);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}
