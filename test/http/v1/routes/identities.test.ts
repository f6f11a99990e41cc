import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';

/** An identities.listIdentities page. */
type IdentityPage = Loose<{ identities: Array<Loose<{ id: string }>>; total: number; cursor?: string }>;

for (const dialect of DIALECTS) {
  describe(`identities (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const create = async (body: Record<string, unknown>, key?: string) => {
      const res = await w.post<{ identityId: string }>('/v1/identities.createIdentity', body, key);
      assert.equal(res.status, 200, res.body);
      return res.json.identityId;
    };

    test('create, then get by id and by externalId, with meta and rate limits; audited', async () => {
      const identityId = await create({
        externalId: 'user_1',
        meta: { plan: 'pro' },
        ratelimits: [
          { name: 'tokens', limit: 10, duration: 60_000 },
          { name: 'calls', limit: 5, duration: 1000 },
        ],
      });
      assert.match(identityId, /^id_/);
      const expected = {
        id: identityId,
        externalId: 'user_1',
        environment: 'default',
        meta: { plan: 'pro' },
        ratelimits: [
          { name: 'calls', limit: 5, duration: 1000 },
          { name: 'tokens', limit: 10, duration: 60_000 },
        ],
      };
      assert.deepEqual((await w.get('/v1/identities.getIdentity', { identityId })).json, expected);
      assert.deepEqual((await w.get('/v1/identities.getIdentity', { externalId: 'user_1' })).json, expected);
      const audit = await w.store.db.selectFrom('audit_logs').select('event').where('target_id', '=', identityId).execute();
      assert.deepEqual(
        audit.map((a) => a.event),
        ['identity.create'],
      );
    });

    test('duplicate externalId → 409; nothing written', async () => {
      await create({ externalId: 'dup' });
      const res = await w.post('/v1/identities.createIdentity', { externalId: 'dup', meta: { x: 1 } });
      assert.equal(res.status, 409, res.body);
      assert.equal(res.json.error.code, 'CONFLICT');
      const rows = await w.store.db.selectFrom('identities').select('meta').where('external_id', '=', 'dup').execute();
      assert.deepEqual(rows, [{ meta: null }]);
    });

    test('validation: empty externalId, duplicate rate-limit names, short duration, meta over 64 KiB → 400 listing problems', async () => {
      const empty = await w.post('/v1/identities.createIdentity', { externalId: '', ratelimits: [{ name: 'a', limit: 1, duration: 10 }] });
      assert.equal(empty.status, 400, empty.body);
      assert.deepEqual(empty.json.error.errors.map((e: { path: string }) => e.path).sort(), ['/externalId', '/ratelimits/0/duration']);
      const dup = await w.post('/v1/identities.createIdentity', {
        externalId: 'twice',
        ratelimits: [
          { name: 'a', limit: 1, duration: 1000 },
          { name: 'a', limit: 2, duration: 1000 },
        ],
      });
      assert.equal(dup.status, 400, dup.body);
      assert.deepEqual(
        dup.json.error.errors.map((e: { path: string }) => e.path),
        ['/ratelimits/1/name'],
      );
      const big = await w.post('/v1/identities.createIdentity', { externalId: 'big', meta: { blob: 'x'.repeat(70_000) } });
      assert.equal(big.status, 400, big.body);
      assert.deepEqual(
        big.json.error.errors.map((e: { path: string }) => e.path),
        ['/meta'],
      );
      const none = await w.store.db.selectFrom('identities').select('id').where('external_id', 'in', ['twice', 'big']).execute();
      assert.deepEqual(none, []);
    });

    test('getIdentity without identityId or externalId → 400; unknown → 404', async () => {
      const neither = await w.get('/v1/identities.getIdentity', {});
      assert.equal(neither.status, 400, neither.body);
      const unknown = await w.get('/v1/identities.getIdentity', { identityId: 'id_nope' });
      assert.equal(unknown.status, 404, unknown.body);
      assert.equal(unknown.json.error.type, 'https://keyhold.dev/errors/data/identity-not-found');
    });

    test('list by environment with limit and cursor: disjoint pages, exact total', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await create({ externalId: `listed_${i}`, environment: 'listing' }));
      await create({ externalId: 'other_env', environment: 'elsewhere' });
      const first = await w.get<IdentityPage>('/v1/identities.listIdentities', { environment: 'listing', limit: 2 });
      assert.equal(first.status, 200, first.body);
      assert.equal(first.json.total, 5);
      const seen = first.json.identities.map((i: { id: string }) => i.id);
      let cursor = first.json.cursor;
      while (cursor) {
        const page = await w.get<IdentityPage>('/v1/identities.listIdentities', { environment: 'listing', limit: 2, cursor });
        seen.push(...page.json.identities.map((i: { id: string }) => i.id));
        cursor = page.json.cursor;
      }
      assert.deepEqual(seen, [...ids].sort());
    });

    test('update meta and replace rate limits by externalId; repeated update is stable; unknown → 404', async () => {
      const identityId = await create({ externalId: 'upd', meta: { a: 1 }, ratelimits: [{ name: 'old', limit: 1, duration: 1000 }] });
      const body = { externalId: 'upd', meta: { b: 2 }, ratelimits: [{ name: 'new', limit: 3, duration: 2000 }] };
      const first = await w.post('/v1/identities.updateIdentity', body);
      assert.equal(first.status, 200, first.body);
      assert.deepEqual(first.json, {
        id: identityId,
        externalId: 'upd',
        environment: 'default',
        meta: { b: 2 },
        ratelimits: [{ name: 'new', limit: 3, duration: 2000 }],
      });
      const again = await w.post('/v1/identities.updateIdentity', body);
      assert.deepEqual(again.json, first.json);
      const metaOnly = await w.post('/v1/identities.updateIdentity', { identityId, meta: {} });
      assert.deepEqual(metaOnly.json.ratelimits, [{ name: 'new', limit: 3, duration: 2000 }], 'meta update keeps rate limits');
      assert.deepEqual(metaOnly.json.meta, {});
      const unknown = await w.post('/v1/identities.updateIdentity', { identityId: 'id_nope', meta: {} });
      assert.equal(unknown.status, 404, unknown.body);
      const events = await w.store.db.selectFrom('audit_logs').select('event').where('target_id', '=', identityId).execute();
      assert.deepEqual(
        events.map((e) => e.event),
        ['identity.create', 'identity.update', 'identity.update', 'identity.update'],
      );
    });

    test('delete removes the identity and its rate limits; its keys stay, unlinked; second delete → 404', async () => {
      const apiId = await w.createApi();
      const { keyId } = await w.createKey({ apiId, externalId: 'to-delete' });
      const identityId = (await w.get<{ id: string }>('/v1/identities.getIdentity', { externalId: 'to-delete' })).json.id;
      await w.post('/v1/identities.updateIdentity', { identityId, ratelimits: [{ name: 'x', limit: 1, duration: 1000 }] });
      const res = await w.post('/v1/identities.deleteIdentity', { identityId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});
      assert.equal((await w.get('/v1/identities.getIdentity', { identityId })).status, 404);
      const key = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(key.status, 200);
      assert.equal(key.json.identity, undefined);
      const limits = await w.store.db.selectFrom('ratelimits').select('id').where('identity_id', '=', identityId).execute();
      assert.deepEqual(limits, []);
      assert.equal((await w.post('/v1/identities.deleteIdentity', { identityId })).status, 404);
    });

    test('identity-specific permissions: identity.<id>.read_identity reads that one only', async () => {
      const a = await create({ externalId: 'perm_a' });
      const b = await create({ externalId: 'perm_b' });
      const key = await w.rootKey([`identity.${a}.read_identity`]);
      assert.equal((await w.get('/v1/identities.getIdentity', { identityId: a }, key)).status, 200);
      const denied = await w.get('/v1/identities.getIdentity', { identityId: b }, key);
      assert.equal(denied.status, 403, denied.body);
      assert.match(denied.json.error.detail, new RegExp(`identity\\.${b}\\.read_identity`));
    });

    describe('createIdentity security', () =>
      securityTests(() => w, {
        permission: 'identity.*.create_identity',
        request: async () => ({ method: 'POST', path: '/v1/identities.createIdentity', body: { externalId: `sec_${Math.random()}` } }),
      }));
    describe('getIdentity security', () =>
      securityTests(() => w, {
        permission: 'read_identity',
        request: async () => ({
          method: 'GET',
          path: '/v1/identities.getIdentity',
          query: { identityId: await create({ externalId: `g_${Math.random()}` }) },
        }),
        foreign: async (_w, other) => ({
          method: 'GET',
          path: '/v1/identities.getIdentity',
          query: { identityId: await create({ externalId: 'foreign' }, other.root) },
        }),
      }));
    describe('listIdentities security', () =>
      securityTests(() => w, {
        permission: 'identity.*.read_identity',
        request: async () => ({ method: 'GET', path: '/v1/identities.listIdentities', query: { limit: 1 } }),
      }));
    describe('updateIdentity security', () =>
      securityTests(() => w, {
        permission: 'update_identity',
        request: async () => ({
          method: 'POST',
          path: '/v1/identities.updateIdentity',
          body: { identityId: await create({ externalId: `u_${Math.random()}` }), meta: {} },
        }),
        foreign: async (_w, other) => ({
          method: 'POST',
          path: '/v1/identities.updateIdentity',
          body: { identityId: await create({ externalId: 'foreign-u' }, other.root), meta: {} },
        }),
      }));
    describe('deleteIdentity security', () =>
      securityTests(() => w, {
        permission: 'delete_identity',
        request: async () => ({
          method: 'POST',
          path: '/v1/identities.deleteIdentity',
          body: { identityId: await create({ externalId: `d_${Math.random()}` }) },
        }),
        foreign: async (_w, other) => ({
          method: 'POST',
          path: '/v1/identities.deleteIdentity',
          body: { identityId: await create({ externalId: 'foreign-d' }, other.root) },
        }),
      }));
  });
}
