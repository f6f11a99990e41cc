import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { expectedChecksum } from '../../helpers/formats.ts';
import { v2Data } from '../../helpers/v2.ts';

const endsInItsChecksum = (key: string): void => assert.equal(key.slice(-6), expectedChecksum(key.slice(0, -6)), key);

for (const dialect of DIALECTS) {
  describe(`checksummed keys on every creation path (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('checksums');
    });
    after(() => w.close());

    const verify = async (key: string) => (await w.post<{ valid: boolean; code: string }>('/v1/keys.verifyKey', { key }, null)).json;

    test('v1 keys.createKey, with and without a prefix', async () => {
      for (const body of [{ apiId, prefix: 'sk' }, { apiId }, { apiId, prefix: 'a_b', byteLength: 64 }]) {
        const { key } = await w.createKey(body);
        endsInItsChecksum(key);
        assert.equal((await verify(key)).valid, true);
      }
    });

    test('v2 keys.createKey and keys.rerollKey', async () => {
      const made = v2Data<{ keyId: string; key: string }>(await w.post('/v2/keys.createKey', { apiId, prefix: 'live' }));
      endsInItsChecksum(made.key);
      const rerolled = v2Data<{ keyId: string; key: string }>(await w.post('/v2/keys.rerollKey', { keyId: made.keyId, expiration: 0 }));
      assert.ok(rerolled.key.startsWith('live_'), rerolled.key);
      endsInItsChecksum(rerolled.key);
      assert.equal((await verify(rerolled.key)).valid, true);
    });

    test('root keys', async () => {
      const root = await w.rootKey(['api.*.read_api']);
      endsInItsChecksum(root);
      assert.equal((await w.get('/v1/apis.getApi', { apiId }, root)).status, 200);
    });

    test('keys without a checksum (made before, or imported) still verify: verification never looks at it', async () => {
      const plain = `old_${'A'.repeat(22)}`;
      const imported = await w.post<{ keyIds: string[] }>('/v1/migrations.createKeys', [{ apiId, plaintext: plain, prefix: 'old' }]);
      assert.equal(imported.status, 200, imported.body);
      assert.equal((await verify(plain)).valid, true);
      const made = await w.createKey({ apiId, prefix: 'sk' });
      const corrupted = made.key.slice(0, -1) + (made.key.at(-1) === 'z' ? 'y' : 'z');
      const otherImport = await w.post('/v1/migrations.createKeys', [{ apiId, plaintext: corrupted }]);
      assert.equal(otherImport.status, 200, otherImport.body);
      assert.equal((await verify(corrupted)).valid, true, 'a key with a wrong checksum is refused by nobody but the scanner');
    });
  });
}
