import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { windowWithRoom } from '../../helpers/timing.ts';
import { snapshot } from '../../helpers/rows.ts';
import { unique } from '../../helpers/rbac.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';
import { LONG, makeNamespace, RL_TABLES, v1Remaining } from './ratelimit.helpers.ts';

interface Limited {
  limit: number;
  remaining: number;
  reset: number;
  success: boolean;
  overrideId?: string;
}

for (const dialect of DIALECTS) {
  describe(`v2 ratelimit.limit (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const limit = (body: Record<string, unknown>, key?: string) => w.post('/v2/ratelimit.limit', body, key);

    test('creates the namespace on first use; {limit, remaining, reset, success}; refusal is a 200', async () => {
      const namespace = unique('v2.api');
      // 2 a minute, in windows aligned to the minute: the three calls must fall in one window.
      await windowWithRoom(60_000, 5_000);
      const t0 = Date.now();
      const first = v2Data<Limited>(await limit({ namespace, identifier: 'user_1', limit: 2, duration: 60_000 }));
      assert.deepEqual(Object.keys(first).sort(), ['limit', 'remaining', 'reset', 'success']);
      assert.deepEqual({ ...first, reset: 0 }, { limit: 2, remaining: 1, reset: 0, success: true });
      assert.equal(first.reset % 60_000, 0);
      assert.ok(first.reset > t0 && first.reset <= t0 + 60_000 + 1000);
      const v1 = await w.get('/v1/ratelimits.getNamespace', { namespaceName: namespace });
      assert.equal(v1.status, 200, v1.body);
      assert.match(String(v1.json.id), /^rlns_/);
      v2Data(await limit({ namespace, identifier: 'user_1', limit: 2, duration: 60_000 }));
      const refused = v2Data<Limited>(await limit({ namespace, identifier: 'user_1', limit: 2, duration: 60_000 }));
      assert.deepEqual({ success: refused.success, remaining: refused.remaining }, { success: false, remaining: 0 });
    });

    test('the namespace by id or by name is one namespace; cost 0 probes, cost n spends n', async () => {
      const namespace = unique('by.id');
      const id = await makeNamespace(w, namespace);
      const body = { identifier: 'u', limit: 10, duration: LONG };
      assert.equal(v2Data<Limited>(await limit({ ...body, namespace: id, cost: 4 })).remaining, 6);
      assert.equal(v2Data<Limited>(await limit({ ...body, namespace, cost: 0 })).remaining, 6);
      assert.equal(v2Data<Limited>(await limit({ ...body, namespace: id })).remaining, 5);
      assert.equal(
        await w.store.db
          .selectFrom('ratelimit_namespaces')
          .select('id')
          .where('workspace_id', '=', w.workspaceId)
          .where('name', '=', id)
          .executeTakeFirst(),
        undefined,
        'naming a namespace by its id creates none',
      );
    });

    test('counters are shared with v1: v1 and v2 requests on one namespace and identifier count together', async () => {
      const namespace = unique('shared');
      const body = { namespace, identifier: 'ip_1', limit: 3, duration: LONG };
      assert.equal((await w.post('/v1/ratelimits.limit', body)).json.remaining, 2);
      assert.equal(v2Data<Limited>(await limit(body)).remaining, 1);
      assert.equal((await w.post('/v1/ratelimits.limit', body)).json.remaining, 0);
      const fourth = v2Data<Limited>(await limit(body));
      assert.equal(fourth.success, false);
      assert.equal((await w.post('/v1/ratelimits.limit', body)).json.success, false);
    });

    test('an override (set by v1) replaces limit and duration and is named by overrideId', async () => {
      const namespace = unique('ovr');
      await makeNamespace(w, namespace);
      const set = await w.post('/v1/ratelimits.setOverride', { namespaceName: namespace, identifier: 'vip_*', limit: 100, duration: LONG });
      assert.equal(set.status, 200, set.body);
      const r = v2Data<Limited>(await limit({ namespace, identifier: 'vip_7', limit: 1, duration: 1000 }));
      assert.deepEqual({ ...r, reset: 0 }, { limit: 100, remaining: 99, reset: 0, success: true, overrideId: set.json.overrideId });
      assert.equal(r.reset % LONG, 0);
      assert.equal(v2Data<Limited>(await limit({ namespace, identifier: 'other', limit: 1, duration: 1000 })).overrideId, undefined);
    });

    test('body problems: 400 with errors[] locating each, and nothing written', async () => {
      const before = await snapshot(w, RL_TABLES);
      const bad = await limit({ namespace: unique('bad'), limit: 0, duration: 999, cost: -1 });
      assertV2Error(bad, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(bad).sort(), ['/cost', '/duration', '/identifier', '/limit']);
      assertV2Error(await limit({ namespace: '', identifier: 'x', limit: 1, duration: 1000 }), 400, 'unkey/application/invalid_input');
      assertV2Error(await limit({ identifier: 'x', limit: 1, duration: 1000 }), 400, 'unkey/application/invalid_input');
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
    });

    test('a new namespace needs ratelimit.*.create_namespace: without it 403 and nothing written', async () => {
      const key = await w.rootKey(['ratelimit.*.limit']);
      const before = await snapshot(w, RL_TABLES);
      const res = await limit({ namespace: unique('new'), identifier: 'x', limit: 1, duration: 1000 }, key);
      assertV2Error(res, 403, 'unkey/authorization/insufficient_permissions');
      assert.match(res.json.error.detail, /ratelimit\.\*\.create_namespace/);
      assert.deepEqual(await snapshot(w, RL_TABLES), before);
    });

    test('an existing namespace needs ratelimit.<namespaceId>.limit (or ratelimit.*.limit)', async () => {
      const namespace = unique('perm');
      const id = await makeNamespace(w, namespace);
      const body = { namespace, identifier: 'x', limit: 5, duration: LONG };
      const denied = await limit(body, await w.rootKey(['ratelimit.rlns_other.limit']));
      assertV2Error(denied, 403, 'unkey/authorization/insufficient_permissions');
      assert.equal(await v1Remaining(w, namespace, 'x', 5), 5, 'a refused request counts nothing');
      assert.equal(v2Data<Limited>(await limit(body, await w.rootKey([`ratelimit.${id}.limit`]))).remaining, 4);
      assert.equal(v2Data<Limited>(await limit({ ...body, namespace: id }, await w.rootKey(['ratelimit.*.limit']))).remaining, 3);
    });

    test('a namespace deleted (v1 deleteNamespace) is made again from zero: no 410, as v1', async () => {
      const namespace = unique('gone');
      const id = await makeNamespace(w, namespace);
      const body = { namespace, identifier: 'u', limit: 2, duration: LONG };
      v2Data(await limit(body));
      assert.equal((await w.post('/v1/ratelimits.deleteNamespace', { namespaceId: id })).status, 200);
      assert.equal(v2Data<Limited>(await limit(body)).remaining, 1);
      const again = await w.store.db
        .selectFrom('ratelimit_namespaces')
        .select('id')
        .where('name', '=', namespace)
        .executeTakeFirstOrThrow();
      assert.notEqual(again.id, id);
    });

    test("another workspace's namespace id names nothing here: its counters stay untouched", async () => {
      const other = await w.otherWorkspace();
      const name = unique('theirs');
      const theirId = await makeNamespace(w, name, other.root);
      const body = { identifier: 'x', limit: 5, duration: LONG };
      v2Data(await limit({ ...body, namespace: theirId }));
      const mine = await w.store.db.selectFrom('ratelimit_namespaces').selectAll().where('name', '=', theirId).executeTakeFirstOrThrow();
      assert.equal(mine.workspace_id, w.workspaceId);
      assert.notEqual(mine.id, theirId);
      const theirs = v2Data<Limited>(await limit({ ...body, namespace: name, cost: 0 }, other.root));
      assert.equal(theirs.remaining, 5);
    });

    describe('security: ratelimit.limit', () =>
      v2SecurityTests(() => w, {
        path: '/v2/ratelimit.limit',
        body: async (w) => ({ namespace: await makeNamespace(w, unique('sec')), identifier: 'x', limit: 5, duration: 1000 }),
        permission: 'limit',
      }));
  });
}
