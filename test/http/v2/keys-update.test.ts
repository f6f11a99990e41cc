import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { keyRow, snapshot } from '../../helpers/rows.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';

const TABLES = ['keys', 'ratelimits', 'identities', 'roles', 'permissions', 'keys_roles', 'keys_permissions', 'audit_logs'] as const;

type Created = { keyId: string; key: string };
type Limit = { id: string; name: string; limit: number; duration: number; autoApply: boolean };

for (const dialect of DIALECTS) {
  describe(`v2 keys.updateKey, keys.updateCredits (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('v2-updates');
      for (const name of ['admin', 'viewer']) assert.equal((await w.post('/v1/permissions.createRole', { name })).status, 200);
    });
    after(() => w.close());

    const create = async (body: Record<string, unknown> = {}) => v2Data<Created>(await w.post('/v2/keys.createKey', { apiId, ...body }));
    const get = async (keyId: string) => v2Data(await w.post('/v2/keys.getKey', { keyId }));
    const update = async (keyId: string, body: Record<string, unknown>) =>
      assert.deepEqual(v2Data(await w.post('/v2/keys.updateKey', { keyId, ...body })), {});
    const credits = (keyId: string, operation: string, value?: number | null) =>
      w.post('/v2/keys.updateCredits', { keyId, operation, ...(value !== undefined ? { value } : {}) });

    test('absent members stay, null clears, a value sets; v1 reads the result', async () => {
      const { keyId } = await create({ name: 'before', meta: { a: 1 }, expires: 4_000_000_000_000, externalId: 'user_a' });
      await update(keyId, { name: 'after', enabled: false });
      let data = await get(keyId);
      assert.equal(data.name, 'after');
      assert.equal(data.enabled, false);
      assert.deepEqual(data.meta, { a: 1 });
      assert.equal((data.identity as unknown as { externalId: string }).externalId, 'user_a');
      await update(keyId, { name: null, meta: null, expires: null, externalId: null });
      data = await get(keyId);
      for (const member of ['name', 'meta', 'expires', 'identity']) assert.equal(data[member], undefined, member);
      await update(keyId, { externalId: 'user_b', meta: { b: 2 } });
      const v1 = await w.get('/v1/keys.getKey', { keyId });
      assert.equal(v1.json.externalId, 'user_b');
      assert.deepEqual(v1.json.meta, { b: 2 });
      assert.equal(v1.json.enabled, false);
    });

    test('credits: set, refill, null (unlimited without refill), remaining null also drops the refill', async () => {
      const { keyId } = await create();
      await update(keyId, { credits: { remaining: 5, refill: { interval: 'monthly', amount: 50, refillDay: 3 } } });
      assert.deepEqual((await get(keyId)).credits, { remaining: 5, refill: { interval: 'monthly', amount: 50, refillDay: 3 } });
      await update(keyId, { credits: { refill: null } });
      assert.deepEqual((await get(keyId)).credits, { remaining: 5 });
      await update(keyId, { credits: { refill: { interval: 'daily', amount: 9 } } });
      await update(keyId, { credits: { remaining: null } });
      assert.equal((await get(keyId)).credits, undefined);
      assert.equal((await keyRow(w, keyId)).refill_amount, null);
      await update(keyId, { credits: { remaining: 1, refill: { interval: 'daily', amount: 1 } } });
      await update(keyId, { credits: null });
      const row = await keyRow(w, keyId);
      assert.deepEqual([row.remaining, row.refill_interval, row.refill_amount], [null, null, null]);
    });

    test('ratelimits replace the key limits by name: same name keeps its id, others go, [] removes all', async () => {
      const { keyId } = await create({
        ratelimits: [
          { name: 'keep', limit: 1, duration: 1000, autoApply: true },
          { name: 'drop', limit: 2, duration: 1000, autoApply: false },
        ],
      });
      const [, kept] = (await get(keyId)).ratelimits as unknown as Limit[];
      assert.equal(kept.name, 'keep');
      await update(keyId, {
        ratelimits: [
          { name: 'keep', limit: 10, duration: 2000, autoApply: false },
          { name: 'fresh', limit: 3, duration: 1000, autoApply: true },
        ],
      });
      const after = (await get(keyId)).ratelimits as unknown as Limit[];
      assert.deepEqual(
        after.map(({ id, ...l }) => l),
        [
          { name: 'fresh', limit: 3, duration: 1000, autoApply: true },
          { name: 'keep', limit: 10, duration: 2000, autoApply: false },
        ],
      );
      assert.equal(after[1].id, kept.id);
      await update(keyId, { ratelimits: [] });
      assert.equal((await get(keyId)).ratelimits, undefined);
    });

    test('roles and permissions replace the key ones; missing slugs are created, unknown roles are a 404 changing nothing', async () => {
      const { keyId } = await create({ roles: ['admin'], permissions: ['old.perm'] });
      await update(keyId, { roles: ['viewer'], permissions: ['new.perm'] });
      const data = await get(keyId);
      assert.deepEqual(data.roles, ['viewer']);
      assert.deepEqual(data.permissions, ['new.perm']);
      const before = await snapshot(w, TABLES);
      const row = await keyRow(w, keyId);
      const res = await w.post('/v2/keys.updateKey', { keyId, name: 'changed', roles: ['ghost'], permissions: ['another.perm'] });
      assertV2Error(res, 404, 'unkey/data/role_not_found');
      assert.deepEqual(await snapshot(w, TABLES), before);
      assert.deepEqual(await keyRow(w, keyId), row);
    });

    test('updateKey problems: 400s at v2 paths, 404 for an unknown key; nothing written', async () => {
      const { keyId } = await create();
      const before = await snapshot(w, TABLES);
      const row = await keyRow(w, keyId);
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{ credits: { refill: { interval: 'monthly', amount: 1 } } }, ['/credits/refill/refillDay']],
        [{ credits: { remaining: 1, refill: { interval: 'daily', amount: 1, refillDay: 2 } } }, ['/credits/refill/refillDay']],
        [{ credits: { remaining: null, refill: { interval: 'daily', amount: 1 } } }, ['/credits/refill']],
        // The key has no credit count: a refill alone would refill nothing (Keyhold's rule, both versions).
        [{ credits: { refill: { interval: 'daily', amount: 1 } } }, ['/credits/refill']],
        [
          {
            ratelimits: [
              { name: 'twice', limit: 1, duration: 1000, autoApply: true },
              { name: 'twice', limit: 1, duration: 1000, autoApply: true },
            ],
          },
          ['/ratelimits/1/name'],
        ],
        [{ enabled: null, name: '' }, ['/enabled', '/name']],
      ];
      for (const [body, locations] of cases) {
        const res = await w.post('/v2/keys.updateKey', { keyId, ...body });
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res).sort(), locations, JSON.stringify(body));
      }
      assertV2Error(await w.post('/v2/keys.updateKey', { keyId: 'key_missing', name: 'x' }), 404, 'unkey/data/key_not_found');
      assert.deepEqual(await snapshot(w, TABLES), before);
      assert.deepEqual(await keyRow(w, keyId), row);
    });

    test('updateCredits: set, increment, decrement floored at 0, set null/no value → unlimited without refill', async () => {
      const { keyId, key } = await create({ credits: { remaining: 10, refill: { interval: 'daily', amount: 10 } } });
      assert.deepEqual(v2Data(await credits(keyId, 'set', 3)), { remaining: 3, refill: { interval: 'daily', amount: 10 } });
      assert.deepEqual(v2Data(await credits(keyId, 'increment', 4)), { remaining: 7, refill: { interval: 'daily', amount: 10 } });
      assert.deepEqual(v2Data(await credits(keyId, 'decrement', 2)), { remaining: 5, refill: { interval: 'daily', amount: 10 } });
      // The same count v1 and verification see, at once (caches drop the key).
      assert.equal((await w.post('/v1/keys.verifyKey', { key }, null)).json.remaining, 4);
      assert.deepEqual(v2Data(await credits(keyId, 'decrement', 100)), { remaining: 0, refill: { interval: 'daily', amount: 10 } });
      assert.equal((await w.post('/v1/keys.verifyKey', { key }, null)).json.code, 'USAGE_EXCEEDED');
      assert.deepEqual(v2Data(await credits(keyId, 'set', null)), { remaining: null });
      assert.equal((await keyRow(w, keyId)).refill_interval, null);
      assert.deepEqual(v2Data(await credits(keyId, 'set', 2)), { remaining: 2 });
      assert.deepEqual(v2Data(await credits(keyId, 'set')), { remaining: null });
      const audit = await w.store.db.selectFrom('audit_logs').select('event').where('target_id', '=', keyId).execute();
      assert.equal(audit.filter((a) => a.event === 'key.update').length, 7);
    });

    test('updateCredits shares v1 updateRemaining: v1 keeps its rules (no floor, no silent refill removal)', async () => {
      const { keyId } = await create({ credits: { remaining: 1, refill: { interval: 'daily', amount: 1 } } });
      assert.equal((await w.post('/v1/keys.updateRemaining', { keyId, op: 'decrement', value: 5 })).status, 400);
      assert.equal((await w.post('/v1/keys.updateRemaining', { keyId, op: 'set', value: null })).status, 400);
      assert.equal((await w.post('/v1/keys.updateRemaining', { keyId, op: 'increment', value: 2 })).json.remaining, 3);
      assert.deepEqual((await get(keyId)).credits, { remaining: 3, refill: { interval: 'daily', amount: 1 } });
    });

    test('updateCredits problems: no value for increment/decrement, unlimited keys, unknown key; nothing written', async () => {
      const { keyId } = await create();
      const before = await snapshot(w, TABLES);
      for (const [operation, value, location] of [
        ['increment', undefined, '/value'],
        ['decrement', null, '/value'],
        ['increment', 1, '/operation'],
        ['decrement', 1, '/operation'],
        ['add', 1, '/operation'],
      ] as const) {
        const res = await credits(keyId, operation, value);
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), [location], `${operation} ${value}`);
      }
      assertV2Error(await credits('key_missing', 'set', 1), 404, 'unkey/data/key_not_found');
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    const foreignKey = async (w: World, other: { root: string }) =>
      w.createKey({ apiId: await w.createApi('theirs', other.root), remaining: 1 }, other.root);
    describe('security: keys.updateKey', () =>
      v2SecurityTests(() => w, {
        path: '/v2/keys.updateKey',
        body: async () => ({ keyId: (await create()).keyId, name: 'secured' }),
        permission: 'update_key',
        foreign: { body: async (w, other) => ({ keyId: (await foreignKey(w, other)).keyId, name: 'x' }), type: 'unkey/data/key_not_found' },
      }));
    describe('security: keys.updateCredits', () =>
      v2SecurityTests(() => w, {
        path: '/v2/keys.updateCredits',
        body: async () => ({ keyId: (await create({ credits: { remaining: 1 } })).keyId, operation: 'increment', value: 1 }),
        permission: 'update_key',
        foreign: {
          body: async (w, other) => ({ keyId: (await foreignKey(w, other)).keyId, operation: 'set', value: 1 }),
          type: 'unkey/data/key_not_found',
        },
      }));
  });
}
