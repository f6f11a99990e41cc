import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../../helpers/harness.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';

type Item = { keyId: string; plaintext?: string; identity?: { externalId: string } };
type Page = { data: Item[]; pagination: { cursor?: string; hasMore: boolean } };

for (const dialect of DIALECTS) {
  describe(`v2 apis.listKeys (${dialect})`, () => {
    let w: World;
    let apiId: string;
    const made: Array<{ keyId: string; key: string }> = [];
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('v2-list');
      for (let i = 0; i < 5; i++) {
        const body = { apiId, externalId: i % 2 === 0 ? 'even_owner' : 'odd_owner', recoverable: i < 2 };
        made.push(v2Data(await w.post('/v2/keys.createKey', body)));
      }
      // A v1 key of the same API, and a deleted one: v2 lists the first, never the second.
      made.push(await w.createKey({ apiId, name: 'from-v1' }));
      const gone = await w.createKey({ apiId });
      v2Data(await w.post('/v2/keys.deleteKey', { keyId: gone.keyId }));
    });
    after(() => w.close());

    const list = async (body: Record<string, unknown>, key?: string): Promise<Page> => {
      const res: Response = await w.post('/v2/apis.listKeys', { apiId, ...body }, key);
      v2Data(res);
      return res.json as unknown as Page;
    };

    test('pages of live keys by id; the cursor is present exactly when more exist', async () => {
      const all = [...made.map((k) => k.keyId)].sort();
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await list({ limit: 2, ...(cursor ? { cursor } : {}) });
        pages++;
        seen.push(...page.data.map((k) => k.keyId));
        assert.equal(page.pagination.hasMore, page.pagination.cursor !== undefined);
        cursor = page.pagination.cursor;
      } while (cursor);
      assert.equal(pages, 3);
      assert.deepEqual(seen, all);
      const whole = await list({});
      assert.deepEqual(whole.pagination, { hasMore: false });
      assert.deepEqual(
        whole.data.map((k) => k.keyId),
        all,
      );
    });

    test('items are KeyResponseData; externalId filters; an unknown externalId is an empty page', async () => {
      const even = await list({ externalId: 'even_owner' });
      assert.equal(even.data.length, 3);
      for (const item of even.data) assert.equal(item.identity?.externalId, 'even_owner');
      const single = (await list({})).data.find((k) => k.keyId === made[0].keyId);
      assert.deepEqual(single, v2Data(await w.post('/v2/keys.getKey', { keyId: made[0].keyId })), 'as getKey shows it');
      const none = await list({ externalId: 'nobody' });
      assert.deepEqual({ data: none.data, pagination: none.pagination }, { data: [], pagination: { hasMore: false } });
    });

    test('decrypt returns the plaintext of recoverable keys only; revalidateKeysCache is accepted', async () => {
      const page = await list({ decrypt: true, revalidateKeysCache: true });
      const plaintexts = new Map(page.data.map((k) => [k.keyId, k.plaintext]));
      assert.equal(plaintexts.get(made[0].keyId), made[0].key);
      assert.equal(plaintexts.get(made[1].keyId), made[1].key);
      assert.equal(plaintexts.get(made[2].keyId), undefined);
      for (const item of (await list({})).data) assert.equal(item.plaintext, undefined);
    });

    test('decrypt without decrypt_key is a 403; no read right is the 404 of a missing API', async () => {
      const reader = await w.rootKey(['api.*.read_api', 'api.*.read_key']);
      assert.equal((await list({}, reader)).data.length, made.length);
      const denied = await w.post('/v2/apis.listKeys', { apiId, decrypt: true }, reader);
      assertV2Error(denied, 403, 'unkey/authorization/insufficient_permissions');
      const keysOnly = await w.rootKey(['api.*.read_key']);
      const hidden = await w.post('/v2/apis.listKeys', { apiId }, keysOnly);
      assertV2Error(hidden, 404, 'unkey/data/api_not_found');
      const missing = await w.post('/v2/apis.listKeys', { apiId: 'api_missing' }, keysOnly);
      assertV2Error(missing, 404, 'unkey/data/api_not_found');
    });

    test('body problems are 400s with their locations', async () => {
      const res = await w.post('/v2/apis.listKeys', { apiId, limit: 0, cursor: '', externalId: '' });
      assertV2Error(res, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(res).sort(), ['/cursor', '/externalId', '/limit']);
      assertV2Error(await w.post('/v2/apis.listKeys', { limit: 101 }), 400, 'unkey/application/invalid_input');
    });

    describe('security: apis.listKeys', () =>
      v2SecurityTests(() => w, {
        path: '/v2/apis.listKeys',
        body: async () => ({ apiId }),
        permission: 'read_key',
        masked: 'unkey/data/api_not_found',
        foreign: { body: async (w, other) => ({ apiId: await w.createApi('theirs', other.root) }), type: 'unkey/data/api_not_found' },
      }));
  });
}
