import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { DIALECTS, capturedErrorLog, freshStore, world, type World } from '../helpers/harness.ts';
import { REQUEST_ID } from '../helpers/formats.ts';
import { declaredRoutes } from '../helpers/routes.ts';
import { BODY_LIMIT, buildApp } from '../../src/app.ts';
import { ROUTES } from '../../src/http/v1/operations.ts';
import { ERROR_CATALOG, STATUS_TITLES, type ErrorKind } from '../../src/domain/errors.ts';
import { assertV1ErrorMembers } from '../helpers/errors.ts';

/** Asserts the error envelope of SPEC §2 and returns its body. */
function assertEnvelope(res: LightMyRequestResponse, status: number, kind: ErrorKind) {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['error', 'meta']);
  assert.deepEqual(Object.keys(body.meta), ['requestId']);
  assert.match(body.meta.requestId, REQUEST_ID);
  assert.equal(res.headers['x-request-id'], body.meta.requestId);
  const { error } = body;
  for (const member of ['title', 'detail', 'status', 'type', 'code']) assert.ok(member in error, `error.${member} missing in ${res.body}`);
  assertV1ErrorMembers(body, res.body);
  assert.equal(error.status, status);
  assert.equal(error.title, STATUS_TITLES[status]);
  assert.equal(error.type, `https://keyhold.dev/errors/${kind}`);
  assert.equal(error.code, ERROR_CATALOG[kind].code);
  assert.equal(typeof error.detail, 'string');
  assert.ok(error.detail.length > 0);
  return body;
}

for (const dialect of DIALECTS) {
  describe(`HTTP surface (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const post = (url: string, payload: string | Buffer | undefined, headers: Record<string, string> = {}) =>
      w.app.inject({ method: 'POST', url, payload, headers });
    const json = (key?: string) => ({ 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) });

    describe('error envelope', () => {
      test('unknown path → 404 request/route-not-found, without asking for a key', async () => {
        for (const [method, url] of [
          ['GET', '/nope'],
          ['POST', '/v1/keys.nope'],
          ['GET', '/v1/apis.getApi/extra?apiId=x'],
        ] as const) {
          const res = await w.app.inject({ method, url });
          const body = assertEnvelope(res, 404, 'request/route-not-found');
          assert.equal(body.error.code, 'NOT_FOUND');
        }
      });

      test('wrong method on a known path → 405 with an Allow header, before authentication', async () => {
        const getOnly = await w.app.inject({ method: 'POST', url: '/v1/apis.getApi', headers: json(w.root), payload: '{}' });
        assertEnvelope(getOnly, 405, 'request/method-not-allowed');
        assert.equal(getOnly.headers.allow, 'GET');
        const postOnly = await w.app.inject({ method: 'GET', url: '/v1/apis.createApi?name=abc' });
        assertEnvelope(postOnly, 405, 'request/method-not-allowed');
        assert.equal(postOnly.headers.allow, 'POST');
        const del = await w.app.inject({ method: 'DELETE', url: '/v1/keys.createKey' });
        assertEnvelope(del, 405, 'request/method-not-allowed');
        assert.equal(del.headers.allow, 'POST');
      });

      test('invalid JSON → 400 request/invalid-json', async () => {
        for (const payload of ['{"name":', 'not json', '{"name":"abc"}}']) {
          const body = assertEnvelope(await post('/v1/apis.createApi', payload, json(w.root)), 400, 'request/invalid-json');
          assert.equal(body.error.code, 'BAD_REQUEST');
        }
      });

      test('a body sent as text/plain (or without Content-Type) → 415', async () => {
        for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }, {}] as Array<
          Record<string, string>
        >) {
          const res = await post('/v1/apis.createApi', '{"name":"plain"}', { ...headers, authorization: `Bearer ${w.root}` });
          const body = assertEnvelope(res, 415, 'request/unsupported-media-type');
          assert.equal(body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
        }
      });

      test('Content-Type with parameters or in capitals is still JSON', async () => {
        for (const type of ['application/json; charset=utf-8', 'Application/JSON']) {
          const res = await post('/v1/apis.createApi', JSON.stringify({ name: 'typed' }), {
            'content-type': type,
            authorization: `Bearer ${w.root}`,
          });
          assert.equal(res.statusCode, 200, res.body);
        }
      });

      test('a body over 5 MiB → 413; exactly 5 MiB is accepted', async () => {
        const over = Buffer.alloc(BODY_LIMIT + 1, ' ');
        over.write('{"name":"big"}');
        const body = assertEnvelope(await post('/v1/apis.createApi', over, json(w.root)), 413, 'request/body-too-large');
        assert.equal(body.error.code, 'PAYLOAD_TOO_LARGE');

        const head = '{"name":"at-limit","padding":"';
        const exact = `${head + 'x'.repeat(BODY_LIMIT - head.length - 2)}"}`;
        assert.equal(Buffer.byteLength(exact), BODY_LIMIT);
        const ok = await post('/v1/apis.createApi', exact, json(w.root));
        assert.equal(ok.statusCode, 200, ok.body.slice(0, 300));
      });

      test('POST without a body → 400', async () => {
        const none = assertEnvelope(
          await post('/v1/apis.createApi', undefined, { authorization: `Bearer ${w.root}` }),
          400,
          'request/invalid-body',
        );
        assert.deepEqual(none.error.errors, [{ path: '/', message: 'must be object' }]);
        assertEnvelope(await post('/v1/apis.createApi', undefined, json(w.root)), 400, 'request/invalid-json');
        assertEnvelope(await post('/v1/apis.createApi', '', json(w.root)), 400, 'request/invalid-json');
      });

      test('a body that is JSON but not an object → 400 request/invalid-body', async () => {
        for (const payload of ['[1]', '"name"', 'null', '42']) {
          assertEnvelope(await post('/v1/apis.createApi', payload, json(w.root)), 400, 'request/invalid-body');
        }
      });

      test('a path that is not valid percent-encoding → 400 in the envelope, with X-Request-Id', async () => {
        assertEnvelope(await w.app.inject({ method: 'GET', url: '/v1/%E0%A4%A' }), 400, 'request/invalid-body');
      });

      test('authentication comes before the body: no key + any bad body → 401, never 400/413/415', async () => {
        const cases: Array<[string | Buffer | undefined, Record<string, string>]> = [
          ['{"name":', json()],
          ['{"name":1}', json()],
          [undefined, {}],
          ['{"name":"abc"}', { 'content-type': 'text/plain' }],
          [Buffer.alloc(BODY_LIMIT + 10, ' '), json()],
        ];
        for (const [payload, headers] of cases) {
          const body = assertEnvelope(await post('/v1/apis.createApi', payload, headers), 401, 'auth/missing');
          assert.equal(body.error.code, 'UNAUTHORIZED');
        }
        const wrong = await post('/v1/apis.createApi', '{"name":', {
          ...json(),
          authorization: 'Bearer kh_root_1111111111111111111111111',
        });
        assertEnvelope(wrong, 401, 'auth/invalid');
        const query = await w.app.inject({ method: 'GET', url: '/v1/apis.listKeys?limit=not-a-number' });
        assertEnvelope(query, 401, 'auth/missing');
      });

      test('every response carries its own X-Request-Id; a client-sent X-Request-Id is not trusted', async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 3; i++) {
          const res = await w.app.inject({ method: 'GET', url: '/v1/liveness', headers: { 'x-request-id': 'req_chosen-by-client' } });
          assert.equal(res.statusCode, 200);
          const id = String(res.headers['x-request-id']);
          assert.match(id, REQUEST_ID);
          ids.add(id);
        }
        assert.equal(ids.size, 3);
        const created = await post('/v1/apis.createApi', JSON.stringify({ name: 'with-id' }), json(w.root));
        assert.equal(created.statusCode, 200, created.body);
        assert.match(String(created.headers['x-request-id']), REQUEST_ID);
        for (const url of ['/openapi.json', '/metrics'])
          assert.match(String((await w.app.inject({ method: 'GET', url })).headers['x-request-id']), REQUEST_ID);
      });

      test('an internal failure → 500 envelope that does not echo the internal message; it is logged with the request id', async () => {
        const fresh = await freshStore(dialect);
        const { logger, lines } = capturedErrorLog();
        const app = await buildApp({ store: fresh.store }, { logger });
        try {
          // The store goes away under the running app: the root-key lookup fails inside the driver.
          await fresh.close();
          const res = await app.inject({ method: 'POST', url: '/v1/apis.createApi', headers: json(w.root), payload: '{"name":"doomed"}' });
          const body = assertEnvelope(res, 500, 'internal');
          assert.equal(body.error.code, 'INTERNAL_SERVER_ERROR');
          assert.equal(body.error.title, 'Internal Server Error');
          const logged = lines.map((l) => JSON.parse(l)).find((l) => l.requestId === body.meta.requestId);
          assert.ok(logged, `no log line for ${body.meta.requestId}: ${lines.join('')}`);
          const internalMessage: string = logged.err.message;
          assert.ok(internalMessage.length > 0);
          assert.ok(!res.body.includes(internalMessage), `the 500 body echoes "${internalMessage}"`);
          assert.ok(!/\bat .+:\d+:\d+/.test(res.body), 'the 500 body holds a stack trace');
          assert.ok(!JSON.stringify(lines).includes(w.root), 'the root key was logged');
        } finally {
          await app.close();
        }
      });
    });

    describe('documentation, metrics, liveness', () => {
      test('GET /openapi.json is OpenAPI 3.1 with every registered /v1 route; authenticated operations say what they require', async () => {
        const res = await w.app.inject({ method: 'GET', url: '/openapi.json' });
        assert.equal(res.statusCode, 200);
        const doc = res.json();
        assert.match(doc.openapi, /^3\.1\./);

        const routes = declaredRoutes({ store: w.store }).filter((r) => r.url.startsWith('/v1/'));
        assert.ok(routes.length >= ROUTES.length, 'every route file registers at least one route');
        for (const r of routes) assert.ok(w.app.hasRoute({ method: r.method as 'GET', url: r.url }), `${r.method} ${r.url} is not served`);
        assert.ok(routes.some((r) => r.url === '/v1/liveness' && r.isPublic));

        const documented = Object.keys(doc.paths)
          .filter((p) => p.startsWith('/v1/'))
          .sort();
        assert.deepEqual(documented, [...new Set(routes.map((r) => r.url))].sort());
        for (const r of routes) {
          const op = doc.paths[r.url][r.method.toLowerCase()];
          assert.ok(op, `${r.method} ${r.url} is missing from the OpenAPI document`);
          assert.ok(op.responses?.['200'] || op.responses?.['202'], `${r.method} ${r.url} documents no success response`);
          if (r.isPublic) continue;
          assert.match(op.description ?? '', /Requires:/, `${r.method} ${r.url} does not say which permission it requires`);
          assert.deepEqual(op.security, [{ rootKey: [] }], `${r.method} ${r.url} does not name the root-key scheme`);
        }
        assert.equal(doc.components.securitySchemes.rootKey.scheme, 'bearer');
      });

      test('GET /docs renders the API documentation', async () => {
        let res = await w.app.inject({ method: 'GET', url: '/docs' });
        for (let hops = 0; res.statusCode >= 300 && res.statusCode < 400 && hops < 3; hops++) {
          res = await w.app.inject({ method: 'GET', url: new URL(String(res.headers.location), 'http://localhost/docs').pathname });
        }
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^text\/html/);
      });

      test('GET /metrics serves Prometheus metrics, counting requests by route and status', async () => {
        await w.app.inject({ method: 'GET', url: '/v1/liveness' });
        const res = await w.app.inject({ method: 'GET', url: '/metrics' });
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^text\/plain/);
        assert.match(res.body, /^# TYPE keyhold_http_requests_total counter$/m);
        assert.match(res.body, /^keyhold_http_requests_total\{route="\/v1\/liveness",status="200"\} [1-9]\d*$/m);
        assert.ok(!res.body.includes(w.root), 'a root key appears in the metrics');
      });

      test('GET /v1/liveness needs no key', async () => {
        const res = await w.app.inject({ method: 'GET', url: '/v1/liveness' });
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json(), { status: 'ok', services: { database: dialect } });
      });
    });
  });
}
