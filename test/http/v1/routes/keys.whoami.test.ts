import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { keyRow } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';

for (const dialect of DIALECTS) {
  describe(`keys.whoami (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('whoami-api');
    });
    after(() => w.close());

    test('describes the key whose plaintext is given', async () => {
      const meta = { plan: 'team', nested: { seats: [1, 2] } };
      const { key, keyId } = await w.createKey({
        apiId,
        prefix: 'who',
        name: 'whoami key',
        externalId: 'user_who',
        meta,
        remaining: 12,
        environment: 'test',
        expires: Date.now() + 60_000,
        roles: ['who-role'],
        ratelimit: { limit: 2, duration: 1000 },
      });
      const res = await w.post('/v1/keys.whoami', { key });
      assert.equal(res.status, 200, res.body);
      const row = await keyRow(w, keyId);
      assert.deepEqual(res.json, {
        id: keyId,
        name: 'whoami key',
        remaining: 12,
        identity: { id: row.identity_id, externalId: 'user_who' },
        meta,
        createdAt: row.created_at,
        enabled: true,
        environment: 'test',
      });
      assert.ok(!JSON.stringify(res.json).includes(key), 'the plaintext is not echoed');
    });

    test('a bare key has only id, createdAt and enabled', async () => {
      const { key, keyId } = await w.createKey({ apiId });
      const res = await w.post('/v1/keys.whoami', { key });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, { id: keyId, createdAt: (await keyRow(w, keyId)).created_at, enabled: true });
    });

    test('disabled, expired and used-up keys are still described, as stored', async () => {
      const disabled = await w.createKey({ apiId, enabled: false });
      const expired = await w.createKey({ apiId, expires: Date.now() - 1000 });
      const usedUp = await w.createKey({ apiId, remaining: 1 });
      await w.store.db.updateTable('keys').set({ remaining: 0 }).where('id', '=', usedUp.keyId).execute();
      const d = await w.post('/v1/keys.whoami', { key: disabled.key });
      assert.equal(d.status, 200, d.body);
      assert.equal(d.json.id, disabled.keyId);
      assert.equal(d.json.enabled, false);
      const e = await w.post('/v1/keys.whoami', { key: expired.key });
      assert.equal(e.status, 200, e.body);
      assert.equal(e.json.id, expired.keyId);
      const u = await w.post('/v1/keys.whoami', { key: usedUp.key });
      assert.equal(u.status, 200, u.body);
      assert.equal(u.json.remaining, 0);
    });

    test('ownerId shows as the identity', async () => {
      const { key, keyId } = await w.createKey({ apiId, ownerId: 'user_owner_who' });
      const res = await w.post('/v1/keys.whoami', { key });
      assert.deepEqual(res.json.identity, { id: (await keyRow(w, keyId)).identity_id, externalId: 'user_owner_who' });
    });

    test('unknown key, a key id instead of the key, a near miss, or a deleted key → 404 key-not-found', async () => {
      const { key, keyId } = await w.createKey({ apiId, prefix: 'gone' });
      const live = await w.createKey({ apiId });
      const candidates = ['gone_doesnotexist', keyId, key.slice(0, -1), `${key}x`, key.toUpperCase(), ` ${key}`];
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId })).status, 200);
      for (const k of [...candidates, key]) {
        const res = await w.post('/v1/keys.whoami', { key: k });
        assert.equal(res.status, 404, `${k}: ${res.body}`);
        assert.equal(res.json.error.code, 'NOT_FOUND');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        assert.ok(!res.json.error.detail.includes(k), 'the 404 does not echo the key');
      }
      assert.equal((await w.post('/v1/keys.whoami', { key: live.key })).status, 200);
    });

    test('missing, empty or non-string key → 400', async () => {
      for (const body of [{}, { key: '' }, { key: 42 }, { key: null }]) {
        const res = await w.post('/v1/keys.whoami', body);
        assert.equal(res.status, 400, res.body);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.deepEqual(
          res.json.error.errors.map((e: { path: string }) => e.path),
          ['/key'],
        );
      }
      const bad = await w.post('/v1/keys.whoami', '{"key":');
      assert.equal(bad.status, 400, bad.body);
    });

    test("read_key for the key's api or api.* is enough; for another api, or another action → 403 naming the key's api", async () => {
      const { key, keyId } = await w.createKey({ apiId });
      const otherApi = await w.createApi('other-who');
      for (const permissions of [[`api.${apiId}.read_key`], ['api.*.read_key']]) {
        const res = await w.post('/v1/keys.whoami', { key }, await w.rootKey(permissions));
        assert.equal(res.status, 200, `${permissions}: ${res.body}`);
        assert.equal(res.json.id, keyId);
      }
      for (const permissions of [[`api.${otherApi}.read_key`], [`api.${apiId}.verify_key`, `api.${apiId}.read_api`]]) {
        const res = await w.post('/v1/keys.whoami', { key }, await w.rootKey(permissions));
        assert.equal(res.status, 403, `${permissions}: ${res.body}`);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.ok(res.json.error.detail.includes(`api.${apiId}.read_key`), res.json.error.detail);
      }
    });

    // The 403 names the API of the key the request is about; `request` creates it, so read it afterwards.
    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.read_key`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure');
        const { key } = await w.createKey({ apiId: securityApiId });
        return { method: 'POST', path: '/v1/keys.whoami', body: { key } };
      },
      foreign: async (w, other) => {
        const { key } = await w.createKey({ apiId: await w.createApi('foreign', other.root) }, other.root);
        return { method: 'POST', path: '/v1/keys.whoami', body: { key } };
      },
    });

    test("another workspace's key → 404 with any permissions; its own workspace sees it", async () => {
      const other = await w.otherWorkspace();
      const { key, keyId } = await w.createKey({ apiId: await w.createApi('theirs', other.root) }, other.root);
      const theirApi = (await keyRow(w, keyId)).api_id;
      for (const rk of [w.root, await w.rootKey(['api.*.read_key']), await w.rootKey([`api.${theirApi}.read_key`])]) {
        const res = await w.post('/v1/keys.whoami', { key }, rk);
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
      }
      const own = await w.post('/v1/keys.whoami', { key }, other.root);
      assert.equal(own.status, 200, own.body);
      assert.equal(own.json.id, keyId);
    });
  });
}
