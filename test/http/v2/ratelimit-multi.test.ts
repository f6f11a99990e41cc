import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { snapshot } from '../../helpers/rows.ts';
import { unique } from '../../helpers/rbac.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';
import { LONG, makeNamespace, RL_TABLES, v1Remaining } from './ratelimit.helpers.ts';

interface Item {
  namespace: string;
  identifier: string;
  limit: number;
  remaining: number;
  reset: number;
  passed: boolean;
  overrideId?: string;
}
interface Multi {
  passed: boolean;
  limits: Item[];
}

for (const dialect of DIALECTS) {
  describe(`v2 ratelimit.multiLimit (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const multi = (body: unknown, key?: string) => w.post('/v2/ratelimit.multiLimit', body, key);

    test('every item passes: each counted, answered in request order with the namespace as sent', async () => {
      const a = unique('multi.a');
      const b = unique('multi.b');
      const bId = await makeNamespace(w, b);
      const got = v2Data<Multi>(
        await multi([
          { namespace: a, identifier: 'u', limit: 5, duration: LONG, cost: 2 },
          { namespace: bId, identifier: 'u', limit: 3, duration: LONG },
        ]),
      );
      assert.equal(got.passed, true);
      assert.deepEqual(
        got.limits.map((l) => ({ ...l, reset: l.reset % LONG })),
        [
          { namespace: a, identifier: 'u', limit: 5, remaining: 3, reset: 0, passed: true },
          { namespace: bId, identifier: 'u', limit: 3, remaining: 2, reset: 0, passed: true },
        ],
      );
      // The same counters as v1's ratelimits.limit, and a's namespace was created.
      assert.equal(await v1Remaining(w, a, 'u', 5), 3);
      assert.equal(await v1Remaining(w, b, 'u', 3), 2);
    });

    test('all or nothing: one item over its limit and no item counts anything', async () => {
      const ns = unique('aon');
      await w.post('/v1/ratelimits.limit', { namespace: ns, identifier: 'full', limit: 1, duration: LONG });
      const got = v2Data<Multi>(
        await multi([
          { namespace: ns, identifier: 'free', limit: 10, duration: LONG, cost: 3 },
          { namespace: ns, identifier: 'full', limit: 1, duration: LONG },
        ]),
      );
      assert.equal(got.passed, false);
      assert.deepEqual(
        got.limits.map((l) => [l.identifier, l.passed, l.remaining]),
        [
          ['free', true, 10],
          ['full', false, 0],
        ],
      );
      assert.equal(await v1Remaining(w, ns, 'free', 10), 10, 'the item that fit was not counted');
    });

    test('items on one counter must fit together', async () => {
      const ns = unique('same');
      const item = { namespace: ns, identifier: 'u', limit: 5, duration: LONG, cost: 3 };
      const got = v2Data<Multi>(await multi([item, item]));
      assert.equal(got.passed, false);
      assert.deepEqual(
        got.limits.map((l) => l.passed),
        [true, false],
      );
      assert.equal(await v1Remaining(w, ns, 'u', 5), 5);
      const fits = v2Data<Multi>(await multi([{ ...item, cost: 2 }, item]));
      assert.equal(fits.passed, true);
      assert.equal(await v1Remaining(w, ns, 'u', 5), 0);
    });

    test('concurrent batches never take a counter past its limit', async () => {
      const ns = unique('race');
      const batch = [
        { namespace: ns, identifier: 'a', limit: 5, duration: LONG },
        { namespace: ns, identifier: 'b', limit: 5, duration: LONG },
      ];
      await makeNamespace(w, ns);
      const answers = await Promise.all(Array.from({ length: 20 }, () => multi(batch)));
      const passed = answers.filter((r) => v2Data<Multi>(r).passed).length;
      assert.ok(passed >= 1 && passed <= 5, `${passed} batches passed`);
      for (const id of ['a', 'b']) assert.ok((await v1Remaining(w, ns, id, 5)) <= 5 - passed);
    });

    test('overrides apply per item and are named', async () => {
      const ns = unique('movr');
      await makeNamespace(w, ns);
      const set = v2Data<{ overrideId: string }>(
        await w.post('/v2/ratelimit.setOverride', { namespace: ns, identifier: 'vip', limit: 50, duration: LONG }),
      );
      const got = v2Data<Multi>(
        await multi([
          { namespace: ns, identifier: 'vip', limit: 1, duration: 1000 },
          { namespace: ns, identifier: 'plain', limit: 1, duration: 1000 },
        ]),
      );
      assert.equal(got.limits[0].overrideId, set.overrideId);
      assert.equal(got.limits[0].limit, 50);
      assert.equal('overrideId' in got.limits[1], false);
    });

    test('body problems: 400 locating the item and member; empty and oversized lists refused; nothing written', async () => {
      const before = await snapshot(w, RL_TABLES);
      const ok = { namespace: unique('never'), identifier: 'u', limit: 1, duration: 1000 };
      const bad = await multi([ok, { ...ok, limit: 0 }]);
      assertV2Error(bad, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(bad), ['/1/limit']);
      assertV2Error(await multi([]), 400, 'unkey/application/invalid_input');
      assertV2Error(await multi(Array.from({ length: 101 }, () => ok)), 400, 'unkey/application/invalid_input');
      assertV2Error(await multi(ok), 400, 'unkey/application/invalid_input');
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
    });

    test('one item without permission: 403, no namespace created, nothing counted', async () => {
      const mine = unique('allowed');
      const id = await makeNamespace(w, mine);
      const key = await w.rootKey([`ratelimit.${id}.limit`]);
      const before = await snapshot(w, RL_TABLES);
      const res = await multi(
        [
          { namespace: mine, identifier: 'u', limit: 5, duration: LONG },
          { namespace: unique('brand.new'), identifier: 'u', limit: 5, duration: LONG },
        ],
        key,
      );
      assertV2Error(res, 403, 'unkey/authorization/insufficient_permissions');
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
      assert.equal(await v1Remaining(w, mine, 'u', 5), 5);
    });

    describe('security: ratelimit.multiLimit', () =>
      v2SecurityTests(() => w, {
        path: '/v2/ratelimit.multiLimit',
        body: async (w) => [{ namespace: await makeNamespace(w, unique('msec')), identifier: 'x', limit: 5, duration: 1000 }],
        permission: 'limit',
      }));
  });
}
