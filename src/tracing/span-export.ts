import { Worker } from 'node:worker_threads';
import { once } from 'node:events';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { FromExportThread, ToExportThread } from './span-export-thread.ts';

/**
 * The OTLP/HTTP span exporter (`http/protobuf` or `http/json`), its requests sent from a worker thread
 * (span-export-thread.ts): the batches are serialized here, as the SDK's exporter serializes them, and sent there
 * with the SDK's own transport and settings. Why a thread: an HTTP client in the server's thread shares Node's
 * stream and HTTP code with the requests the server answers, and its other object shapes leave that code slower
 * for every request (docs/performance.md, "Traces"): at 1% sampling, an export every few seconds cost more
 * than the spans themselves. Should the thread fail, every export after it fails (the spans are dropped), and
 * the server goes on.
 */
export class ThreadSpanExporter implements SpanExporter {
  readonly #worker: Worker;
  readonly #serializer: typeof ProtobufTraceSerializer | typeof JsonTraceSerializer;
  readonly #pending = new Map<number, (result: ExportResult) => void>();
  #next = 0;
  #gone: Error | undefined;

  constructor(protocol: 'http/protobuf' | 'http/json') {
    this.#serializer = protocol === 'http/json' ? JsonTraceSerializer : ProtobufTraceSerializer;
    this.#worker = new Worker(new URL('./span-export-thread.ts', import.meta.url), {
      workerData: { protocol },
      // Not the process' own flags: some (--input-type of `node -e`) stop a worker from loading a file.
      execArgv: ['--disable-warning=ExperimentalWarning'],
    });
    this.#worker.on('message', ({ id, code, error }: FromExportThread) =>
      this.#settle(id, { code, error: error ? new Error(error) : undefined }),
    );
    const lost = (err?: Error) => {
      this.#gone ??= err ?? new Error('the span export thread ended');
      for (const id of [...this.#pending.keys()]) this.#settle(id, { code: ExportResultCode.FAILED, error: this.#gone });
    };
    this.#worker.on('error', lost);
    this.#worker.on('exit', () => lost());
    this.#worker.unref();
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    const body = this.#gone ? undefined : this.#serializer.serializeRequest(spans);
    if (body) this.#send({ id: this.#id(resultCallback), body });
    else resultCallback({ code: ExportResultCode.FAILED, error: this.#gone ?? new Error('spans could not be serialized') });
  }

  forceFlush(): Promise<void> {
    if (this.#gone) return Promise.resolve();
    return new Promise((resolve) => this.#send({ id: this.#id(() => resolve()), flush: true }));
  }

  async shutdown(): Promise<void> {
    if (this.#gone) return;
    const exited = once(this.#worker, 'exit');
    this.#send('shutdown');
    // The thread sends what it still holds (the delegate's own timeout bounds each request), then ends.
    const timer = setTimeout(() => void this.#worker.terminate(), 10_000);
    await exited.catch(() => {});
    clearTimeout(timer);
  }

  #id(done: (result: ExportResult) => void): number {
    const id = ++this.#next;
    this.#pending.set(id, done);
    return id;
  }

  #send(message: ToExportThread): void {
    this.#worker.postMessage(message);
  }

  #settle(id: number, result: ExportResult): void {
    const done = this.#pending.get(id);
    this.#pending.delete(id);
    done?.(result);
  }
}
