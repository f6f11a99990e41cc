import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { v2Data } from '../../helpers/v2.ts';

/** The value of an unlabelled counter in a /metrics answer. */
function counter(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} is exposed`);
  return Number(line.split(' ')[1]);
}

for (const dialect of DIALECTS) {
  describe(`v2 keys.verifyKey of a cached key reads nothing from the store (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const misses = async () => {
      const text = (await w.app.inject({ method: 'GET', url: '/metrics' })).body;
      return { keys: counter(text, 'keyhold_key_cache_misses_total'), rootKeys: counter(text, 'keyhold_root_key_cache_misses_total') };
    };

    test('a key with a named limit: its limits (ids, names) come from the cached record, the root key from the root-key cache', async () => {
      const apiId = await w.createApi();
      const { keyId, key } = await w.createKey({ apiId, ratelimit: { type: 'fast', limit: 100, duration: 60_000 } });
      const limitRow = await w.store.db
        .selectFrom('ratelimits')
        .select(['id', 'name'])
        .where('key_id', '=', keyId)
        .executeTakeFirstOrThrow();
      const root = await w.rootKey(['api.*.verify_key']);
      const verify = () => w.post('/v2/keys.verifyKey', { key, ratelimits: [{ name: limitRow.name }] }, root);
      v2Data(await verify()); // loads the key and the root key
      const before = await misses();
      for (let i = 0; i < 5; i++) {
        const data = v2Data<{ valid: boolean; ratelimits: Array<{ id: string; name: string; autoApply: boolean }> }>(await verify());
        assert.equal(data.valid, true);
        assert.deepEqual(
          data.ratelimits.map((l) => ({ id: l.id, name: l.name })),
          [{ id: limitRow.id, name: limitRow.name }],
        );
      }
      assert.deepEqual(await misses(), before, 'no key or root-key lookup read the store');
    });
  });
}
