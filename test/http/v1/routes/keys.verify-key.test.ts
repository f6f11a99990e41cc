import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { sleep, windowWithRoom } from '../../../helpers/timing.ts';

for (const dialect of DIALECTS) {
  describe(`keys.verifyKey (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
    });
    after(() => w.close());

    const verify = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      w.app
        .inject({ method: 'POST', url: '/v1/keys.verifyKey', payload: body, headers: { 'content-type': 'application/json', ...headers } })
        .then((r) => ({ status: r.statusCode, json: r.json(), headers: r.headers }));

    test("a valid key: 200 VALID with the key's attributes; no root key needed, any Authorization ignored", async () => {
      const { keyId, key } = await w.createKey({
        apiId,
        name: 'main',
        externalId: 'user_v',
        meta: { plan: 'pro' },
        environment: 'live',
        roles: ['reader'],
        permissions: ['docs.read'],
        expires: Date.now() + 3_600_000,
      });
      const res = await verify({ key }, { authorization: 'Bearer public' });
      assert.equal(res.status, 200);
      const identity = (await w.get('/v1/keys.getKey', { keyId })).json.identity;
      assert.deepEqual(
        { ...res.json, requestId: undefined },
        {
          valid: true,
          code: 'VALID',
          keyId,
          name: 'main',
          ownerId: 'user_v',
          externalId: 'user_v',
          meta: { plan: 'pro' },
          expires: res.json.expires,
          enabled: true,
          permissions: ['docs.read'],
          roles: ['reader'],
          environment: 'live',
          identity,
          requestId: undefined,
        },
      );
      assert.equal(res.json.requestId, res.headers['x-request-id']);
    });

    test('unknown, deleted key, key of a deleted API → NOT_FOUND with nothing else', async () => {
      assert.deepEqual(
        { ...(await verify({ key: 'nope_123' })).json, requestId: undefined },
        { valid: false, code: 'NOT_FOUND', requestId: undefined },
      );
      const { keyId, key } = await w.createKey({ apiId });
      assert.equal((await verify({ key })).json.code, 'VALID');
      await w.post('/v1/keys.deleteKey', { keyId });
      assert.equal((await verify({ key })).json.code, 'NOT_FOUND', 'deletion reaches the cache at once');
      const doomedApi = await w.createApi('doomed');
      const other = await w.createKey({ apiId: doomedApi });
      assert.equal((await verify({ key: other.key })).json.code, 'VALID');
      await w.post('/v1/apis.deleteApi', { apiId: doomedApi });
      assert.equal((await verify({ key: other.key })).json.code, 'NOT_FOUND');
    });

    test('check order: DISABLED before FORBIDDEN before EXPIRED before INSUFFICIENT_PERMISSIONS before RATE_LIMITED before USAGE_EXCEEDED', async () => {
      const otherApi = await w.createApi('other');
      const base = { apiId, remaining: 1, ratelimit: { limit: 1, duration: 60_000 }, permissions: ['p.one'] };
      const disabled = await w.createKey({ ...base, enabled: false, expires: Date.now() - 1000 });
      const r1 = await verify({ key: disabled.key, apiId: otherApi, authorization: { permissions: 'p.two' } });
      assert.equal(r1.json.code, 'DISABLED');
      assert.equal(r1.json.valid, false);
      assert.equal(r1.json.remaining, 1, 'DISABLED still reports remaining, unspent');
      const expired = await w.createKey({ ...base, expires: Date.now() - 1000 });
      assert.equal((await verify({ key: expired.key, apiId: otherApi, authorization: { permissions: 'p.two' } })).json.code, 'FORBIDDEN');
      const r3 = await verify({ key: expired.key, apiId, authorization: { permissions: 'p.two' } });
      assert.equal(r3.json.code, 'EXPIRED');
      assert.deepEqual(r3.json.permissions, ['p.one'], "EXPIRED carries the key's attributes");
      const live = await w.createKey(base);
      await windowWithRoom(60_000, 5_000); // VALID then RATE_LIMITED in one window of the minute
      assert.equal((await verify({ key: live.key, authorization: { permissions: 'p.two' } })).json.code, 'INSUFFICIENT_PERMISSIONS');
      assert.equal((await verify({ key: live.key, authorization: { permissions: 'p.one' } })).json.code, 'VALID');
      const limited = await verify({ key: live.key });
      assert.equal(limited.json.code, 'RATE_LIMITED', 'the default limit of 1 per minute is used up');
      assert.equal(limited.json.remaining, 0);
      const spent = await w.createKey({ apiId, remaining: 1 });
      assert.equal((await verify({ key: spent.key })).json.code, 'VALID');
      const exceeded = await verify({ key: spent.key });
      assert.equal(exceeded.json.code, 'USAGE_EXCEEDED');
      assert.equal(exceeded.json.remaining, 0);
    });

    test('apiId of another workspace → NOT_FOUND; of another API of the same workspace → FORBIDDEN', async () => {
      const { key } = await w.createKey({ apiId });
      const other = await w.otherWorkspace();
      const foreignApi = await w.createApi('foreign', other.root);
      assert.equal((await verify({ key, apiId: foreignApi })).json.code, 'NOT_FOUND');
      assert.equal((await verify({ key, apiId: 'api_unknown' })).json.code, 'NOT_FOUND');
      assert.equal((await verify({ key, apiId: await w.createApi('sibling') })).json.code, 'FORBIDDEN');
      assert.equal((await verify({ key, apiId })).json.code, 'VALID');
    });

    test('permission queries: and/or nesting over direct and role permissions; invalid query → 400', async () => {
      const { key } = await w.createKey({ apiId, permissions: ['a', 'b'] });
      const cases: Array<[unknown, boolean]> = [
        ['a', true],
        ['c', false],
        [{ and: ['a', 'b'] }, true],
        [{ and: ['a', 'c'] }, false],
        [{ or: ['c', 'b'] }, true],
        [{ or: ['c', { and: ['a', 'b'] }] }, true],
        [{ and: ['a', { or: ['c', 'd'] }] }, false],
      ];
      for (const [permissions, valid] of cases) {
        const res = await verify({ key, authorization: { permissions } });
        assert.equal(res.json.valid, valid, JSON.stringify(permissions));
        if (!valid) assert.equal(res.json.code, 'INSUFFICIENT_PERMISSIONS');
      }
      for (const permissions of [{ and: ['a', {}] }, { or: [] }, { and: 'a' }, 42, '', { and: ['a'], or: ['b'] }]) {
        const res = await verify({ key, authorization: { permissions } });
        assert.equal(res.status, 400, JSON.stringify(permissions));
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.ok(res.json.error.errors.every((e: { path: string }) => e.path.startsWith('/authorization/permissions')));
      }
    });

    test('role changes reach verification at once', async () => {
      const { keyId, key } = await w.createKey({ apiId });
      const q = { key, authorization: { permissions: 'reports.read' } };
      assert.equal((await verify(q)).json.code, 'INSUFFICIENT_PERMISSIONS');
      const role = await w.post('/v1/permissions.createRole', { name: 'reporter', permissions: ['reports.read'] });
      assert.equal(role.status, 200, JSON.stringify(role.json));
      await w.post('/v1/keys.setRoles', { keyId, roles: [{ name: 'reporter' }] });
      const after = await verify(q);
      assert.equal(after.json.code, 'VALID');
      assert.deepEqual(after.json.roles, ['reporter']);
      await w.post('/v1/permissions.deleteRole', { roleId: role.json.roleId });
      assert.equal((await verify(q)).json.code, 'INSUFFICIENT_PERMISSIONS');
    });

    test('credits: default cost 1 counts down exactly to 0, then USAGE_EXCEEDED; cost 0 spends nothing; cost > remaining spends nothing', async () => {
      const { keyId, key } = await w.createKey({ apiId, remaining: 5 });
      const seen: number[] = [];
      for (let i = 0; i < 3; i++) seen.push((await verify({ key })).json.remaining);
      assert.deepEqual(seen, [4, 3, 2]);
      const zero = await verify({ key, remaining: { cost: 0 } });
      assert.equal(zero.json.code, 'VALID');
      assert.equal(zero.json.remaining, 2);
      const tooMuch = await verify({ key, remaining: { cost: 3 } });
      assert.equal(tooMuch.json.code, 'USAGE_EXCEEDED');
      assert.equal(tooMuch.json.remaining, 2);
      assert.equal((await verify({ key, remaining: { cost: 2 } })).json.remaining, 0);
      assert.equal((await verify({ key })).json.code, 'USAGE_EXCEEDED');
      const zeroAtZero = await verify({ key, remaining: { cost: 0 } });
      assert.equal(zeroAtZero.json.code, 'VALID', 'cost 0 on an empty key is still valid');
      assert.equal((await w.get('/v1/keys.getKey', { keyId })).json.remaining, 0);
      assert.equal((await verify({ key, remaining: { cost: -1 } })).status, 400);
    });

    test('credits are exact under concurrency: 60 concurrent verifications of a key with 25 credits → exactly 25 VALID', async () => {
      const { keyId, key } = await w.createKey({ apiId, remaining: 25 });
      const results = await Promise.all(Array.from({ length: 60 }, () => verify({ key })));
      const codes = results.map((r) => r.json.code);
      assert.equal(codes.filter((c) => c === 'VALID').length, 25);
      assert.equal(codes.filter((c) => c === 'USAGE_EXCEEDED').length, 35);
      assert.equal((await w.get('/v1/keys.getKey', { keyId })).json.remaining, 0);
    });

    test("rate limits: the key's default limit; RATE_LIMITED spends no credit; named inline and unknown limits", async () => {
      const { keyId, key } = await w.createKey({ apiId, remaining: 10, ratelimit: { limit: 2, duration: 60_000 } });
      // The limits here count in windows aligned to the minute: each limit's verifications must fall in one window.
      await windowWithRoom(60_000, 5_000);
      const first = await verify({ key });
      assert.equal(first.json.code, 'VALID');
      assert.equal(first.json.ratelimit.limit, 2);
      assert.equal(first.json.ratelimit.remaining, 1);
      assert.ok(first.json.ratelimit.reset > Date.now());
      assert.equal((await verify({ key })).json.code, 'VALID');
      const limited = await verify({ key });
      assert.equal(limited.json.code, 'RATE_LIMITED');
      assert.equal(limited.json.ratelimit.remaining, 0);
      assert.equal((await w.get('/v1/keys.getKey', { keyId })).json.remaining, 8, 'a rate-limited call spends no credit');

      const plain = await w.createKey({ apiId });
      const inline = { key: plain.key, ratelimits: [{ name: 'burst', limit: 1, duration: 60_000 }] };
      assert.equal((await verify(inline)).json.code, 'VALID');
      assert.equal((await verify(inline)).json.code, 'RATE_LIMITED');
      const unknown = await verify({ key: plain.key, ratelimits: [{ name: 'nope' }] });
      assert.equal(unknown.status, 400);
      assert.deepEqual(
        unknown.json.error.errors.map((e: { path: string }) => e.path),
        ['/ratelimits/0/name'],
      );
    });

    test("identity rate limits are shared by all the identity's keys", async () => {
      await w.post('/v1/identities.createIdentity', { externalId: 'shared', ratelimits: [{ name: 'calls', limit: 3, duration: 60_000 }] });
      const a = await w.createKey({ apiId, externalId: 'shared' });
      const b = await w.createKey({ apiId, externalId: 'shared' });
      await windowWithRoom(60_000, 5_000); // the four in one window of the minute
      const codes = [];
      for (const k of [a, b, a, b]) codes.push((await verify({ key: k.key, ratelimits: [{ name: 'calls' }] })).json.code);
      assert.deepEqual(codes, ['VALID', 'VALID', 'VALID', 'RATE_LIMITED']);
    });

    test('a rate-limit window resets', async () => {
      const { key } = await w.createKey({ apiId, ratelimit: { limit: 1, duration: 1000 } });
      await windowWithRoom(1000, 900); // both in one 1 s window, with room for a slow first verification
      assert.equal((await verify({ key })).json.code, 'VALID');
      assert.equal((await verify({ key })).json.code, 'RATE_LIMITED');
      await sleep(1100);
      assert.equal((await verify({ key })).json.code, 'VALID');
    });

    test('an expiring key verifies until its time, then EXPIRED', async () => {
      const { key } = await w.createKey({ apiId, expires: Date.now() + 800 });
      assert.equal((await verify({ key })).json.code, 'VALID');
      await sleep(900);
      assert.equal((await verify({ key })).json.code, 'EXPIRED');
    });

    test('a changed key is seen at once: deleted via deleteKey; a second app on the same store sees it within 1 s', async () => {
      const { keyId, key } = await w.createKey({ apiId });
      const { buildApp } = await import('../../../../src/app.ts');
      const second = await buildApp({ store: w.store });
      try {
        const viaSecond = () => second.inject({ method: 'POST', url: '/v1/keys.verifyKey', payload: { key } }).then((r) => r.json().code);
        assert.equal(await viaSecond(), 'VALID');
        assert.equal((await verify({ key })).json.code, 'VALID');
        // Cache the key on the second app, then change it through the first app's store only (as another process would).
        await w.store.db.transaction().execute(async (tx) => {
          await tx.updateTable('keys').set({ enabled: 0 }).where('id', '=', keyId).execute();
          await tx
            .insertInto('change_feed')
            .values({ id: `chg_test_${keyId}`, kind: 'key', ref: keyId, created_at: Date.now() })
            .execute();
        });
        const t0 = Date.now();
        let code = await viaSecond();
        while (code !== 'DISABLED' && Date.now() - t0 < 1000) {
          await sleep(20);
          code = await viaSecond();
        }
        assert.equal(code, 'DISABLED', 'the change feed reached the second app within 1 s');
      } finally {
        await second.close();
      }
    });

    test('missing key → 400; unknown members ignored', async () => {
      const res = await verify({});
      assert.equal(res.status, 400);
      assert.deepEqual(
        res.json.error.errors.map((e: { path: string }) => e.path),
        ['/key'],
      );
      const { key } = await w.createKey({ apiId });
      assert.equal((await verify({ key, tags: ['a'], ratelimit: { cost: 1 } })).json.code, 'VALID');
    });
  });
}
