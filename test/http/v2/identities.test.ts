import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { windowWithRoom } from '../../helpers/timing.ts';
import { snapshot } from '../../helpers/rows.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';

interface Ratelimit {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}
interface Identity {
  id: string;
  externalId: string;
  meta?: Record<string, unknown>;
  ratelimits?: Ratelimit[];
}
interface Page {
  meta: { requestId: string };
  data: Identity[];
  pagination: { cursor?: string; hasMore: boolean };
}

const TABLES = ['identities', 'ratelimits', 'audit_logs'] as const;

for (const dialect of DIALECTS) {
  describe(`v2 identities.* (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const create = async (body: Record<string, unknown>, key?: string) =>
      v2Data<{ identityId: string }>(await w.post('/v2/identities.createIdentity', body, key)).identityId;
    const get = async (identity: string) => v2Data<Identity>(await w.post('/v2/identities.getIdentity', { identity }));

    test('create, then get by id and by externalId: meta and ratelimits (ids, autoApply) as v2 shows them; v1 sees it', async () => {
      const identityId = await create({
        externalId: 'user_1',
        meta: { plan: 'pro' },
        ratelimits: [
          { name: 'tokens', limit: 10, duration: 60_000, autoApply: true },
          { name: 'calls', limit: 5, duration: 1000 },
        ],
      });
      assert.match(identityId, /^id_/);
      const got = await get(identityId);
      assert.deepEqual(await get('user_1'), got);
      const { ratelimits, ...rest } = got;
      assert.deepEqual(rest, { id: identityId, externalId: 'user_1', meta: { plan: 'pro' } });
      for (const r of ratelimits ?? []) assert.match(r.id, /^rl_/);
      assert.deepEqual(
        ratelimits?.map(({ id: _, ...r }) => r),
        [
          { name: 'calls', limit: 5, duration: 1000, autoApply: false },
          { name: 'tokens', limit: 10, duration: 60_000, autoApply: true },
        ],
      );
      const v1 = await w.get('/v1/identities.getIdentity', { identityId });
      assert.deepEqual(v1.json.meta, { plan: 'pro' });
      assert.equal(v1.json.environment, 'default');
    });

    test('an identity without meta or ratelimits shows neither (absent, never null)', async () => {
      const identityId = await create({ externalId: 'bare' });
      assert.deepEqual(await get(identityId), { id: identityId, externalId: 'bare' });
      const res = await w.post('/v2/identities.getIdentity', { identity: 'bare' });
      assert.ok(!res.body.includes('null'), res.body);
    });

    test("an identity's autoApply limit applies to its keys' verifications (v1 key, v2 identity)", async () => {
      await create({ externalId: 'limited', ratelimits: [{ name: 'burst', limit: 1, duration: 60_000, autoApply: true }] });
      const apiId = await w.createApi('limited');
      const { key } = await w.createKey({ apiId, externalId: 'limited' });
      const verify = async () => (await w.post<{ code: string }>('/v1/keys.verifyKey', { key }, null)).json.code;
      await windowWithRoom(60_000, 5_000); // both in one window of the minute
      assert.equal(await verify(), 'VALID');
      assert.equal(await verify(), 'RATE_LIMITED');
    });

    test('createIdentity: a duplicate externalId → 409; bad members → 400 locating them; nothing written', async () => {
      await create({ externalId: 'dup' });
      const before = await snapshot(w, TABLES);
      assertV2Error(
        await w.post('/v2/identities.createIdentity', { externalId: 'dup', meta: { x: 1 } }),
        409,
        'unkey/data/resource_already_exists',
      );
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{}, ['/externalId']],
        [{ externalId: 'has space' }, ['/externalId']],
        [{ externalId: 'x'.repeat(256) }, ['/externalId']],
        [{ externalId: 'ok', ratelimits: [{ name: 'ab', limit: 1, duration: 1000 }] }, ['/ratelimits/0/name']],
        [{ externalId: 'ok', ratelimits: [{ name: 'abc', limit: 0, duration: 1000 }] }, ['/ratelimits/0/limit']],
        [{ externalId: 'ok', ratelimits: [{ name: 'abc', limit: 1, duration: 999 }] }, ['/ratelimits/0/duration']],
        [{ externalId: 'ok', meta: [] }, ['/meta']],
        [
          {
            externalId: 'ok',
            ratelimits: [
              { name: 'same', limit: 1, duration: 1000 },
              { name: 'same', limit: 2, duration: 1000 },
            ],
          },
          ['/ratelimits/1/name'],
        ],
      ];
      for (const [body, locations] of cases) {
        const res = await w.post('/v2/identities.createIdentity', body);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), locations, JSON.stringify(body));
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('getIdentity of an unknown identity → 404 identity_not_found', async () => {
      assertV2Error(await w.post('/v2/identities.getIdentity', { identity: 'nobody' }), 404, 'unkey/data/identity_not_found');
      assertV2Error(await w.post('/v2/identities.getIdentity', { identity: '' }), 400, 'unkey/application/invalid_input');
    });

    test('listIdentities: pages by id with pagination {cursor, hasMore}, no total; every environment; search', async () => {
      const w2 = await world(dialect);
      try {
        const ids: string[] = [];
        // Searched texts hold `.`, `-` or `%`, which ids (random letters and digits) never do.
        for (const externalId of ['Alice.Smith', 'bob-jones', 'dave.x']) {
          ids.push(v2Data<{ identityId: string }>(await w2.post('/v2/identities.createIdentity', { externalId })).identityId);
        }
        // Through v1: another environment, and characters v2's externalId pattern refuses (LIKE's wildcards).
        for (const body of [{ externalId: 'eve', environment: 'staging' }, { externalId: 'carol_50%' }]) {
          ids.push((await w2.post<{ identityId: string }>('/v1/identities.createIdentity', body)).json.identityId);
        }
        ids.sort();
        const seen: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          const res = await w2.post<Page>('/v2/identities.listIdentities', { limit: 2, ...(cursor ? { cursor } : {}) });
          assert.equal(res.status, 200, res.body);
          assert.equal('total' in res.json.pagination || 'total' in res.json, false);
          seen.push(...res.json.data.map((i) => i.id));
          if (!res.json.pagination.hasMore) {
            assert.equal(res.json.pagination.cursor, undefined);
            break;
          }
          cursor = res.json.pagination.cursor;
          assert.equal(typeof cursor, 'string');
        }
        assert.deepEqual(seen, ids);
        const search = async (text: string) =>
          (await w2.post<Page>('/v2/identities.listIdentities', { search: text })).json.data.map((i) => i.externalId).sort();
        assert.deepEqual(await search('aLICE.'), ['Alice.Smith']);
        assert.deepEqual(await search(' b-J '), ['bob-jones']);
        assert.deepEqual(await search('.'), ['Alice.Smith', 'dave.x']);
        assert.deepEqual(await search('%'), ['carol_50%']);
        // `_` matches only itself: as a LIKE wildcard it would find bob-jones too.
        assert.deepEqual(await search('b_j'), []);
        assert.deepEqual(await search('zz.z'), []);
        assert.equal((await search(ids[0])).length, 1);
        const empty = await w2.post<Page>('/v2/identities.listIdentities', { search: 'zz.z' });
        assert.deepEqual(empty.json.pagination, { hasMore: false });
      } finally {
        await w2.close();
      }
    });

    test('listIdentities: a bad limit or search is a 400 locating it', async () => {
      for (const [body, location] of [
        [{ limit: 0 }, '/limit'],
        [{ limit: 101 }, '/limit'],
        [{ search: 'x'.repeat(257) }, '/search'],
      ] as const) {
        const res = await w.post('/v2/identities.listIdentities', body);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), [location]);
      }
    });

    test('updateIdentity: meta replaced, ratelimits replaced by name (ids kept), [] and {} clear them', async () => {
      const identityId = await create({
        externalId: 'upd',
        meta: { a: 1 },
        ratelimits: [
          { name: 'keep', limit: 1, duration: 1000 },
          { name: 'drop', limit: 2, duration: 1000 },
        ],
      });
      const keepId = (await get(identityId)).ratelimits?.find((r) => r.name === 'keep')?.id;
      const updated = v2Data<Identity>(
        await w.post('/v2/identities.updateIdentity', {
          identity: 'upd',
          meta: { b: 2 },
          ratelimits: [
            { name: 'keep', limit: 9, duration: 2000, autoApply: true },
            { name: 'new', limit: 3, duration: 1000 },
          ],
        }),
      );
      assert.deepEqual(updated.meta, { b: 2 });
      assert.deepEqual(
        updated.ratelimits?.map((r) => [r.name, r.limit, r.duration, r.autoApply]),
        [
          ['keep', 9, 2000, true],
          ['new', 3, 1000, false],
        ],
      );
      assert.equal(updated.ratelimits?.find((r) => r.name === 'keep')?.id, keepId);
      assert.deepEqual(await get(identityId), updated);
      // Only meta given: the ratelimits stay.
      const metaOnly = v2Data<Identity>(await w.post('/v2/identities.updateIdentity', { identity: identityId, meta: {} }));
      assert.equal(metaOnly.meta, undefined);
      assert.equal(metaOnly.ratelimits?.length, 2);
      const cleared = v2Data<Identity>(await w.post('/v2/identities.updateIdentity', { identity: identityId, ratelimits: [] }));
      assert.deepEqual(cleared, { id: identityId, externalId: 'upd' });
    });

    test('updateIdentity: duplicate ratelimit names → 400, unknown identity → 404; nothing written', async () => {
      const identityId = await create({ externalId: 'upd-bad', ratelimits: [{ name: 'one', limit: 1, duration: 1000 }] });
      const before = await snapshot(w, TABLES);
      const dup = await w.post('/v2/identities.updateIdentity', {
        identity: identityId,
        meta: { changed: true },
        ratelimits: [
          { name: 'two', limit: 1, duration: 1000 },
          { name: 'two', limit: 1, duration: 1000 },
        ],
      });
      assertV2Error(dup, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(dup), ['/ratelimits/1/name']);
      const missing = await w.post('/v2/identities.updateIdentity', { identity: 'nobody', meta: { x: 1 } });
      assertV2Error(missing, 404, 'unkey/data/identity_not_found');
      const unknown = await w.post('/v2/identities.updateIdentity', { meta: { x: 1 } });
      assertV2Error(unknown, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(unknown), ['/identity']);
      assert.deepEqual(await snapshot(w, TABLES), before);
      assert.deepEqual((await get(identityId)).meta, undefined);
    });

    test('deleteIdentity: {meta} without data; then 404; the externalId can be used again; keys stay', async () => {
      const identityId = await create({ externalId: 'gone', ratelimits: [{ name: 'rl1', limit: 1, duration: 1000 }] });
      const apiId = await w.createApi('gone');
      const { keyId } = await w.createKey({ apiId, externalId: 'gone' });
      const res = await w.post('/v2/identities.deleteIdentity', { identity: 'gone' });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(Object.keys(res.json), ['meta']);
      assert.match(res.json.meta.requestId as unknown as string, /^req_/);
      assertV2Error(await w.post('/v2/identities.getIdentity', { identity: identityId }), 404, 'unkey/data/identity_not_found');
      assertV2Error(await w.post('/v2/identities.deleteIdentity', { identity: identityId }), 404, 'unkey/data/identity_not_found');
      assert.notEqual(await create({ externalId: 'gone' }), identityId);
      const key = await w.store.db.selectFrom('keys').select('identity_id').where('id', '=', keyId).executeTakeFirstOrThrow();
      assert.equal(key.identity_id, null);
    });

    describe('security: identities.createIdentity', () =>
      v2SecurityTests(() => w, {
        path: '/v2/identities.createIdentity',
        body: async () => ({ externalId: `sec_${Math.random().toString(36).slice(2)}` }),
        permission: 'identity.*.create_identity',
      }));
    const foreignIdentity = {
      body: async (_w: World, other: { root: string }) => {
        const res = await w.post<{ data: { identityId: string } }>(
          '/v2/identities.createIdentity',
          { externalId: `theirs_${Math.random().toString(36).slice(2)}` },
          other.root,
        );
        return { identity: res.json.data.identityId };
      },
      type: 'unkey/data/identity_not_found',
    };
    const mine = async () => ({ identity: await create({ externalId: `sec_${Math.random().toString(36).slice(2)}` }) });
    describe('security: identities.getIdentity', () =>
      v2SecurityTests(() => w, { path: '/v2/identities.getIdentity', body: mine, permission: 'read_identity', foreign: foreignIdentity }));
    describe('security: identities.listIdentities', () =>
      v2SecurityTests(() => w, { path: '/v2/identities.listIdentities', body: async () => ({}), permission: 'identity.*.read_identity' }));
    describe('security: identities.updateIdentity', () =>
      v2SecurityTests(() => w, {
        path: '/v2/identities.updateIdentity',
        body: async () => ({ ...(await mine()), meta: { x: 1 } }),
        permission: 'update_identity',
        foreign: { ...foreignIdentity, body: async (w, other) => ({ ...(await foreignIdentity.body(w, other)), meta: { x: 1 } }) },
      }));
    describe('security: identities.deleteIdentity', () =>
      v2SecurityTests(() => w, {
        path: '/v2/identities.deleteIdentity',
        body: mine,
        permission: 'delete_identity',
        foreign: foreignIdentity,
      }));
  });
}
