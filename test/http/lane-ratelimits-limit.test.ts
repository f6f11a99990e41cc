import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { DIALECTS, freshStore, world, type World } from '../helpers/harness.ts';
import { REQUEST_ID } from '../helpers/formats.ts';
import { listen, send, withoutRequestId, type Reply } from '../helpers/lane.ts';
import { BODY_LIMIT, buildApp } from '../../src/app.ts';
import { LIMIT_LANE_MAX_BODY } from '../../src/http/lane-operations.ts';
import { RATELIMIT_LIMIT_PATH as PATH } from '../../src/http/v1/routes/ratelimits.limit.ts';
import { insertRootKey } from '../../src/services/workspaces/root-keys.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';

/** A window no test run crosses: `reset` is the same for every request of a test. */
const LONG = 31_622_400_000;
const OPERATOR = { type: 'operator' as const, id: 'test' };

/** The answer without what differs per request (its request id), checked where it appears. */
function comparable(a: Reply): unknown {
  if (a.json?.error) return withoutRequestId(a);
  assert.match(a.requestId, REQUEST_ID);
  return a.json;
}

/** The headers of one request over HTTP; `via=route` in the Content-Type makes Fastify's route answer it. */
function headersOf(base: URL, contentType: string, body: string, key?: string) {
  return new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': contentType };
    if (key) headers.authorization = `Bearer ${key}`;
    const req = httpRequest({ host: base.hostname, port: base.port, method: 'POST', path: PATH, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Values that differ per response: when it was sent, its id, and its length (the request id is in the body too). */
const stable = (h: Record<string, string | string[] | undefined>) =>
  Object.fromEntries(Object.entries(h).filter(([name]) => !['date', 'x-request-id', 'content-length'].includes(name)));

for (const dialect of DIALECTS) {
  describe(`ratelimits.limit over HTTP: the lane (${dialect})`, () => {
    let w: World;
    let base: URL;
    let seenByFastify: () => number;
    before(async () => {
      w = await world(dialect);
      ({ base, seenByFastify } = await listen(w.app, PATH));
    });
    after(() => w.close());

    const overHttp = (body: string, key?: string, headers: Record<string, string> = {}) =>
      send(base, 'POST', PATH, body, {
        'content-type': 'application/json',
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...headers,
      });
    const throughFastify = async (body: string, key?: string): Promise<Reply> => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (key) headers.authorization = `Bearer ${key}`;
      const res = await w.app.inject({ method: 'POST', url: PATH, payload: body, headers });
      return {
        status: res.statusCode,
        contentType: String(res.headers['content-type']),
        requestId: String(res.headers['x-request-id']),
        json: res.json(),
        closesConnection: res.headers.connection === 'close',
      };
    };

    test('answers every outcome and every bad request exactly as the Fastify route does, without passing through Fastify', async () => {
      const readOnly = await w.rootKey(['api.*.read_api']);
      const revoked = await w.revokedRootKey();
      const expired = await w.rootKey(['*'], { expiresAt: Date.now() + 500 });
      await new Promise((r) => setTimeout(r, 600));
      const ok = (extra: Record<string, unknown> = {}) =>
        JSON.stringify({ namespace: 'lane', identifier: 'user_1', limit: 10, duration: LONG, cost: 0, ...extra });
      const cases: Array<[string, string, string | undefined]> = [
        ['200: a new namespace is created', ok(), w.root],
        ['200: an existing namespace', ok(), w.root],
        ['200: async, undeclared members dropped', ok({ async: true, extra: { deep: 1 } }), w.root],
        ['200: the default namespace', JSON.stringify({ identifier: 'u', limit: 5, duration: LONG, cost: 0 }), w.root],
        ['403: no ratelimit permission, existing namespace', ok(), readOnly],
        ['403: no permission to create a namespace', ok({ namespace: 'not-yet' }), readOnly],
        ['401: no Authorization header', ok(), undefined],
        ['401: malformed Authorization header', ok(), 'not-a-root-key'],
        ['401: unknown root key', ok(), 'kh_root_1111111111111111111111111'],
        ['401: revoked root key', ok(), revoked],
        ['401: expired root key', ok(), expired],
        ['401 before the body is looked at', '{"identifier":', undefined],
        ['400: every schema problem listed', JSON.stringify({ identifier: '', limit: -1, duration: 'x' }), w.root],
        ['400: identifier missing', JSON.stringify({ limit: 1, duration: 1000 }), w.root],
        ['400: not an object', '[1,2]', w.root],
        ['400: not JSON', '{"identifier":', w.root],
        ['400: empty body', '', w.root],
        ['400: prototype poisoning', '{"identifier":"a","__proto__":{"x":1}}', w.root],
      ];
      const closing: string[] = [];
      for (const [name, body, key] of cases) {
        const seen = seenByFastify();
        const lane = await overHttp(body, key);
        assert.equal(seenByFastify(), seen, `${name}: a request the lane takes never reaches Fastify`);
        const route = await throughFastify(body, key);
        assert.equal(lane.status, route.status, `${name}: ${JSON.stringify(lane.json)}`);
        assert.equal(lane.status, Number(name.slice(0, 3)), `${name}: ${JSON.stringify(lane.json)}`);
        assert.equal(lane.contentType, route.contentType, name);
        assert.equal(lane.closesConnection, route.closesConnection, name);
        assert.deepEqual(comparable(lane), comparable(route), name);
        assert.notEqual(lane.requestId, route.requestId, name);
        if (lane.closesConnection) closing.push(name);
      }
      assert.deepEqual(closing, ['400: not JSON', '400: empty body', '400: prototype poisoning']);
    });

    test('counts once per request, whichever path answers', async () => {
      const body = JSON.stringify({ namespace: 'count', identifier: 'u', limit: 3, duration: LONG });
      const seen = [];
      for (const path of ['lane', 'route', 'lane', 'lane'] as const) {
        const a = path === 'lane' ? await overHttp(body, w.root) : await throughFastify(body, w.root);
        seen.push(`${a.json.success}:${a.json.remaining}`);
      }
      assert.deepEqual(seen, ['true:2', 'true:1', 'true:0', 'false:0']);
    });

    test('what the hooks add to every response, the lane adds too: the same header set as the Fastify route over HTTP', async () => {
      const readOnly = await w.rootKey(['api.*.read_api']);
      const ok = JSON.stringify({ namespace: 'headers', identifier: 'u', limit: 10, duration: LONG, cost: 0 });
      for (const [body, key] of [
        [ok, w.root],
        [ok, readOnly],
        [ok, undefined],
        [ok, 'kh_root_1111111111111111111111112'],
        ['{}', w.root],
        ['{"identifier":', w.root],
      ] as const) {
        const seen = seenByFastify();
        const lane = await headersOf(base, 'application/json', body, key);
        assert.equal(seenByFastify(), seen, 'the lane answered');
        const route = await headersOf(base, 'application/json; via=route', body, key);
        assert.equal(seenByFastify(), seen + 1, 'Fastify answered');
        assert.deepEqual(Object.keys(lane).sort(), Object.keys(route).sort(), `${body} ${key}`);
        assert.deepEqual(stable(lane), stable(route), `${body} ${key}`);
      }
    });

    test('takes bodies up to LIMIT_LANE_MAX_BODY, within the route body limit; larger ones are answered by the route', async () => {
      assert.ok(LIMIT_LANE_MAX_BODY <= BODY_LIMIT);
      const body = JSON.stringify({
        namespace: 'big',
        identifier: 'u',
        limit: 10,
        duration: LONG,
        padding: 'x'.repeat(LIMIT_LANE_MAX_BODY),
      });
      const seen = seenByFastify();
      const a = await overHttp(body, w.root);
      assert.equal(a.status, 200, JSON.stringify(a.json));
      assert.equal(seenByFastify(), seen + 1);
    });
  });
}

describe('ratelimits.limit over HTTP: failed authentications are limited by the hooks own guard (sqlite)', () => {
  test('the lane and the route share one failure count and answer 429 with the same headers, Retry-After included', async () => {
    const fresh = await freshStore('sqlite');
    const app = await buildApp({ store: fresh.store }, { authFailureLimit: 2 });
    try {
      const { workspaceId } = await createWorkspace(fresh.store.db, 'test', OPERATOR);
      const { rootKey } = await insertRootKey(fresh.store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      const { base, seenByFastify } = await listen(app, PATH);
      const body = JSON.stringify({ identifier: 'u', limit: 10, duration: LONG, cost: 0 });
      const unknown = 'kh_root_1111111111111111111111113';
      const json = { 'content-type': 'application/json' };
      // A key that authenticated keeps passing an over-limit address.
      assert.equal((await send(base, 'POST', PATH, body, { ...json, authorization: `Bearer ${rootKey}` })).status, 200);
      assert.equal((await send(base, 'POST', PATH, body, { ...json, authorization: `Bearer ${unknown}` })).status, 401);
      assert.equal(seenByFastify(), 0);
      assert.equal(
        (await app.inject({ method: 'POST', url: PATH, payload: body, headers: { ...json, authorization: `Bearer ${unknown}` } }))
          .statusCode,
        401,
      );
      const route = await headersOf(base, 'application/json; via=route', body, unknown);
      assert.equal(seenByFastify(), 2, 'the injected request and this one');
      const lane = await headersOf(base, 'application/json', body, unknown);
      assert.equal(seenByFastify(), 2);
      for (const h of [lane, route]) assert.match(String(h['retry-after']), /^[1-9]\d*$/);
      assert.deepEqual(Object.keys(lane).sort(), Object.keys(route).sort());
      // Retry-After counts down by the second: the two may straddle a second's end.
      assert.deepEqual({ ...stable(lane), 'retry-after': 0 }, { ...stable(route), 'retry-after': 0 });
      const limited = await send(base, 'POST', PATH, body, { ...json, authorization: `Bearer ${unknown}` });
      assert.equal(limited.status, 429);
      assert.equal(limited.json.error.status, 429);
      assert.equal((await send(base, 'POST', PATH, body, { ...json, authorization: `Bearer ${rootKey}` })).status, 200);
    } finally {
      await app.close();
      await fresh.close();
    }
  });
});
