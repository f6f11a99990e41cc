import { parentPort, workerData } from 'node:worker_threads';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ExportResult } from '@opentelemetry/core';

// The worker thread of span-export.ts: sends request bodies the main thread serialized, with the OTLP/HTTP
// exporter's own transport (endpoint, headers, compression, timeout and retries from the OTEL_EXPORTER_OTLP_*
// settings, which a worker reads from the same environment), and answers each with its export result.

const { protocol } = workerData as { protocol: 'http/protobuf' | 'http/json' };
const json = protocol === 'http/json';
const serializer = json ? JsonTraceSerializer : ProtobufTraceSerializer;
const options = convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', {
  'Content-Type': json ? 'application/json' : 'application/x-protobuf',
});
// The body is already serialized: the delegate passes it through; responses are read as the exporter reads them.
const passThrough = { serializeRequest: (body: Uint8Array) => body, deserializeResponse: serializer.deserializeResponse };
// No meter provider: the exporter's own metrics are not recorded, so nothing is counted.
const uncounted = { name: 'span' as const, countItems: () => 0 };
const delegate = createOtlpHttpExportDelegate(options, passThrough, 'otlp_http_span_exporter', uncounted, undefined);

export type ToExportThread = { id: number; body: Uint8Array } | { id: number; flush: true } | 'shutdown';
export type FromExportThread = { id: number; code: number; error?: string };

parentPort!.on('message', (message: ToExportThread) => {
  if (message === 'shutdown') {
    void delegate.shutdown().finally(() => process.exit(0));
    return;
  }
  const answer = (result: ExportResult) =>
    parentPort!.postMessage({ id: message.id, code: result.code, error: result.error?.message } satisfies FromExportThread);
  if ('flush' in message)
    void delegate.forceFlush().then(
      () => answer({ code: 0 }),
      (err: Error) => answer({ code: 1, error: err }),
    );
  else delegate.export(message.body, answer);
});
