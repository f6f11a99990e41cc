// Requests to a listening app over real HTTP, for the lane's tests (test/http/verify-lane.test.ts,
// test/http/lane-ratelimits-limit.test.ts): the lane only runs on a listening server; app.inject always
// goes through Fastify.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { REQUEST_ID } from './formats.ts';
import type { Answer } from './json.ts';
import type { App } from '../../src/http/types.ts';

/** An answer as these tests compare them: the status, the headers that matter and the parsed body. */
export interface Reply {
  status: number;
  contentType: string;
  requestId: string;
  json: Answer;
  closesConnection: boolean;
}

/** One HTTP/1.1 request to a listening app: with Content-Length, unless the headers ask for a chunked body. */
export function send(base: URL, method: string, path: string, body: string | undefined, headers: Record<string, string>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: base.hostname, port: base.port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          contentType: String(res.headers['content-type']),
          requestId: String(res.headers['x-request-id']),
          json: JSON.parse(text),
          closesConnection: res.headers.connection === 'close',
        }),
      );
    });
    req.on('error', reject);
    if (headers['transfer-encoding'] === 'chunked') {
      req.write(body ?? '');
      req.end();
    } else {
      req.end(body);
    }
  });
}

/** The answer without its request id (which differs per request), after checking that body and header agree on it. */
export function withoutRequestId(a: Reply): unknown {
  assert.match(a.requestId, REQUEST_ID);
  const { json } = a;
  if (json.error) {
    assert.equal(json.meta.requestId, a.requestId);
    assert.equal(json.error.requestId, a.requestId);
    return { ...json, meta: { ...json.meta, requestId: undefined }, error: { ...json.error, requestId: undefined } };
  }
  assert.equal(json.requestId, a.requestId);
  return { ...json, requestId: undefined };
}

/**
 * Starts the app on a free port, counting the requests to `path` that Fastify answered. Counted when the
 * response has been handed to the socket ('finish', Fastify's onResponse), before the client can read it; an
 * onRequest hook added here would run after the app's own, so a request refused by authentication would
 * not be counted.
 */
export async function listen(app: App, path: string): Promise<{ base: URL; seenByFastify(): number }> {
  let seen = 0;
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.url.split('?')[0] === path) seen++;
    done();
  });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return { base: new URL(address), seenByFastify: () => seen };
}
