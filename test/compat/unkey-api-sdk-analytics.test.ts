import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Unkey } from '@unkey/api';
import { DIALECTS } from '../helpers/harness.ts';
import { startKeyhold, type KeyholdServer } from '../helpers/unkey-server.ts';
import { eventually, expectV1 } from '../helpers/unkey-sdk.ts';

// Issue 11, continued from unkey-api-sdk.test.ts: @unkey/api 0.38's keys.getVerifications and
// analytics.getVerifications against Keyhold over real HTTP, each result checked against the SDK's own types.
// Arrays reach Keyhold comma-joined (docs/compatibility-v1.md), tag lists included.

for (const dialect of DIALECTS) {
  describe(`@unkey/api 0.38 against Keyhold: verification analytics (${dialect})`, () => {
    let server: KeyholdServer;
    let unkey: Unkey;
    /** An API with two keys, verified `verifications` times each (the first with tag `checkout`), counted. */
    let verified: { apiId: string; keyIds: [string, string]; start: number };
    const verifications = 2;
    before(async () => {
      server = await startKeyhold(dialect);
      unkey = new Unkey({ rootKey: server.root, baseUrl: server.baseUrl, retry: { attempts: 0 } });
      const apiId = expectV1(await unkey.apis.create({ name: 'sdk-analytics' }), 'apis.createApi', 'post').apiId;
      const a = expectV1(await unkey.keys.create({ apiId, externalId: 'user_counted' }), 'keys.createKey', 'post');
      const b = expectV1(await unkey.keys.create({ apiId }), 'keys.createKey', 'post');
      for (let i = 0; i < verifications; i++) {
        expectV1(await unkey.keys.verify({ key: a.key, tags: ['checkout'] }), 'keys.verifyKey', 'post');
        expectV1(await unkey.keys.verify({ key: b.key }), 'keys.verifyKey', 'post');
      }
      const start = Date.now() - 3 * 3_600_000;
      await eventually(async () => {
        const rows = expectV1(await unkey.analytics.getVerifications({ apiId, start }), 'analytics.getVerifications', 'get');
        return rows[0]?.total === 2 * verifications;
      }, 'the verifications to be counted'); // the recorder writes once per second
      verified = { apiId, keyIds: [a.keyId, b.keyId], start };
    });
    after(() => server.close());

    test('keys.getVerifications, by keyId (per day) and by ownerId', async () => {
      const [keyId] = verified.keyIds;
      const byKey = expectV1(await unkey.keys.getVerifications({ keyId, granularity: 'day' }), 'keys.getVerifications', 'get');
      const sum = (name: 'success' | 'rateLimited' | 'usageExceeded') => byKey.verifications.reduce((n, v) => n + v[name], 0);
      assert.deepEqual([sum('success'), sum('rateLimited'), sum('usageExceeded')], [verifications, 0, 0]);
      const byOwner = expectV1(await unkey.keys.getVerifications({ ownerId: 'user_counted' }), 'keys.getVerifications', 'get');
      assert.deepEqual(byOwner.verifications, byKey.verifications);
    });

    test('analytics.getVerifications: by hour (zero-filled), by key, ordered and limited', async () => {
      const { apiId, start, keyIds } = verified;
      const hourly = expectV1(
        await unkey.analytics.getVerifications({ apiId, start, end: Date.now(), groupBy: 'hour', orderBy: 'time', order: 'asc' }),
        'analytics.getVerifications',
        'get',
      );
      assert.ok(hourly.length >= 3, `zero-filled hours: ${JSON.stringify(hourly)}`);
      assert.equal(
        hourly.reduce((n, r) => n + (r.valid ?? 0), 0),
        2 * verifications,
      );
      const byKey = expectV1(
        await unkey.analytics.getVerifications({ apiId, start, groupBy: 'key', orderBy: 'total', order: 'desc', limit: 1 }),
        'analytics.getVerifications',
        'get',
      );
      assert.equal(byKey.length, 1);
      assert.ok(keyIds.includes(byKey[0].keyId!));
      const one = expectV1(await unkey.analytics.getVerifications({ apiId, start, keyId: keyIds[1] }), 'analytics.getVerifications', 'get');
      assert.equal(one[0].valid, verifications);
      const identity = expectV1(
        await unkey.analytics.getVerifications({ apiId, start, externalId: 'user_counted', groupBy: 'identity' }),
        'analytics.getVerifications',
        'get',
      );
      assert.deepEqual(
        identity.map((r) => [r.identity?.externalId, r.total]),
        [['user_counted', verifications]],
      );
    });

    test('analytics.getVerifications with several keys or groupings: the SDK sends them comma-joined, Keyhold splits them', async () => {
      const { apiId, start, keyIds } = verified;
      // URLSearchParams.set(name, array.toString()): `keyId=key_a,key_b`, `groupBy=key,hour`.
      const both = expectV1(await unkey.analytics.getVerifications({ apiId, start, keyId: keyIds }), 'analytics.getVerifications', 'get');
      assert.deepEqual(
        both.map((r) => [r.valid, r.total]),
        [[2 * verifications, 2 * verifications]],
      );
      const grouped = expectV1(
        await unkey.analytics.getVerifications({ apiId, start, groupBy: ['key', 'hour'] }),
        'analytics.getVerifications',
        'get',
      );
      // (hour, key) rows: one per key, or two if the verifications straddled an hour.
      assert.ok(
        grouped.every((r) => typeof r.time === 'number' && typeof r.keyId === 'string'),
        JSON.stringify(grouped),
      );
      const perKey = new Map<string, number>();
      for (const r of grouped) perKey.set(r.keyId!, (perKey.get(r.keyId!) ?? 0) + (r.valid ?? 0));
      assert.deepEqual([...perKey].sort(), keyIds.map((k) => [k, verifications]).sort());
      const oneOfTwo = expectV1(
        await unkey.analytics.getVerifications({ apiId, start, keyId: [keyIds[0], 'key_nothing'], groupBy: ['key'] }),
        'analytics.getVerifications',
        'get',
      );
      assert.deepEqual(
        oneOfTwo.map((r) => [r.keyId, r.valid]),
        [[keyIds[0], verifications]],
      );
    });

    test('analytics.getVerifications by tag: the tags keys.verify sent filter (all of them) and group', async () => {
      const { apiId, start, keyIds } = verified;
      const get = async (query: Omit<Parameters<typeof unkey.analytics.getVerifications>[0], 'apiId' | 'start'>) =>
        expectV1(await unkey.analytics.getVerifications({ apiId, start, ...query }), 'analytics.getVerifications', 'get');
      assert.deepEqual(
        (await get({ tag: 'checkout' })).map((r) => [r.valid, r.total]),
        [[verifications, verifications]],
      );
      // A list reaches Keyhold comma-joined (`tag=checkout,other`): verifications carrying both, none here.
      assert.deepEqual(
        (await get({ tag: ['checkout', 'other'] })).map((r) => r.total),
        [0],
      );
      assert.deepEqual(
        (await get({ groupBy: 'tag' })).map((r) => [r.tag, r.valid]),
        [['checkout', verifications]],
      );
      assert.deepEqual(
        (await get({ groupBy: ['tags', 'key'] })).map((r) => [r.keyId, r.tags, r.valid]).sort(),
        [
          [keyIds[0], ['checkout'], verifications],
          [keyIds[1], [], verifications],
        ].sort(),
      );
      const both = await unkey.analytics.getVerifications({ apiId, start, groupBy: ['tag', 'tags'] });
      assert.equal(both.result, undefined, JSON.stringify(both.result));
      assert.equal(both.error?.code, 'BAD_REQUEST');
      assert.match(both.error?.message ?? '', /\/groupBy tag and tags cannot be combined/);
    });
  });
}
