import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { snapshot } from '../../helpers/rows.ts';
import { auditEvents, unique } from '../../helpers/rbac.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';
import { LONG, makeNamespace, RL_TABLES } from './ratelimit.helpers.ts';

interface Override {
  overrideId: string;
  identifier: string;
  limit: number;
  duration: number;
}

const NS_404 = 'unkey/data/ratelimit_namespace_not_found';
const OVR_404 = 'unkey/data/ratelimit_override_not_found';

for (const dialect of DIALECTS) {
  describe(`v2 ratelimit.setOverride / getOverride / listOverrides / deleteOverride (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const set = async (body: Record<string, unknown>, key?: string) =>
      v2Data<{ overrideId: string }>(await w.post('/v2/ratelimit.setOverride', body, key)).overrideId;

    test('setOverride via v2 is v1’s override: v1 getOverride shows it, v1 and v2 limits apply it; audited', async () => {
      const namespace = unique('o.v2');
      const id = await makeNamespace(w, namespace);
      const res = await w.post('/v2/ratelimit.setOverride', { namespace, identifier: 'user_1', limit: 7, duration: LONG });
      const { overrideId } = v2Data<{ overrideId: string }>(res);
      assert.match(overrideId, /^rlor_/);
      const v1 = await w.get('/v1/ratelimits.getOverride', { namespaceId: id, identifier: 'user_1' });
      assert.equal(v1.status, 200, v1.body);
      assert.deepEqual(v1.json, { id: overrideId, identifier: 'user_1', limit: 7, duration: LONG });
      assert.equal((await w.post('/v1/ratelimits.limit', { namespace, identifier: 'user_1', limit: 1, duration: 1000 })).json.limit, 7);
      assert.deepEqual(await auditEvents(w, overrideId), ['ratelimit.set_override']);
      // By id, again: the same override, replaced.
      assert.equal(await set({ namespace: id, identifier: 'user_1', limit: 8, duration: 1000 }), overrideId);
      assert.equal((await w.get('/v1/ratelimits.getOverride', { namespaceName: namespace, identifier: 'user_1' })).json.limit, 8);
    });

    test('an override set by v1 is seen by v2 getOverride; v2 setOverride keeps its async', async () => {
      const namespace = unique('o.v1');
      const id = await makeNamespace(w, namespace);
      const v1 = await w.post('/v1/ratelimits.setOverride', {
        namespaceName: namespace,
        identifier: 'fast',
        limit: 3,
        duration: LONG,
        async: true,
      });
      assert.equal(v1.status, 200, v1.body);
      const got = v2Data<Override>(await w.post('/v2/ratelimit.getOverride', { namespace, identifier: 'fast' }));
      assert.deepEqual(got, { overrideId: v1.json.overrideId, identifier: 'fast', limit: 3, duration: LONG });
      await set({ namespace: id, identifier: 'fast', limit: 4, duration: LONG });
      const after = await w.get('/v1/ratelimits.getOverride', { namespaceId: id, identifier: 'fast' });
      assert.deepEqual(after.json, { id: v1.json.overrideId, identifier: 'fast', limit: 4, duration: LONG, async: true });
    });

    test('getOverride matches as limiting does: the identifier’s own, else the best pattern', async () => {
      const namespace = unique('o.match');
      await makeNamespace(w, namespace);
      const star = await set({ namespace, identifier: 'user_*', limit: 10, duration: LONG });
      const own = await set({ namespace, identifier: 'user_own', limit: 20, duration: LONG });
      const get = (identifier: string) => w.post('/v2/ratelimit.getOverride', { namespace, identifier });
      assert.deepEqual(v2Data<Override>(await get('user_9')), { overrideId: star, identifier: 'user_*', limit: 10, duration: LONG });
      assert.equal(v2Data<Override>(await get('user_own')).overrideId, own);
      assertV2Error(await get('admin'), 404, OVR_404);
      assertV2Error(await w.post('/v2/ratelimit.getOverride', { namespace: unique('none'), identifier: 'x' }), 404, NS_404);
    });

    test('listOverrides pages by id with pagination {cursor, hasMore}, by name or id', async () => {
      const namespace = unique('o.list');
      const id = await makeNamespace(w, namespace);
      const ids = [];
      for (const identifier of ['a', 'b', 'c']) ids.push(await set({ namespace, identifier, limit: 1, duration: 1000 }));
      ids.sort();
      const first = await w.post('/v2/ratelimit.listOverrides', { namespace, limit: 2 });
      assert.deepEqual(
        v2Data<Override[]>(first).map((o) => o.overrideId),
        ids.slice(0, 2),
      );
      assert.equal(first.json.pagination.hasMore, true);
      const second = await w.post('/v2/ratelimit.listOverrides', { namespace: id, limit: 2, cursor: first.json.pagination.cursor });
      assert.deepEqual(
        v2Data<Override[]>(second).map((o) => o.overrideId),
        ids.slice(2),
      );
      assert.deepEqual(second.json.pagination, { hasMore: false });
      const all = v2Data<Override[]>(await w.post('/v2/ratelimit.listOverrides', { namespace }));
      assert.deepEqual(Object.keys(all[0]).sort(), ['duration', 'identifier', 'limit', 'overrideId']);
      assert.equal(all.length, 3);
      const empty = await w.post('/v2/ratelimit.listOverrides', { namespace: await makeNamespace(w, unique('o.empty')) });
      assert.deepEqual(v2Data(empty), []);
      assertV2Error(await w.post('/v2/ratelimit.listOverrides', { namespace: unique('none') }), 404, NS_404);
    });

    test('deleteOverride removes exactly that identifier; v1 then finds none', async () => {
      const namespace = unique('o.del');
      const id = await makeNamespace(w, namespace);
      const overrideId = await set({ namespace, identifier: 'user_*', limit: 1, duration: 1000 });
      const before = await snapshot(w, RL_TABLES);
      assertV2Error(await w.post('/v2/ratelimit.deleteOverride', { namespace, identifier: 'user_1' }), 404, OVR_404);
      assert.deepEqual(await snapshot(w, RL_TABLES), before, 'no pattern matching, nothing written');
      assert.deepEqual(v2Data(await w.post('/v2/ratelimit.deleteOverride', { namespace: id, identifier: 'user_*' })), {});
      assert.equal((await w.get('/v1/ratelimits.getOverride', { namespaceId: id, identifier: 'user_*' })).status, 404);
      assert.deepEqual(await auditEvents(w, overrideId), ['ratelimit.set_override', 'ratelimit.delete_override']);
      // And one deleted by v1 is gone for v2.
      await set({ namespace, identifier: 'x', limit: 1, duration: 1000 });
      assert.equal((await w.post('/v1/ratelimits.deleteOverride', { namespaceName: namespace, identifier: 'x' })).status, 200);
      assertV2Error(await w.post('/v2/ratelimit.getOverride', { namespace, identifier: 'x' }), 404, OVR_404);
    });

    test('failures write nothing: 400 with locations, 404 namespace, 403', async () => {
      const namespace = unique('o.fail');
      const id = await makeNamespace(w, namespace);
      const readOnly = await w.rootKey(['ratelimit.*.read_override']);
      const before = await snapshot(w, RL_TABLES);
      const bad = await w.post('/v2/ratelimit.setOverride', { namespace, identifier: '', limit: -1, duration: 10 });
      assertV2Error(bad, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(bad).sort(), ['/duration', '/identifier', '/limit']);
      const missing = await w.post('/v2/ratelimit.setOverride', { namespace: unique('nope'), identifier: 'x', limit: 1, duration: 1000 });
      assertV2Error(missing, 404, NS_404);
      const denied = await w.post('/v2/ratelimit.setOverride', { namespace, identifier: 'x', limit: 1, duration: 1000 }, readOnly);
      assertV2Error(denied, 403, 'unkey/authorization/insufficient_permissions');
      assert.match(denied.json.error.detail, new RegExp(`ratelimit\\.${id}\\.set_override`));
      assertV2Error(await w.post('/v2/ratelimit.listOverrides', { namespace, limit: 0 }), 400, 'unkey/application/invalid_input');
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      // The namespace's own permission is enough.
      await set({ namespace: id, identifier: 'x', limit: 1, duration: 1000 }, await w.rootKey([`ratelimit.${id}.set_override`]));
    });

    const foreign = (type: string, body: (ns: string) => Record<string, unknown>) => ({
      type,
      body: async (w: World, other: { root: string }) => {
        const name = unique('their.ns');
        const theirs = await makeNamespace(w, name, other.root);
        await set({ namespace: theirs, identifier: 'x', limit: 1, duration: 1000 }, other.root);
        return body(theirs);
      },
    });
    const withOverride = async (w: World) => {
      const namespace = await makeNamespace(w, unique('sec.o'));
      await set({ namespace, identifier: 'x', limit: 1, duration: 1000 });
      return namespace;
    };

    describe('security: ratelimit.setOverride', () =>
      v2SecurityTests(() => w, {
        path: '/v2/ratelimit.setOverride',
        body: async (w) => ({ namespace: await makeNamespace(w, unique('sec.s')), identifier: 'x', limit: 1, duration: 1000 }),
        permission: 'set_override',
        foreign: foreign(NS_404, (namespace) => ({ namespace, identifier: 'x', limit: 1, duration: 1000 })),
      }));
    describe('security: ratelimit.getOverride (a missing permission looks like no override)', () =>
      v2SecurityTests(() => w, {
        path: '/v2/ratelimit.getOverride',
        body: async (w) => ({ namespace: await withOverride(w), identifier: 'x' }),
        permission: 'read_override',
        masked: OVR_404,
        foreign: foreign(NS_404, (namespace) => ({ namespace, identifier: 'x' })),
      }));
    describe('security: ratelimit.listOverrides', () =>
      v2SecurityTests(() => w, {
        path: '/v2/ratelimit.listOverrides',
        body: async (w) => ({ namespace: await withOverride(w) }),
        permission: 'read_override',
        foreign: foreign(NS_404, (namespace) => ({ namespace })),
      }));
    describe('security: ratelimit.deleteOverride', () =>
      v2SecurityTests(() => w, {
        path: '/v2/ratelimit.deleteOverride',
        body: async (w) => ({ namespace: await withOverride(w), identifier: 'x' }),
        permission: 'delete_override',
        foreign: foreign(NS_404, (namespace) => ({ namespace, identifier: 'x' })),
      }));
  });
}
