import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { listen, send, withoutRequestId, type Reply } from '../helpers/lane.ts';
import { Ajv } from 'ajv';
import { DIALECTS, capturedErrorLog, freshStore, world, type World } from '../helpers/harness.ts';
import { windowWithRoom } from '../helpers/timing.ts';
import { REQUEST_ID } from '../helpers/formats.ts';
import { assertV1ErrorMembers } from '../helpers/errors.ts';
import { buildApp } from '../../src/app.ts';
import { createLane } from '../../src/http/lane.ts';
import { verifyKeyOperation } from '../../src/http/lane-operations.ts';
import { guardedValidator } from '../../src/http/input-guards.ts';
import { VERIFY_BODY_LIMIT as LANE_MAX_BODY, VERIFY_PATH } from '../../src/http/v1/routes/keys.verify-key.ts';
import { createMetrics } from '../../src/http/metrics.ts';
import type { Verifier } from '../../src/services/verification/verifier.ts';

for (const dialect of DIALECTS) {
  describe(`keys.verifyKey over HTTP: the verification lane (${dialect})`, () => {
    let w: World;
    let base: URL;
    let seenByFastify: () => number;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      ({ base, seenByFastify } = await listen(w.app, VERIFY_PATH));
      apiId = await w.createApi();
    });
    after(() => w.close());

    const JSON_TYPE = { 'content-type': 'application/json' };
    const overHttp = (body: string, headers: Record<string, string> = JSON_TYPE, path = VERIFY_PATH, method = 'POST') =>
      send(base, method, path, body, headers);
    const throughFastify = async (body: string): Promise<Reply> => {
      const res = await w.app.inject({ method: 'POST', url: VERIFY_PATH, payload: body, headers: JSON_TYPE });
      return {
        status: res.statusCode,
        contentType: String(res.headers['content-type']),
        requestId: String(res.headers['x-request-id']),
        json: res.json(),
        closesConnection: res.headers.connection === 'close',
      };
    };

    test('answers every outcome and every bad request exactly as the Fastify route does, without passing through Fastify', async () => {
      const otherApi = await w.createApi('other-api');
      const full = await w.createKey({
        apiId,
        name: 'full',
        externalId: 'user_lane',
        meta: { plan: 'pro', nested: { a: [1, 2] } },
        environment: 'live',
        roles: ['reader'],
        permissions: ['docs.read'],
        expires: Date.now() + 3_600_000,
      });
      const disabled = await w.createKey({ apiId, enabled: false });
      const expired = await w.createKey({ apiId, expires: Date.now() + 1_000 });
      await new Promise((r) => setTimeout(r, 1_100));
      const cases: Array<[string, string]> = [
        ['VALID with every attribute', JSON.stringify({ key: full.key })],
        [
          'VALID with its own apiId and a satisfied query',
          JSON.stringify({ key: full.key, apiId, authorization: { permissions: { or: ['docs.read', 'x'] } } }),
        ],
        ['FORBIDDEN: another API of the workspace', JSON.stringify({ key: full.key, apiId: otherApi })],
        ['NOT_FOUND: an unknown apiId', JSON.stringify({ key: full.key, apiId: 'api_unknown' })],
        ['NOT_FOUND: an unknown key', JSON.stringify({ key: 'nope_123' })],
        [
          'INSUFFICIENT_PERMISSIONS',
          JSON.stringify({ key: full.key, authorization: { permissions: { and: ['docs.read', 'docs.write'] } } }),
        ],
        ['DISABLED', JSON.stringify({ key: disabled.key })],
        ['EXPIRED', JSON.stringify({ key: expired.key })],
        ['undeclared members are dropped', JSON.stringify({ key: full.key, ownerId: 'ignored', extra: { deep: true } })],
        ['400: invalid permission query', JSON.stringify({ key: full.key, authorization: { permissions: { and: 5 } } })],
        ['400: every schema problem listed', JSON.stringify({ key: 5, remaining: { cost: -1 }, ratelimits: [{ name: '' }] })],
        ['400: key missing', '{}'],
        ['400: a body that is not an object', '[1,2]'],
        ['400: ratelimit neither configured nor inline', JSON.stringify({ key: full.key, ratelimits: [{ name: 'nope' }] })],
        ['400: not JSON', '{"key":'],
        ['400: empty body', ''],
        ['400: prototype poisoning', '{"key":"a","__proto__":{"x":1}}'],
      ];
      const closing: string[] = [];
      for (const [name, body] of cases) {
        const seen = seenByFastify();
        const lane = await overHttp(body);
        assert.equal(seenByFastify(), seen, `${name}: a request the lane takes never reaches Fastify`);
        const route = await throughFastify(body);
        assert.equal(lane.status, route.status, `${name}: ${JSON.stringify(lane.json)}`);
        assert.equal(lane.contentType, route.contentType, name);
        assert.equal(
          lane.closesConnection,
          route.closesConnection,
          `${name}: the connection is closed after a body that is not JSON, kept otherwise`,
        );
        assert.deepEqual(withoutRequestId(lane), withoutRequestId(route), name);
        assert.notEqual(lane.requestId, route.requestId, name);
        if (lane.closesConnection) closing.push(name);
      }
      assert.deepEqual(closing, ['400: not JSON', '400: empty body', '400: prototype poisoning']);
    });

    test('what the hooks add to every response, the lane adds too: the same header set as the Fastify route over HTTP', async () => {
      // `application/json; via=route` is JSON to Fastify but not a Content-Type the lane takes, so Fastify's route answers it.
      const headersOf = (contentType: string, body: string) =>
        new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
          const req = httpRequest(
            { host: base.hostname, port: base.port, method: 'POST', path: VERIFY_PATH, headers: { 'content-type': contentType } },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.headers));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      // Values that differ per response: when it was sent, its id, and its length (the request id is in the body too).
      const comparable = (h: Record<string, string | string[] | undefined>) =>
        Object.fromEntries(Object.entries(h).filter(([name]) => !['date', 'x-request-id', 'content-length'].includes(name)));
      const { key } = await w.createKey({ apiId });
      for (const body of [JSON.stringify({ key }), JSON.stringify({ key: 'nope_1' }), '{}', '{"key":']) {
        const seen = seenByFastify();
        const lane = await headersOf('application/json', body);
        assert.equal(seenByFastify(), seen, 'the lane answered');
        const route = await headersOf('application/json; via=route', body);
        assert.equal(seenByFastify(), seen + 1, 'Fastify answered');
        assert.deepEqual(Object.keys(lane).sort(), Object.keys(route).sort(), body);
        assert.deepEqual(comparable(lane), comparable(route), body);
        assert.match(String(lane['x-request-id']), REQUEST_ID);
      }
    });

    test('credits and rate limits are spent once per request, whichever path answers', async () => {
      const credited = await w.createKey({ apiId, remaining: 3 });
      const body = JSON.stringify({ key: credited.key });
      const codes = [];
      for (const path of ['lane', 'route', 'lane', 'lane', 'route'] as const) {
        const a = path === 'lane' ? await overHttp(body) : await throughFastify(body);
        codes.push(`${a.json.code}:${a.json.remaining}`);
      }
      assert.deepEqual(codes, ['VALID:2', 'VALID:1', 'VALID:0', 'USAGE_EXCEEDED:0', 'USAGE_EXCEEDED:0']);
      const limited = await w.createKey({ apiId, ratelimit: { limit: 2, duration: 60_000 } });
      const limitedBody = JSON.stringify({ key: limited.key });
      await windowWithRoom(60_000, 5_000); // the three in one window of the minute
      assert.equal((await overHttp(limitedBody)).json.code, 'VALID');
      assert.equal((await throughFastify(limitedBody)).json.code, 'VALID');
      const third = await overHttp(limitedBody);
      assert.equal(third.json.code, 'RATE_LIMITED');
      assert.equal(third.json.ratelimit.remaining, 0);
    });

    test('requests the lane does not take are answered by the Fastify route', async () => {
      const { key } = await w.createKey({ apiId });
      const body = JSON.stringify({ key });
      const before = seenByFastify();
      const cases: Array<[string, () => Promise<Reply>, number, string | undefined]> = [
        ['a query string', () => overHttp(body, JSON_TYPE, `${VERIFY_PATH}?trace=1`), 200, 'VALID'],
        ['a chunked body', () => overHttp(body, { ...JSON_TYPE, 'transfer-encoding': 'chunked' }), 200, 'VALID'],
        // Over the operation's body limit: Fastify's route answers it, with the 413 every path gives.
        ['a body over LANE_MAX_BODY', () => overHttp(JSON.stringify({ key, padding: 'x'.repeat(LANE_MAX_BODY) })), 413, undefined],
        ['Content-Type text/plain', () => overHttp(body, { 'content-type': 'text/plain' }), 415, undefined],
        ['no Content-Type', () => overHttp(body, {}), 415, undefined],
        ['GET', () => send(base, 'GET', VERIFY_PATH, undefined, {}), 405, undefined],
      ];
      for (const [name, call, status, code] of cases) {
        const a = await call();
        assert.equal(a.status, status, `${name}: ${JSON.stringify(a.json)}`);
        if (code) assert.equal(a.json.code, code, name);
        else assert.equal(a.json.error.status, status, name);
        assert.match(a.requestId, REQUEST_ID);
      }
      assert.equal(seenByFastify() - before, cases.length, 'each of them went through Fastify');
    });

    test('its answers are counted in /metrics by route and status', async () => {
      const count = async (status: number) => {
        const text = (await w.app.inject({ method: 'GET', url: '/metrics' })).body;
        const m = new RegExp(`^keyhold_http_requests_total\\{route="/v1/keys\\.verifyKey",status="${status}"\\} (\\d+)$`, 'm').exec(text);
        return m ? Number(m[1]) : 0;
      };
      const [ok, bad] = [await count(200), await count(400)];
      await overHttp(JSON.stringify({ key: 'nope_1' }));
      await overHttp(JSON.stringify({ key: 'nope_2' }));
      await overHttp('{}');
      assert.equal(await count(200), ok + 2);
      assert.equal(await count(400), bad + 1);
    });

    test('an internal failure → 500 envelope without the internal message, logged with the request id', async () => {
      const fresh = await freshStore(dialect);
      const { logger, lines } = capturedErrorLog();
      const app = await buildApp({ store: fresh.store }, { logger });
      try {
        const { base: freshBase, seenByFastify: freshSeen } = await listen(app, VERIFY_PATH);
        // The store goes away under the running app: looking up a key that is not cached fails inside the driver.
        await fresh.close();
        const res = await send(freshBase, 'POST', VERIFY_PATH, JSON.stringify({ key: 'any_key' }), JSON_TYPE);
        assert.equal(res.status, 500);
        assert.equal(res.json.error.code, 'INTERNAL_SERVER_ERROR');
        assert.equal(res.json.meta.requestId, res.requestId);
        assertV1ErrorMembers(res.json);
        const logged = lines.map((l) => JSON.parse(l)).find((l) => l.requestId === res.requestId);
        assert.ok(logged, `no log line for ${res.requestId}: ${lines.join('')}`);
        assert.ok(!JSON.stringify(res.json).includes(logged.err.message), 'the 500 body echoes the internal message');
        assert.equal(freshSeen(), 0);
      } finally {
        await app.close();
      }
    });
  });
}

describe('verification lane: what it takes', () => {
  const lane = () =>
    createLane({
      operations: [
        verifyKeyOperation(
          { verify: async () => ({ valid: false, code: 'NOT_FOUND' }) } as unknown as Verifier,
          guardedValidator(new Ajv(), { type: 'object' }, 'body'),
        ),
      ],
      parseJson: (_req, body, done) => done(null, JSON.parse(body as string)),
      metrics: createMetrics(false),
    });
  const request = (method: string, url: string, headers: Record<string, string>) =>
    Object.assign(new EventEmitter(), { method, url, headers }) as unknown as IncomingMessage;
  const response = {} as ServerResponse;
  const json = { 'content-type': 'application/json', 'content-length': '10' };

  test('POST /v1/keys.verifyKey with a JSON body of known length up to LANE_MAX_BODY, until closed', () => {
    const l = lane();
    assert.equal(l.take(request('POST', VERIFY_PATH, json), response), true);
    assert.equal(l.take(request('POST', VERIFY_PATH, { ...json, 'content-type': 'Application/JSON; Charset=UTF-8' }), response), true);
    assert.equal(l.take(request('POST', VERIFY_PATH, { ...json, 'content-length': String(LANE_MAX_BODY) }), response), true);
    for (const [method, url, headers] of [
      ['GET', VERIFY_PATH, json],
      ['POST', '/v1/keys.verifyKey?x=1', json],
      ['POST', '/v1/liveness', json],
      ['POST', VERIFY_PATH, { ...json, 'content-length': String(LANE_MAX_BODY + 1) }],
      ['POST', VERIFY_PATH, { 'content-type': 'application/json' }],
      ['POST', VERIFY_PATH, { ...json, 'transfer-encoding': 'chunked' }],
      ['POST', VERIFY_PATH, { ...json, 'content-type': 'application/json; charset=latin1' }],
      ['POST', VERIFY_PATH, { 'content-length': '10' }],
    ] as const) {
      assert.equal(l.take(request(method, url, headers), response), false, `${method} ${url} ${JSON.stringify(headers)}`);
    }
    l.close();
    assert.equal(l.take(request('POST', VERIFY_PATH, json), response), false, 'nothing once the server closes');
  });
});
