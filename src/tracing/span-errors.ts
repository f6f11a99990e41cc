import { type Span, SpanStatusCode } from '@opentelemetry/api';

/**
 * Marks `span` failed with the error's kind only (`error.type`: a driver's code such as SQLITE_BUSY or 23505, else
 * the error's class): an error's message may quote a value (a duplicate key, a URL), so it is never recorded.
 */
export function markFailed(span: Span, err: unknown): void {
  const code = (err as { code?: unknown } | null)?.code;
  const type = typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? code : ((err as Error | null)?.name ?? 'Error');
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}
