import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { REQUEST_ID } from '../helpers/formats.ts';
import { listen, send, type Reply } from '../helpers/lane.ts';
import { VERIFY_V2_PATH as PATH } from '../../src/http/v2/routes/keys.verify-key.ts';

/** The answer without its request id, after checking that the body's meta and the header agree on it. */
function comparable(a: Reply): unknown {
  assert.match(a.requestId, REQUEST_ID);
  assert.equal(a.json.meta.requestId, a.requestId);
  return { ...a.json, meta: { ...a.json.meta, requestId: undefined } };
}

for (const dialect of DIALECTS) {
  describe(`v2 keys.verifyKey over HTTP: the lane (${dialect})`, () => {
    let w: World;
    let base: URL;
    let seenByFastify: () => number;
    before(async () => {
      w = await world(dialect);
      ({ base, seenByFastify } = await listen(w.app, PATH));
    });
    after(() => w.close());

    const overHttp = (body: string, key?: string) =>
      send(base, 'POST', PATH, body, { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) });
    const throughFastify = async (body: string, key?: string): Promise<Reply> => {
      const res = await w.app.inject({
        method: 'POST',
        url: PATH,
        payload: body,
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      });
      return {
        status: res.statusCode,
        contentType: String(res.headers['content-type']),
        requestId: String(res.headers['x-request-id']),
        json: res.json(),
        closesConnection: res.headers.connection === 'close',
      };
    };

    test('answers every outcome and bad request exactly as the Fastify route does, without passing through Fastify', async () => {
      const apiId = await w.createApi();
      const { key } = await w.createKey({ apiId, name: 'lane-v2', meta: { plan: 'pro' } });
      const { key: disabled } = await w.createKey({ apiId, enabled: false });
      const other = await w.rootKey(['api.api_nope.verify_key']);
      const cases: Array<[string, string, string | undefined]> = [
        ['200: valid', JSON.stringify({ key }), w.root],
        ['200: disabled', JSON.stringify({ key: disabled }), w.root],
        ['200: unknown key', JSON.stringify({ key: 'nope_123' }), w.root],
        ['200: no verify_key for its API (NOT_FOUND)', JSON.stringify({ key }), other],
        ['400: no Authorization header', JSON.stringify({ key }), undefined],
        ['401: unknown root key', JSON.stringify({ key }), 'kh_root_1111111111111111111111111'],
        ['400: key missing', JSON.stringify({}), w.root],
        ['400: permission query syntax', JSON.stringify({ key, permissions: 'a AND (' }), w.root],
        ['400: not JSON', '{"key":', w.root],
      ];
      for (const [name, body, rootKey] of cases) {
        const seen = seenByFastify();
        const lane = await overHttp(body, rootKey);
        assert.equal(seenByFastify(), seen, `${name}: a request the lane takes never reaches Fastify`);
        const route = await throughFastify(body, rootKey);
        assert.equal(lane.status, Number(name.slice(0, 3)), `${name}: ${JSON.stringify(lane.json)}`);
        assert.equal(lane.status, route.status, name);
        assert.equal(lane.contentType, route.contentType, name);
        assert.deepEqual(comparable(lane), comparable(route), name);
      }
    });
  });
}
