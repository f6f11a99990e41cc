import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { Command, Redis } from 'ioredis';
import type { Job } from '../jobs/queue.ts';
import type { AttemptResult } from '../services/webhooks/attempt.ts';
import { markFailed } from './span-errors.ts';

/**
 * A CLIENT span per command `client` sends inside a recorded span (a request's, a job's), named by the command
 * (`evalsha`, `publish`) with `db.system` redis and `db.operation.name`: never its keys or arguments. Commands
 * resent after a reconnection keep their one span.
 */
export function traceRedis(client: Redis, tracer: Tracer): void {
  const send = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
  const traced = new WeakSet<Command>();
  client.sendCommand = ((command: Command, ...rest: unknown[]) => {
    if (!traced.has(command) && trace.getActiveSpan()?.isRecording()) {
      traced.add(command);
      const attributes = { 'db.system': 'redis', 'db.operation.name': command.name };
      const span = tracer.startSpan(command.name, { kind: SpanKind.CLIENT, attributes });
      command.promise.then(
        () => span.end(),
        (err: unknown) => {
          markFailed(span, err);
          span.end();
        },
      );
    }
    return send(command, ...rest);
  }) as Redis['sendCommand'];
}

/**
 * One outgoing POST (a webhook delivery) as a CLIENT span, with the W3C `traceparent` of that span added to the
 * request's headers: `http.request.method`, `server.address`, `server.port` and `http.response.status_code`. Not
 * the URL: its path or query may hold a token.
 */
export function tracedSend(
  tracer: Tracer,
  url: string,
  headers: Record<string, string>,
  send: (headers: Record<string, string>) => Promise<AttemptResult>,
): Promise<AttemptResult> {
  const attributes: Record<string, string | number> = { 'http.request.method': 'POST' };
  const target = URL.canParse(url) ? new URL(url) : undefined;
  if (target) {
    attributes['server.address'] = target.hostname;
    attributes['server.port'] = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
  }
  return tracer.startActiveSpan('POST', { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const carrier = { ...headers };
    propagation.inject(context.active(), carrier);
    try {
      const result = await send(carrier);
      if (result.statusCode !== undefined) span.setAttribute('http.response.status_code', result.statusCode);
      if (result.error !== undefined) {
        span.setAttribute('error.type', result.statusCode === undefined ? 'no_response' : String(result.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      return result;
    } catch (err) {
      markFailed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * One run of a job as a trace of its own (`job webhook.deliver`): its statements and sends are children. With
 * `keyhold.job.task`, `keyhold.job.id`, `keyhold.job.attempt` and `keyhold.job.outcome`; not the payload.
 */
export function tracedJob<T extends { outcome: string }>(tracer: Tracer, job: Job, run: () => Promise<T>): Promise<T> {
  const attributes = { 'keyhold.job.task': job.task, 'keyhold.job.id': job.id, 'keyhold.job.attempt': job.attempts };
  return tracer.startActiveSpan(`job ${job.task}`, { kind: SpanKind.CONSUMER, attributes }, ROOT_CONTEXT, async (span) => {
    try {
      const result = await run();
      span.setAttribute('keyhold.job.outcome', result.outcome);
      if (result.outcome !== 'completed') span.setStatus({ code: SpanStatusCode.ERROR });
      return result;
    } catch (err) {
      markFailed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}
