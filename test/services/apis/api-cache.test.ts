import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { ApiCache } from '../../../src/services/apis/api-cache.ts';
import { expectKind } from '../../helpers/errors.ts';

for (const dialect of DIALECTS) {
  describe(`ApiCache (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('a found API is read once; its deletion (an api change) drops it; another workspace never finds it', async () => {
      const apiId = await w.createApi('cached');
      const cache = new ApiCache();
      const db = w.store.db;
      assert.equal((await cache.require(db, w.workspaceId, apiId)).id, apiId);
      assert.equal((await cache.require(db, w.workspaceId, apiId)).id, apiId);
      assert.deepEqual(cache.stats, { hits: 1, misses: 1 });
      await expectKind(cache.require(db, 'ws_other', apiId), 'data/api-not-found');
      await db.updateTable('apis').set({ deleted_at: Date.now() }).where('id', '=', apiId).execute();
      cache.invalidate([{ kind: 'api', id: apiId }]);
      await expectKind(cache.require(db, w.workspaceId, apiId), 'data/api-not-found');
    });

    test('keys.createKey on an API deleted through the API is a 404 on the next request (the server hears its own change)', async () => {
      const apiId = await w.createApi('doomed');
      await w.createKey({ apiId });
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId })).status, 200);
      const r = await w.post('/v1/keys.createKey', { apiId });
      assert.equal(r.status, 404, r.body);
    });

    test('a read that raced with a change is not cached; a workspace change drops its APIs', async () => {
      const apiId = await w.createApi('raced');
      const cache = new ApiCache();
      const reading = cache.require(w.store.db, w.workspaceId, apiId);
      cache.invalidate([{ kind: 'api', id: apiId }]);
      await reading;
      await cache.require(w.store.db, w.workspaceId, apiId);
      assert.equal(cache.stats.misses, 2);
      cache.invalidate([{ kind: 'workspace', id: w.workspaceId }]);
      await cache.require(w.store.db, w.workspaceId, apiId);
      assert.equal(cache.stats.misses, 3);
    });
  });
}
