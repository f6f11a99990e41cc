import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { snapshot } from '../../helpers/rows.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';

const verify = async (w: World, key: string) => (await w.post<{ code: string }>('/v1/keys.verifyKey', { key }, null)).json.code;

for (const dialect of DIALECTS) {
  describe(`v2 apis.deleteApi (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('deletes the API: data {}, then getApi (both versions) is a 404 and its keys stop verifying', async () => {
      const { apiId } = v2Data<{ apiId: string }>(await w.post('/v2/apis.createApi', { name: 'doomed' }));
      const { key } = await w.createKey({ apiId });
      assert.equal(await verify(w, key), 'VALID');
      assert.deepEqual(v2Data(await w.post('/v2/apis.deleteApi', { apiId })), {});
      assertV2Error(await w.post('/v2/apis.getApi', { apiId }), 404, 'unkey/data/api_not_found');
      assert.equal((await w.get('/v1/apis.getApi', { apiId })).status, 404);
      assert.equal(await verify(w, key), 'NOT_FOUND');
      const audit = await w.store.db.selectFrom('audit_logs').select('event').where('target_id', '=', apiId).execute();
      assert.deepEqual(
        audit.map((a) => a.event),
        ['api.create', 'api.delete'],
      );
    });

    test('a second delete, an unknown API and an API deleted through v1 are 404s', async () => {
      const apiId = await w.createApi('twice');
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId })).status, 200);
      assertV2Error(await w.post('/v2/apis.deleteApi', { apiId }), 404, 'unkey/data/api_not_found');
      assertV2Error(await w.post('/v2/apis.deleteApi', { apiId: 'api_missing' }), 404, 'unkey/data/api_not_found');
    });

    test('a delete-protected API → 412 protected_resource; nothing written', async () => {
      const apiId = await w.createApi('protected');
      await w.createKey({ apiId });
      await w.store.db.updateTable('apis').set({ delete_protection: 1 }).where('id', '=', apiId).execute();
      const before = await snapshot(w, ['apis', 'keys', 'audit_logs']);
      const res = await w.post('/v2/apis.deleteApi', { apiId });
      assertV2Error(res, 412, 'unkey/application/protected_resource');
      assert.equal(res.json.error.title, 'Resource is protected');
      assert.deepEqual(await snapshot(w, ['apis', 'keys', 'audit_logs']), before);
      const row = await w.store.db.selectFrom('apis').select('deleted_at').where('id', '=', apiId).executeTakeFirstOrThrow();
      assert.equal(row.deleted_at, null);
    });

    test('a bad apiId is a 400 locating /apiId; nothing written', async () => {
      const before = await snapshot(w, ['apis', 'audit_logs']);
      for (const body of [{}, { apiId: 'a' }, { apiId: 'api with spaces' }, { apiId: 42 }]) {
        const res = await w.post('/v2/apis.deleteApi', body);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), ['/apiId'], JSON.stringify(body));
      }
      assert.deepEqual(await snapshot(w, ['apis', 'audit_logs']), before);
    });

    test('with api.<apiId>.delete_api only that API can be deleted', async () => {
      const mine = await w.createApi('mine');
      const other = await w.createApi('other');
      const key = await w.rootKey([`api.${mine}.delete_api`]);
      assertV2Error(await w.post('/v2/apis.deleteApi', { apiId: other }, key), 403, 'unkey/authorization/insufficient_permissions');
      assert.deepEqual(v2Data(await w.post('/v2/apis.deleteApi', { apiId: mine }, key)), {});
    });

    describe('security: apis.deleteApi', () =>
      v2SecurityTests(() => w, {
        path: '/v2/apis.deleteApi',
        body: async (w) => ({ apiId: await w.createApi() }),
        permission: 'delete_api',
        foreign: { body: async (w, other) => ({ apiId: await w.createApi('theirs', other.root) }), type: 'unkey/data/api_not_found' },
      }));
  });
}
