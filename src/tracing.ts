import type { IncomingHttpHeaders } from 'node:http';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { RequestSpan, RequestTracing } from './http/request-tracing.ts';

/**
 * OpenTelemetry traces, loaded (dynamic import from server.ts) only when OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. The SDK reads the standard settings itself: the exporter's
 * protocol (`http/protobuf` by default, `http/json`, `grpc`), headers and endpoint, OTEL_TRACES_SAMPLER(_ARG),
 * OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME (`keyhold` when neither names the service). Traces
 * only: no metrics or log exporters, no auto-instrumentation. W3C trace context is propagated.
 */
export function startTracing(serviceName: string | undefined): RequestTracing {
  const sdk = new NodeSDK({ serviceName, instrumentations: [], metricReaders: [], logRecordProcessors: [] });
  sdk.start();
  const tracer = trace.getTracer('keyhold');
  return {
    start(method: string, headers: IncomingHttpHeaders, startTime?: number): RequestSpan {
      const parent = propagation.extract(context.active(), headers);
      const attributes = { 'http.request.method': method };
      const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes, startTime }, parent);
      return {
        end(route, status, workspaceId) {
          span.updateName(`${method} ${route}`);
          span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
          if (workspaceId) span.setAttribute('keyhold.workspace.id', workspaceId);
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },
    shutdown: () => sdk.shutdown(),
  };
}
