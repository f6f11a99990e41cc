import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { WebhookSettings } from '../../config/webhooks.ts';
import { MAX_RESPONSE_BYTES } from './delivery-rules.ts';
import { checkedAddresses, hostOf, urlFormProblem } from './url-safety.ts';

/** What one attempt came to: the status the endpoint answered, or why there was none. */
export interface AttemptResult {
  statusCode?: number;
  error?: string;
}

/** What traces an attempt (src/tracing.ts), when traces are on: `send` is given the headers to send, `traceparent` added. */
export interface SendTracing {
  send(
    url: string,
    headers: Record<string, string>,
    send: (headers: Record<string, string>) => Promise<AttemptResult>,
  ): Promise<AttemptResult>;
}

const MAX_ERROR_CHARS = 500;

/**
 * One POST of `body` to `url` with `headers`. The URL's rules are checked again, and the host resolved and
 * its addresses checked now; the connection then goes to those checked addresses only (the resolver is not
 * asked again, so a name cannot rebind between check and connect). Redirects are never followed; at most
 * MAX_RESPONSE_BYTES of the response are read; the whole attempt ends within `settings.timeoutMs`.
 */
export async function attempt(
  url: string,
  headers: Record<string, string>,
  body: string,
  settings: WebhookSettings,
): Promise<AttemptResult> {
  const problem = urlFormProblem(url, settings.allowPrivate);
  if (problem) return { error: `the URL ${problem}` };
  const target = new URL(url);
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await checkedAddresses(hostOf(target), settings.allowPrivate);
  } catch (err) {
    return { error: (err as Error).message };
  }
  const lookup: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (e: null, a: typeof addresses) => void)(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  };
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const done = (r: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(r.error ? { ...r, error: r.error.slice(0, MAX_ERROR_CHARS) } : r);
    };
    const req = send(target, {
      method: 'POST',
      lookup,
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      agent: false,
    });
    const timer = setTimeout(() => done({ error: `no answer within ${settings.timeoutMs} ms` }), settings.timeoutMs);
    req.on('error', (err) => done({ error: err.message || (err as NodeJS.ErrnoException).code || 'connection failed' }));
    req.on('response', (res: IncomingMessage) => readBounded(res, (r) => done(r)));
    req.end(body);
  });
}

/** Reads at most MAX_RESPONSE_BYTES of the response (the rest is dropped with the connection), then reports its status. */
function readBounded(res: IncomingMessage, done: (r: AttemptResult) => void): void {
  const statusCode = res.statusCode ?? 0;
  const result: AttemptResult =
    statusCode >= 300 && statusCode < 400
      ? { statusCode, error: `answered ${statusCode}: redirects are not followed` }
      : statusCode >= 200 && statusCode < 300
        ? { statusCode }
        : { statusCode, error: `answered ${statusCode}` };
  let read = 0;
  res.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read >= MAX_RESPONSE_BYTES) done(result);
  });
  res.on('end', () => done(result));
  res.on('error', () => done(result));
}
