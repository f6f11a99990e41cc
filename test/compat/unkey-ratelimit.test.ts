import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ratelimit, Overrides } from '@unkey/ratelimit';
import { DIALECTS } from '../helpers/harness.ts';
import { startKeyhold, type KeyholdServer } from '../helpers/unkey-server.ts';
import { eventually, expectV1, expectV1Error } from '../helpers/unkey-sdk.ts';

// Issue 11: Unkey's standalone rate-limiting client, @unkey/ratelimit 0.5.5 (it wraps @unkey/api 0.33), pointed at
// Keyhold with its `baseUrl` option, unmodified: its Ratelimit and Overrides classes over real HTTP, on both
// dialects, and with rate limits in Redis when KEYHOLD_TEST_REDIS_URL is set.

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
const VARIANTS = DIALECTS.flatMap((dialect) => [
  { name: dialect, dialect, redisUrl: undefined as string | undefined },
  ...(REDIS_URL ? [{ name: `${dialect} + Redis`, dialect, redisUrl: REDIS_URL }] : []),
]);

for (const variant of VARIANTS) {
  describe(`@unkey/ratelimit 0.5.5 against Keyhold (${variant.name})`, () => {
    let server: KeyholdServer;
    /** A Ratelimit on its own namespace, with a root key that holds what ratelimits.limit needs and no more. */
    let limiter: (
      namespace: string,
      config: { limit: number; duration: number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`; async?: boolean },
    ) => Ratelimit;
    before(async () => {
      server = await startKeyhold(variant.dialect, { redisUrl: variant.redisUrl });
      const rootKey = await server.rootKey(['ratelimit.*.create_namespace', 'ratelimit.*.limit']);
      // timeout false: on a loaded machine the SDK's 5 s default would answer its fallback instead of Keyhold's.
      limiter = (namespace, config) => new Ratelimit({ rootKey, baseUrl: server.baseUrl, namespace, timeout: false, ...config });
    });
    after(() => server.close());

    test('limit(identifier): success, limit, remaining and reset of one window', async () => {
      const rl = limiter('rl-basic', { limit: 3, duration: '1h' }); // long windows: no test straddles two
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await rl.limit('user_1'));
      assert.deepEqual(
        answers.map((a) => [a.success, a.limit, a.remaining]),
        [
          [true, 3, 2],
          [true, 3, 1],
          [true, 3, 0],
          [false, 3, 0],
        ],
      );
      assert.equal(new Set(answers.map((a) => a.reset)).size, 1, 'one window');
      assert.ok(answers[0].reset > Date.now() && answers[0].reset <= Date.now() + 3_600_000);
      assert.equal((await rl.limit('user_2')).remaining, 2, 'identifiers are counted apart');
    });

    test('120 concurrent limit() on a limit of 25: exactly 25 succeed', async () => {
      const rl = new Ratelimit({
        rootKey: server.root,
        baseUrl: server.baseUrl,
        namespace: 'rl-burst',
        limit: 25,
        duration: '1h',
        timeout: false,
      });
      const answers = await Promise.all(Array.from({ length: 120 }, () => rl.limit('burst')));
      assert.equal(answers.filter((a) => a.success).length, 25);
      assert.ok(answers.every((a) => a.limit === 25));
      assert.deepEqual(
        answers
          .filter((a) => a.success)
          .map((a) => a.remaining)
          .sort((a, b) => a - b),
        Array.from({ length: 25 }, (_, i) => i),
        'each success saw its own count',
      );
    });

    test('the cost option: spends that many, a refused call spends nothing, cost 0 only reads', async () => {
      const rl = limiter('rl-cost', { limit: 25, duration: '1h' });
      assert.deepEqual(pick(await rl.limit('c', { cost: 10 })), [true, 15]);
      assert.deepEqual(pick(await rl.limit('c', { cost: 20 })), [false, 15]);
      assert.deepEqual(pick(await rl.limit('c', { cost: 0 })), [true, 15]);
      assert.deepEqual(pick(await rl.limit('c', { cost: 15 })), [true, 0]);
      assert.deepEqual(pick(await rl.limit('c', { cost: 1 })), [false, 0]);
    });

    test('async mode, from the config and per call', async () => {
      const rl = limiter('rl-async', { limit: 5, duration: '1h', async: true });
      const answers = [];
      for (let i = 0; i < 8; i++) answers.push(await rl.limit('a'));
      assert.deepEqual(
        answers.map((a) => a.success),
        [true, true, true, true, true, false, false, false],
      );
      assert.ok(answers.every((a) => a.limit === 5 && a.reset > Date.now()));
      const sync = limiter('rl-async-call', { limit: 2, duration: '1h' });
      assert.deepEqual(pick(await sync.limit('b', { async: true })), [true, 1]);
      // Decided in memory, then synced to the shared counter (every 250 ms), which a sync read then sees.
      await eventually(
        async () => (await sync.limit('b', { async: false, cost: 0 })).remaining === 1,
        'the async count in the shared counter',
      );
      assert.deepEqual(pick(await sync.limit('b', { async: false })), [true, 0]);
      assert.deepEqual(pick(await sync.limit('b', { async: false })), [false, 0]);
    });

    test('meta and resources are accepted', async () => {
      const rl = limiter('rl-meta', { limit: 2, duration: 60_000 });
      const res = await rl.limit('m', {
        meta: { plan: 'pro', beta: true, seats: 3, none: null },
        resources: [{ type: 'project', id: 'p_1', name: 'P' }],
      });
      assert.deepEqual(pick(res), [true, 1]);
    });

    test('Overrides: setOverride, getOverride, listOverrides, deleteOverride, and limit() follows them', async () => {
      const overrides = new Overrides({
        rootKey: await server.rootKey(['ratelimit.*.set_override', 'ratelimit.*.read_override', 'ratelimit.*.delete_override']),
        baseUrl: server.baseUrl,
      });
      const rl = limiter('rl-overrides', { limit: 1, duration: '1h' });
      assert.equal((await rl.limit('tenant_small')).limit, 1, 'the namespace exists once limit() made it');
      const { overrideId } = expectV1(
        await overrides.setOverride({ namespaceName: 'rl-overrides', identifier: 'tenant_big', limit: 100, duration: 3_600_000 }),
        'ratelimits.setOverride',
        'post',
      );
      const got = expectV1(
        await overrides.getOverride({ namespaceName: 'rl-overrides', identifier: 'tenant_big' }),
        'ratelimits.getOverride',
        'get',
      );
      assert.deepEqual([got.id, got.limit, got.duration], [overrideId, 100, 3_600_000]);
      const listed = expectV1(await overrides.listOverrides({ namespaceName: 'rl-overrides' }), 'ratelimits.listOverrides', 'get');
      assert.deepEqual(
        listed.overrides.map((o) => o.identifier),
        ['tenant_big'],
      );
      assert.deepEqual([(await rl.limit('tenant_big')).limit, (await rl.limit('tenant_small')).limit], [100, 1]);
      expectV1(
        await overrides.deleteOverride({ namespaceName: 'rl-overrides', identifier: 'tenant_big' }),
        'ratelimits.deleteOverride',
        'post',
      );
      expectV1Error(await overrides.getOverride({ namespaceName: 'rl-overrides', identifier: 'tenant_big' }), 'NOT_FOUND');
      await eventually(async () => (await rl.limit('tenant_big', { cost: 0 })).limit === 1, 'limit() to drop the deleted override');
    });

    test('an error of Keyhold rejects limit() with its code, request id and message (onError is not called by 0.5.5)', async () => {
      const onError = () => ({ success: true, limit: 0, remaining: 0, reset: 0 });
      const rl = new Ratelimit({
        rootKey: await server.rootKey(['api.*.read_api']),
        baseUrl: server.baseUrl,
        namespace: 'rl-denied',
        limit: 1,
        duration: 60_000,
        onError,
      });
      await assert.rejects(rl.limit('x'), /^Error: Ratelimit failed: \[INSUFFICIENT_PERMISSIONS - req_\w+\]: Missing permission/);
    });
  });
}

/** `[success, remaining]` of a limit() answer. */
const pick = (a: { success: boolean; remaining: number }) => [a.success, a.remaining];
