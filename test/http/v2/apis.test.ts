import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { count } from '../../helpers/rows.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';

for (const dialect of DIALECTS) {
  describe(`v2 liveness, apis.createApi, apis.getApi (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('GET /v2/liveness needs no key', async () => {
      const res = await w.app.inject({ method: 'GET', url: '/v2/liveness' });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json().data, { message: "we're cooking" });
      assert.match(res.json().meta.requestId, /^req_/);
    });

    test('createApi then getApi, in v2 envelopes; the API is the one v1 sees', async () => {
      const { apiId } = v2Data<{ apiId: string }>(await w.post('/v2/apis.createApi', { name: 'payments' }));
      assert.match(apiId, /^api_/);
      assert.deepEqual(v2Data(await w.post('/v2/apis.getApi', { apiId })), { id: apiId, name: 'payments' });
      const v1 = await w.get('/v1/apis.getApi', { apiId });
      assert.equal(v1.json.name, 'payments');
    });

    test('a body problem is a 400 with errors[] locating it, and writes nothing', async () => {
      const before = await count(w.store.db, 'apis');
      const res = await w.post('/v2/apis.createApi', { name: 'x' });
      assertV2Error(res, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(res), ['/name']);
      assert.equal(await count(w.store.db, 'apis'), before);
      assertV2Error(await w.post('/v2/apis.getApi', { apiId: 'api_missing' }), 404, 'unkey/data/api_not_found');
    });

    describe('security: apis.createApi', () =>
      v2SecurityTests(() => w, { path: '/v2/apis.createApi', body: async () => ({ name: 'secured' }), permission: 'api.*.create_api' }));
    describe('security: apis.getApi', () =>
      v2SecurityTests(() => w, {
        path: '/v2/apis.getApi',
        body: async (w) => ({ apiId: await w.createApi() }),
        permission: 'read_api',
        foreign: { body: async (w, other) => ({ apiId: await w.createApi('theirs', other.root) }), type: 'unkey/data/api_not_found' },
      }));
  });
}
