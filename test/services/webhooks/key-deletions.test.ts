import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, type World } from '../../helpers/harness.ts';
import { hashOf, newPlain } from '../../helpers/migrations.ts';
import { until, verifiedPayloads, type webhookReceiver } from '../../helpers/webhook-receiver.ts';
import { deliveringWorld } from '../../helpers/webhook-world.ts';

/**
 * key.deleted arrives for every key deleted through an API's operations too (apis.deleteKeys, soft and
 * permanent; apis.deleteApi), one event per key, written with the deletion; a deletion refused emits nothing.
 */
for (const dialect of DIALECTS) {
  describe(`key.deleted of keys deleted with their API (${dialect})`, () => {
    let w: World;
    let close: () => Promise<void>;
    let rx: Awaited<ReturnType<typeof webhookReceiver>>;
    let secret: string;
    before(async () => {
      ({ w, rx, secret, close } = await deliveringWorld(dialect, { events: ['key.deleted'] }));
    });
    after(() => close?.());

    /** An API with `n` keys; their ids. */
    const apiWithKeys = async (name: string, n: number) => {
      const apiId = await w.createApi(name);
      const keyIds: string[] = [];
      for (let i = 0; i < n; i++) keyIds.push((await w.createKey({ apiId })).keyId);
      return { apiId, keyIds };
    };
    /** The key.deleted payloads of `apiId` received (after a pause in which duplicates would arrive). */
    const deletedOf = async (apiId: string, wanted: number) => {
      const of = () => verifiedPayloads(rx.got, secret).filter((p) => p.type === 'key.deleted' && p.data.apiId === apiId);
      await until(`${wanted} key.deleted`, () => of().length >= wanted, 3000);
      await new Promise((r) => setTimeout(r, 300));
      return of();
    };
    const ids = (events: Array<{ data: Record<string, unknown> }>) => events.map((e) => String(e.data.keyId)).sort();

    test('apis.deleteKeys: one key.deleted per key, soft then permanent (keys soft-deleted before are not reported again)', async () => {
      const { apiId, keyIds } = await apiWithKeys('delete-keys', 3);
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: keyIds[0] })).status, 200);
      const soft = await w.post<{ deletedKeys: number }>('/v1/apis.deleteKeys', { apiId });
      assert.equal(soft.json.deletedKeys, 2);
      const events = await deletedOf(apiId, 3);
      assert.deepEqual(ids(events), [...keyIds].sort());
      assert.deepEqual(events.find((e) => e.data.keyId === keyIds[1])?.data, { keyId: keyIds[1], apiId, permanent: false });

      const more = await apiWithKeys('delete-keys-permanently', 2);
      const permanent = await w.post<{ deletedKeys: number }>('/v1/apis.deleteKeys', { apiId: more.apiId, permanent: true });
      assert.equal(permanent.json.deletedKeys, 2);
      const gone = await deletedOf(more.apiId, 2);
      assert.deepEqual(ids(gone), [...more.keyIds].sort());
      assert.ok(gone.every((e) => e.data.permanent === true));
    });

    test('apis.deleteApi: one key.deleted per live key; a protected API refuses and emits nothing', async () => {
      const { apiId, keyIds } = await apiWithKeys('delete-api', 3);
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId })).status, 200);
      assert.deepEqual(ids(await deletedOf(apiId, 3)), [...keyIds].sort());

      const protectedApi = await apiWithKeys('protected', 2);
      await w.store.db.updateTable('apis').set({ delete_protection: 1 }).where('id', '=', protectedApi.apiId).execute();
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: protectedApi.apiId })).status, 412);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(verifiedPayloads(rx.got, secret).filter((p) => p.data.apiId === protectedApi.apiId).length, 0);
    });

    test('a batch of 450 keys: 450 events, each delivered once', { timeout: 120_000 }, async () => {
      const apiId = await w.createApi('batch');
      for (let i = 0; i < 450; i += 90) {
        const batch = Array.from({ length: 90 }, () => ({ apiId, hash: hashOf(newPlain()) }));
        const r = await w.post('/v1/migrations.createKeys', batch);
        assert.equal(r.status, 200, r.body);
      }
      const soft = await w.post<{ deletedKeys: number }>('/v1/apis.deleteKeys', { apiId });
      assert.equal(soft.json.deletedKeys, 450);
      const of = () => verifiedPayloads(rx.got, secret).filter((p) => p.type === 'key.deleted' && p.data.apiId === apiId);
      await until('450 key.deleted', () => of().length >= 450, 60_000);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(new Set(ids(of())).size, 450);
      assert.equal(of().length, 450);
    });
  });
}
