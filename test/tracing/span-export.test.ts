import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ThreadSpanExporter } from '../../src/tracing/span-export.ts';

// The OTLP/HTTP exporter whose requests leave from a worker thread (src/tracing/span-export.ts), against a real
// receiver: what arrives is what the SDK's serializer makes of the spans, with the OTEL_EXPORTER_OTLP_* settings.

/** A receiver answering `status` to every request, keeping each request's path, headers and body. */
async function receiver(status = 200) {
  const got: Array<{ path: string; headers: IncomingHttpHeaders; body: Buffer }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { got, url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Two ended spans, one the other's child, made by the SDK. */
function someSpans(): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: memory })] });
  const tracer = provider.getTracer('test');
  tracer.startActiveSpan('parent', (parent) => {
    tracer.startSpan('child', { attributes: { 'db.system': 'sqlite' } }).end();
    parent.end();
  });
  return memory.getFinishedSpans();
}

const exported = (exporter: ThreadSpanExporter, spans: ReadableSpan[]) =>
  new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));

/** Runs `body` with OTEL_* settings in the environment the exporter's thread copies when it starts. */
async function withEnv<T>(env: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await body();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

for (const protocol of ['http/protobuf', 'http/json'] as const) {
  test(`${protocol}: the receiver gets the SDK's serialization of the spans, at /v1/traces, with the configured headers`, async (t) => {
    const r = await receiver();
    t.after(r.close);
    const exporter = await withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_EXPORTER_OTLP_HEADERS: 'x-team=keys' },
      async () => new ThreadSpanExporter(protocol),
    );
    t.after(() => exporter.shutdown());
    const spans = someSpans();
    const result = await exported(exporter, spans);
    assert.equal(result.code, ExportResultCode.SUCCESS, String(result.error));
    assert.equal(r.got.length, 1);
    const [sent] = r.got;
    assert.equal(sent.path, '/v1/traces');
    assert.equal(sent.headers['x-team'], 'keys');
    assert.equal(sent.headers['content-type'], protocol === 'http/json' ? 'application/json' : 'application/x-protobuf');
    const serializer = protocol === 'http/json' ? JsonTraceSerializer : ProtobufTraceSerializer;
    assert.deepEqual(sent.body, Buffer.from(serializer.serializeRequest(spans)!));
  });
}

test('a receiver that refuses the batch (400) fails the export; the exporter goes on with the next', async (t) => {
  const refusing = await receiver(400);
  t.after(refusing.close);
  const exporter = await withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: refusing.url }, async () => new ThreadSpanExporter('http/protobuf'));
  t.after(() => exporter.shutdown());
  const first = await exported(exporter, someSpans());
  assert.equal(first.code, ExportResultCode.FAILED);
  assert.match(String(first.error), /400|Bad Request/);
  const second = await exported(exporter, someSpans());
  assert.equal(second.code, ExportResultCode.FAILED);
  assert.equal(refusing.got.length, 2);
});

test('after shutdown, an export fails at once and sends nothing; forceFlush and shutdown again return', async (t) => {
  const r = await receiver();
  t.after(r.close);
  const exporter = await withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: r.url }, async () => new ThreadSpanExporter('http/protobuf'));
  await exporter.shutdown();
  const result = await exported(exporter, someSpans());
  assert.equal(result.code, ExportResultCode.FAILED);
  await exporter.forceFlush();
  await exporter.shutdown();
  assert.equal(r.got.length, 0);
});
