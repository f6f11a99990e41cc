import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { InjectOptions } from 'fastify';
import { request as httpRequest } from 'node:http';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { assertV1ErrorMembers, type EnvelopeBody } from '../helpers/errors.ts';
import { BODY_LIMIT } from '../../src/app.ts';
import { createLaneServer, type Lane } from '../../src/http/lane.ts';
import { VERIFY_PATH } from '../../src/http/v1/routes/keys.verify-key.ts';

// SPEC §2: every error body, wherever it is built, carries besides `detail`, `type` and `meta.requestId` the
// members Unkey v1 clients read: `message`, `docs` and `requestId`, equal to them.

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends raw bytes on a new connection and parses the one answer the server writes before closing it. */
function rawExchange(port: number, bytes: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => {
      const [head, body] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
    socket.on('error', reject);
  });
}

/** One POST over HTTP with Content-Length (what the verification lane takes). */
function post(port: number, path: string, body: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers as Record<string, string>, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Asserts the status, the type and the v1 members of an answer, and that its request id is the header's. */
function assertV1Envelope(res: Raw, status: number, kind: string): EnvelopeBody {
  assert.equal(res.status, status, res.body);
  const body = JSON.parse(res.body) as EnvelopeBody;
  assert.equal(body.error.type, `https://keyhold.dev/errors/${kind}`, res.body);
  assert.equal(body.error.docs, `https://keyhold.dev/errors/${kind}`, res.body);
  assert.equal(body.error.requestId, res.headers['x-request-id'], res.body);
  assertV1ErrorMembers(body, res.body);
  return body;
}

for (const dialect of DIALECTS) {
  describe(`error envelope: message, docs and requestId in every error (${dialect})`, () => {
    let w: World;
    let port: number;
    before(async () => {
      w = await world(dialect);
      port = Number(new URL(await w.app.listen({ host: '127.0.0.1', port: 0 })).port);
    });
    after(() => w.close());

    const inject = async (opts: InjectOptions): Promise<Raw> => {
      const res = await w.app.inject(opts);
      return { status: res.statusCode, headers: res.headers as Record<string, string>, body: res.body };
    };
    const json = (key?: string) => ({ 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) });

    test('400 request/invalid-body: message is the detail, next to the listed errors', async () => {
      const res = await inject({ method: 'POST', url: '/v1/apis.createApi', headers: json(w.root), payload: '{"name":"ab"}' });
      const body = assertV1Envelope(res, 400, 'request/invalid-body');
      assert.match(String(body.error.message), /\/name/);
      assert.deepEqual(
        (body.error.errors as Array<{ path: string }>).map((e) => e.path),
        ['/name'],
      );
    });

    test('400 request/invalid-body on a query, and 400 request/invalid-json', async () => {
      assertV1Envelope(await inject({ method: 'GET', url: '/v1/apis.getApi?apiId=', headers: json(w.root) }), 400, 'request/invalid-body');
      assertV1Envelope(
        await inject({ method: 'POST', url: '/v1/apis.createApi', headers: json(w.root), payload: '{"name":' }),
        400,
        'request/invalid-json',
      );
    });

    test('401 auth/missing and auth/invalid', async () => {
      assertV1Envelope(await inject({ method: 'GET', url: '/v1/apis.getApi?apiId=api_x' }), 401, 'auth/missing');
      const unknown = 'kh_root_1111111111111111111111111';
      assertV1Envelope(await inject({ method: 'GET', url: '/v1/apis.getApi?apiId=api_x', headers: json(unknown) }), 401, 'auth/invalid');
    });

    test('403 auth/insufficient-permissions: message names the missing permission', async () => {
      const key = await w.rootKey(['identity.*.read_identity']);
      const res = await inject({ method: 'POST', url: '/v1/apis.createApi', headers: json(key), payload: '{"name":"abc"}' });
      const body = assertV1Envelope(res, 403, 'auth/insufficient-permissions');
      assert.match(String(body.error.message), /api\.\*\.create_api/);
    });

    test('404 request/route-not-found and data/api-not-found', async () => {
      assertV1Envelope(await inject({ method: 'GET', url: '/v1/nope.nope' }), 404, 'request/route-not-found');
      assertV1Envelope(
        await inject({ method: 'GET', url: '/v1/apis.getApi?apiId=api_none', headers: json(w.root) }),
        404,
        'data/api-not-found',
      );
    });

    test('405 request/method-not-allowed', async () => {
      assertV1Envelope(await inject({ method: 'GET', url: '/v1/apis.createApi' }), 405, 'request/method-not-allowed');
    });

    test('413 request/body-too-large and 415 request/unsupported-media-type', async () => {
      const over = Buffer.alloc(BODY_LIMIT + 1, ' ');
      assertV1Envelope(
        await inject({ method: 'POST', url: '/v1/apis.createApi', headers: json(w.root), payload: over }),
        413,
        'request/body-too-large',
      );
      const plain = { 'content-type': 'text/plain', authorization: `Bearer ${w.root}` };
      assertV1Envelope(
        await inject({ method: 'POST', url: '/v1/apis.createApi', headers: plain, payload: '{"name":"abc"}' }),
        415,
        'request/unsupported-media-type',
      );
    });

    test('the verification lane: 400 request/invalid-body and request/invalid-json', async () => {
      const invalid = assertV1Envelope(await post(port, VERIFY_PATH, '{}'), 400, 'request/invalid-body');
      assert.ok(Array.isArray(invalid.error.errors));
      assertV1Envelope(await post(port, VERIFY_PATH, '{"key":'), 400, 'request/invalid-json');
    });

    test('answers outside the request cycle: 431 request/headers-too-large and 400 request/malformed', async () => {
      const long = await rawExchange(port, `GET /v1/apis.getApi?apiId=${'x'.repeat(100 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      assertV1Envelope(long, 431, 'request/headers-too-large');
      assertV1Envelope(await rawExchange(port, 'HELLO THERE\r\n\r\n'), 400, 'request/malformed');
    });
  });
}

test('a request while the server closes: 503 server/shutting-down carries the v1 members too', async () => {
  const closing: Lane = { closing: true, take: () => false, close: () => {} };
  const server = createLaneServer(
    () => assert.fail('a closing server hands nothing to Fastify'),
    () => closing,
    {},
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as { port: number };
    assertV1Envelope(await rawExchange(port, 'GET /v1/liveness HTTP/1.1\r\nHost: x\r\n\r\n'), 503, 'server/shutting-down');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
