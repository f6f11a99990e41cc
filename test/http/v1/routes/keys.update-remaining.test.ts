import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../../../helpers/harness.ts';
import type { Answer } from '../../../helpers/json.ts';
import { paths } from '../../../helpers/errors.ts';
import { count, keyRow } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';
import { openStore } from '../../../../src/store/store.ts';

/** A keys.updateRemaining answer: the new count (null: unlimited), or the error envelope. */
type Counted = Answer & { remaining: number | null };

for (const dialect of DIALECTS) {
  describe(`keys.updateRemaining (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      // The concurrency tests below run up to 50 transactions that queue on one key's row lock, each holding one of
      // the pool's 10 connections while it waits: the other 40 wait for a connection, on a loaded CI machine longer
      // than the store's default 2 s (then a fast 503, by design: test/store/availability.test.ts and
      // test/system/store-faults.test.ts). What these tests check is that every change counts exactly, so that
      // wait is raised here.
      w = await world(dialect, { openStore: (url) => openStore(url, { postgres: { connectMs: 20_000 } }) });
      apiId = await w.createApi('credits-api');
    });
    after(() => w.close());

    const op = (keyId: string, o: string, value: number | null, key?: string) =>
      w.post<Counted>('/v1/keys.updateRemaining', { keyId, op: o, value }, key);
    const ok = async (keyId: string, o: string, value: number | null): Promise<number | null> => {
      const r = await op(keyId, o, value);
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(Object.keys(r.json), ['remaining']);
      return r.json.remaining;
    };
    const remainingOf = async (keyId: string) => {
      const r = await w.get<{ remaining?: number }>('/v1/keys.getKey', { keyId });
      assert.equal(r.status, 200, r.body);
      return r.json.remaining;
    };
    const auditCount = () => count(w.store.db, 'audit_logs');
    /** A refused call changes nothing: same row, same number of audit records. */
    const assertRefused = async (keyId: string, res: Response, path: string, before: { row: unknown; audit: number }) => {
      assert.equal(res.status, 400, res.body);
      assert.equal(res.json.error.code, 'BAD_REQUEST');
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
      assert.deepEqual(paths(res), [path]);
      assert.deepEqual(await keyRow(w, keyId), before.row);
      assert.equal(await auditCount(), before.audit);
    };
    const snapshot = async (keyId: string) => ({ row: await keyRow(w, keyId), audit: await auditCount() });

    test('increment, decrement and set return the new count, which getKey shows', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 100 });
      assert.equal(await ok(keyId, 'increment', 10), 110);
      assert.equal(await remainingOf(keyId), 110);
      assert.equal(await ok(keyId, 'decrement', 20), 90);
      assert.equal(await remainingOf(keyId), 90);
      assert.equal(await ok(keyId, 'set', 10), 10);
      assert.equal(await remainingOf(keyId), 10);
      assert.equal(await ok(keyId, 'increment', 0), 10);
      assert.equal(await ok(keyId, 'set', 0), 0);
      assert.equal(await remainingOf(keyId), 0);
    });

    test('set null makes the key unlimited; set on an unlimited key gives it a count', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 5 });
      assert.equal(await ok(keyId, 'set', null), null);
      assert.equal(await remainingOf(keyId), undefined);
      assert.equal((await keyRow(w, keyId)).remaining, null);
      assert.equal(await ok(keyId, 'set', null), null, 'already unlimited: still fine');
      assert.equal(await ok(keyId, 'set', 3), 3);
      assert.equal(await remainingOf(keyId), 3);
    });

    test('a used-up key becomes valid again: decrement to exactly 0, then increment', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 4 });
      assert.equal(await ok(keyId, 'decrement', 4), 0);
      assert.equal(await remainingOf(keyId), 0);
      assert.equal(await ok(keyId, 'increment', 5), 5);
      const got = await w.get('/v1/keys.getKey', { keyId });
      assert.deepEqual([got.json.remaining, got.json.enabled], [5, true]);
      // A key disabled on purpose stays disabled: credits do not flip the enabled flag.
      const off = await w.createKey({ apiId, remaining: 1, enabled: false });
      assert.equal(await ok(off.keyId, 'set', 0), 0);
      assert.equal(await ok(off.keyId, 'increment', 2), 2);
      assert.equal((await w.get('/v1/keys.getKey', { keyId: off.keyId })).json.enabled, false);
    });

    test('a decrement larger than what is left → 400, nothing taken (remaining never goes below 0)', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 3 });
      const before = await snapshot(keyId);
      const res = await op(keyId, 'decrement', 4);
      await assertRefused(keyId, res, '/value', before);
      assert.match(res.json.error.errors[0].message, /3 remaining/);
      assert.equal(await remainingOf(keyId), 3);
    });

    test('increment or decrement of an unlimited key → 400 naming /op; use set', async () => {
      const { keyId } = await w.createKey({ apiId });
      const before = await snapshot(keyId);
      for (const o of ['increment', 'decrement']) {
        const res = await op(keyId, o, 1);
        await assertRefused(keyId, res, '/op', before);
        assert.match(res.json.error.errors[0].message, /unlimited/);
      }
      assert.equal(await remainingOf(keyId), undefined);
    });

    test('an increment past the largest safe count → 400, nothing changed', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: Number.MAX_SAFE_INTEGER - 1 });
      const before = await snapshot(keyId);
      await assertRefused(keyId, await op(keyId, 'increment', 2), '/value', before);
      assert.equal(await ok(keyId, 'increment', 1), Number.MAX_SAFE_INTEGER);
      assert.equal(await remainingOf(keyId), Number.MAX_SAFE_INTEGER);
    });

    test('set null on a key with a refill → 400 (a refill needs remaining); allowed once the refill is removed', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 2, refill: { interval: 'daily', amount: 2 } });
      const before = await snapshot(keyId);
      await assertRefused(keyId, await op(keyId, 'set', null), '/value', before);
      assert.equal(await ok(keyId, 'set', 7), 7, 'a number is fine');
      const cleared = await w.post('/v1/keys.updateKey', { keyId, refill: null });
      assert.equal(cleared.status, 200, cleared.body);
      assert.equal(await ok(keyId, 'set', null), null);
    });

    test('invalid bodies → 400 naming each problem; nothing changed', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 10 });
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{}, ['/keyId', '/op', '/value']],
        [{ keyId: '', op: 'set', value: 1 }, ['/keyId']],
        [{ keyId, op: 'XXX', value: 1 }, ['/op']],
        [{ keyId, value: 1 }, ['/op']],
        [{ keyId, op: 'set' }, ['/value']],
        [{ keyId, op: 'increment', value: null }, ['/value']],
        [{ keyId, op: 'decrement', value: null }, ['/value']],
        [{ keyId, op: 'increment', value: -1 }, ['/value']],
        [{ keyId, op: 'set', value: -1 }, ['/value']],
        [{ keyId, op: 'set', value: 1.5 }, ['/value']],
        [{ keyId, op: 'set', value: '5' }, ['/value']],
        [{ keyId, op: 'set', value: Number.MAX_SAFE_INTEGER + 1 }, ['/value']],
        [{ keyId: 5, op: 'inc', value: 'x' }, ['/keyId', '/op', '/value']],
      ];
      const before = await snapshot(keyId);
      for (const [body, expected] of cases) {
        const res = await w.post('/v1/keys.updateRemaining', body);
        const what = `${JSON.stringify(body)}: ${res.body}`;
        assert.equal(res.status, 400, what);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
        assert.deepEqual(paths(res), expected, what);
        assert.equal(res.json.error.errors.length, expected.length, `one entry per problem: ${what}`);
      }
      const badOp = await w.post('/v1/keys.updateRemaining', { keyId, op: 'XXX', value: 1 });
      assert.match(badOp.json.error.errors[0].message, /increment.*decrement.*set/, 'the allowed values are named');
      assert.deepEqual(await snapshot(keyId), before);
    });

    test('unknown, deleted, or key of a deleted api → 404 data/key-not-found', async () => {
      const deleted = await w.createKey({ apiId, remaining: 1 });
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: deleted.keyId })).status, 200);
      const goneApi = await w.createApi('gone-credits');
      const orphan = await w.createKey({ apiId: goneApi, remaining: 1 });
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: goneApi })).status, 200);
      const audit = await auditCount();
      for (const keyId of ['key_1111111111111111111111', deleted.keyId, orphan.keyId]) {
        const res = await op(keyId, 'increment', 1);
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
      }
      assert.equal((await keyRow(w, deleted.keyId)).remaining, 1);
      assert.equal(await auditCount(), audit);
    });

    test('audit key.update records op, value and {from, to}; a change_feed entry drops the key from caches', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 8 });
      const feed = async () =>
        (await w.store.db.selectFrom('change_feed').select('id').where('kind', '=', 'key').where('ref', '=', keyId).execute()).length;
      const feedBefore = await feed();
      const updater = await w.rootKey([`api.${apiId}.update_key`]);
      const res = await op(keyId, 'decrement', 3, updater);
      assert.equal(res.status, 200, res.body);
      await ok(keyId, 'set', 20);
      await ok(keyId, 'increment', 2);
      const rows = await w.store.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('target_id', '=', keyId)
        .where('event', '=', 'key.update')
        .orderBy('id')
        .execute();
      assert.deepEqual(
        rows.map((r) => JSON.parse(r.diff!)),
        [
          { remaining: { from: 8, to: 5 }, op: 'decrement', value: 3 },
          { remaining: { from: 5, to: 20 }, op: 'set', value: 20 },
          { remaining: { from: 20, to: 22 }, op: 'increment', value: 2 },
        ],
      );
      assert.equal(rows[0].request_id, res.headers['x-request-id']);
      assert.equal(rows[0].actor_type, 'root_key');
      assert.equal(rows[0].workspace_id, w.workspaceId);
      assert.equal(await feed(), feedBefore + 3);
      // A refused call commits neither audit nor change feed.
      assert.equal((await op(keyId, 'decrement', 100)).status, 400);
      assert.equal(await feed(), feedBefore + 3);
    });

    test('50 concurrent increments of 1 end at exactly +50, each seeing its own result', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 7 });
      const results = await Promise.all(Array.from({ length: 50 }, () => op(keyId, 'increment', 1)));
      for (const r of results) assert.equal(r.status, 200, r.body);
      assert.equal(await remainingOf(keyId), 57);
      assert.deepEqual(
        results.map((r) => r.json.remaining).sort((a, b) => a! - b!),
        Array.from({ length: 50 }, (_, i) => 8 + i),
      );
    });

    test('30 concurrent decrements of 1 on 10 credits: exactly 10 succeed, the rest are refused, never below 0', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 10 });
      const results = await Promise.all(Array.from({ length: 30 }, () => op(keyId, 'decrement', 1)));
      const succeeded = results.filter((r) => r.status === 200);
      assert.equal(succeeded.length, 10);
      assert.deepEqual(
        succeeded.map((r) => r.json.remaining).sort((a, b) => a! - b!),
        Array.from({ length: 10 }, (_, i) => i),
      );
      for (const r of results.filter((x) => x.status !== 200)) assert.equal(r.status, 400, r.body);
      assert.equal(await remainingOf(keyId), 0);
    });

    test('concurrent mixed increments and decrements add up exactly', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 1000 });
      const ops = Array.from({ length: 40 }, (_, i) => (i % 2 ? op(keyId, 'increment', 3) : op(keyId, 'decrement', 2)));
      for (const r of await Promise.all(ops)) assert.equal(r.status, 200, r.body);
      assert.equal(await remainingOf(keyId), 1000 + 20 * 3 - 20 * 2);
    });

    test('an api-specific update_key is enough; one for another api → 403 naming this api, nothing changed', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 1 });
      const otherApi = await w.createApi('other-credits');
      const specific = await op(keyId, 'increment', 1, await w.rootKey([`api.${apiId}.update_key`]));
      assert.equal(specific.status, 200, specific.body);
      const denied = await op(keyId, 'increment', 1, await w.rootKey([`api.${otherApi}.update_key`, `api.${apiId}.read_key`]));
      assert.equal(denied.status, 403, denied.body);
      assert.ok(denied.json.error.detail.includes(`api.${apiId}.update_key`), denied.json.error.detail);
      assert.equal(await remainingOf(keyId), 2);
    });

    securityTests(() => w, {
      get permission() {
        return `api.${apiId}.update_key`;
      },
      request: async () => ({
        method: 'POST',
        path: '/v1/keys.updateRemaining',
        body: { keyId: (await w.createKey({ apiId, remaining: 1 })).keyId, op: 'increment', value: 1 },
      }),
      foreign: async (_w, other) => {
        const otherApi = await w.createApi('foreign-credits', other.root);
        const { keyId } = await w.createKey({ apiId: otherApi, remaining: 1 }, other.root);
        return { method: 'POST', path: '/v1/keys.updateRemaining', body: { keyId, op: 'increment', value: 1 } };
      },
    });
  });
}
