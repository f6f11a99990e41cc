import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../helpers/harness.ts';
import { snapshot } from '../helpers/rows.ts';
import { BOUNDS, MAX_BODY_DEPTH, MAX_LISTED_PROBLEMS } from '../../src/domain/bounds.ts';

// Regression tests of hostile input: every number is within its domain's bounds (domain/bounds.ts), strings
// can be stored alike on both dialects, nesting and array sizes are bounded before any work is done, and
// every rejection is a small 400 (or 413) in the envelope that writes nothing.

const TABLES = [
  'keys',
  'ratelimits',
  'identities',
  'audit_logs',
  'change_feed',
  'encrypted_keys',
  'keys_roles',
  'keys_permissions',
] as const;

/** A JSON text with `value` spliced in raw, so numbers JSON.stringify cannot write (2^53 + 1, 1e400) reach the server as sent. */
const raw = (template: Record<string, unknown>, member: string, value: string) =>
  JSON.stringify(template).replace(`"${member}":"@"`, `"${member}":${value}`);

const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

function assertBadRequest(res: Response, path?: string) {
  assert.equal(res.status, 400, res.body);
  assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body', res.body);
  assert.ok(res.body.length < 16 * 1024, `a 400 stays small (${res.body.length} bytes)`);
  if (path)
    assert.ok(
      (res.json.error.errors as unknown as Array<{ path: string }>).some((e) => e.path === path),
      `${path} in ${res.body}`,
    );
}

for (const dialect of DIALECTS) {
  describe(`input guards (${dialect})`, () => {
    let w: World;
    let apiId: string;
    let keyId: string;
    let identityId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
      ({ keyId } = await w.createKey({ apiId, remaining: 10 }));
      identityId = (await w.post('/v1/identities.createIdentity', { externalId: 'guards-user' })).json.identityId as unknown as string;
    });
    after(() => w.close());

    /** Posts the body and checks it is a 400 naming `path` that wrote nothing. */
    const rejected = async (path: string, body: unknown, problemPath?: string) => {
      const before = await snapshot(w, TABLES);
      const res = await w.post(path, body);
      assertBadRequest(res, problemPath);
      assert.deepEqual(await snapshot(w, TABLES), before, `${path} wrote nothing`);
      return res;
    };

    test('numbers past their domain are a 400 naming field and bound, on every write that takes them', async () => {
      const huge = ['9007199254740993', '1e300', '1e308', '9223372036854775808'];
      for (const value of huge) {
        await rejected('/v1/keys.createKey', raw({ apiId, remaining: '@' }, 'remaining', value), '/remaining');
        await rejected('/v1/keys.createKey', raw({ apiId, expires: '@' }, 'expires', value), '/expires');
        await rejected(
          '/v1/keys.createKey',
          raw({ apiId, remaining: 5, refill: { interval: 'daily', amount: '@' } }, 'amount', value),
          '/refill/amount',
        );
        await rejected('/v1/keys.createKey', raw({ apiId, ratelimit: { limit: '@', duration: 1000 } }, 'limit', value), '/ratelimit/limit');
        await rejected(
          '/v1/keys.createKey',
          raw({ apiId, ratelimit: { limit: 1, duration: '@' } }, 'duration', value),
          '/ratelimit/duration',
        );
        await rejected('/v1/keys.updateKey', raw({ keyId, remaining: '@' }, 'remaining', value), '/remaining');
        await rejected('/v1/keys.updateKey', raw({ keyId, expires: '@' }, 'expires', value), '/expires');
        await rejected('/v1/keys.updateRemaining', raw({ keyId, op: 'set', value: '@' }, 'value', value), '/value');
        await rejected(
          '/v1/migrations.createKeys',
          `[${raw({ apiId, plaintext: 'guards_aaaaaaaaaaaa', expires: '@' }, 'expires', value)}]`,
          '/0/expires',
        );
        await rejected(
          '/v1/identities.createIdentity',
          raw({ externalId: 'x', ratelimits: [{ name: 'r', limit: '@', duration: 1000 }] }, 'limit', value),
        );
      }
      const res = await rejected('/v1/keys.createKey', raw({ apiId, remaining: '@' }, 'remaining', '9007199254740993'));
      assert.match(res.json.error.detail as unknown as string, new RegExp(`/remaining must be <= ${BOUNDS.count.maximum}`));
    });

    test('1e400 (Infinity once parsed) is no integer: updateIdentity is a 400 and the identity is unchanged', async () => {
      const body = raw({ identityId, meta: { v: 2 }, ratelimits: [{ name: 'r', limit: '@', duration: 1000 }] }, 'limit', '1e400');
      await rejected('/v1/identities.updateIdentity', body, '/ratelimits/0/limit');
      const got = await w.get('/v1/identities.getIdentity', { identityId });
      assert.equal(got.status, 200, got.body);
      assert.deepEqual(got.json.meta, {});
    });

    test('verifyKey: out-of-range inline limits and costs are a 400, on the lane and the route alike', async () => {
      const { key } = await w.createKey({ apiId });
      const cases: Array<[string, string]> = [
        [raw({ key, ratelimits: [{ name: 'r', limit: '@', duration: 1000 }] }, 'limit', '1e400'), '/ratelimits/0/limit'],
        [raw({ key, ratelimits: [{ name: 'r', limit: 1, duration: '@' }] }, 'duration', '9223372036854775808'), '/ratelimits/0/duration'],
        [raw({ key, ratelimits: [{ name: 'r', cost: '@' }] }, 'cost', '1e308'), '/ratelimits/0/cost'],
        [raw({ key, remaining: { cost: '@' } }, 'cost', '9007199254740993'), '/remaining/cost'],
        [JSON.stringify({ key, ratelimits: [{ name: 'r', limit: 1, duration: 1000 }] }).replace('"r"', '"\\ud800"'), '/ratelimits/0/name'],
      ];
      for (const [body, path] of cases) assertBadRequest(await w.post('/v1/keys.verifyKey', body, null), path);
    });

    test('a permission query of 100,000 items is a 413 (verification bodies are capped at 64 KiB); one of 10,000 a small 400', async () => {
      const { key } = await w.createKey({ apiId });
      const big = JSON.stringify({ key, authorization: { permissions: { and: Array.from({ length: 100_000 }, () => ({ x: 1 })) } } });
      const tooLarge = await w.post('/v1/keys.verifyKey', big, null);
      assert.equal(tooLarge.status, 413, tooLarge.body.slice(0, 300));
      assert.equal(tooLarge.json.error.type, 'https://keyhold.dev/errors/request/body-too-large');
      const many = JSON.stringify({ key, authorization: { permissions: { and: Array.from({ length: 10_000 }, () => 'p') } } });
      assertBadRequest(await w.post('/v1/keys.verifyKey', many, null), '/authorization/permissions/and');
    });

    test('arrays over maxItems are refused before their items are looked at: one problem, a small 400', async () => {
      const items = Array.from({ length: 100_000 }, () => ({ bad: true }));
      const res = await rejected('/v1/migrations.createKeys', items, '/');
      assert.equal((res.json.error.errors as unknown as unknown[]).length, 1);
      await rejected('/v1/keys.addPermissions', { keyId, permissions: items }, '/permissions');
      await rejected('/v1/permissions.createRole', { name: 'r', permissions: Array.from({ length: 100_000 }, () => 'p') }, '/permissions');
    });

    test('a 400 lists at most MAX_LISTED_PROBLEMS problems, and its detail counts them all', async () => {
      const items = Array.from({ length: 1000 }, () => ({ apiId, remaining: -1, expires: -1 }));
      const res = await rejected('/v1/migrations.createKeys', items);
      assert.equal((res.json.error.errors as unknown as unknown[]).length, MAX_LISTED_PROBLEMS);
      assert.match(res.json.error.detail as unknown as string, /… and \d+ more$/);
    });

    test(`bodies nested more than ${MAX_BODY_DEPTH} levels (meta included) are a 400 on every route that takes meta`, async () => {
      const deep = nested(10_000);
      const bodies: Array<[string, string]> = [
        ['/v1/keys.createKey', `{"apiId":"${apiId}","meta":${deep}}`],
        ['/v1/keys.updateKey', `{"keyId":"${keyId}","meta":${deep}}`],
        ['/v1/identities.createIdentity', `{"externalId":"deep","meta":${deep}}`],
        ['/v1/identities.updateIdentity', `{"identityId":"${identityId}","meta":${deep}}`],
        ['/v1/migrations.createKeys', `[{"apiId":"${apiId}","plaintext":"deep_aaaaaaaaaaaaa","meta":${deep}}]`],
        ['/v1/keys.verifyKey', `{"key":"x","authorization":{"permissions":${deep}}}`],
      ];
      for (const [path, body] of bodies) await rejected(path, body, '/');
      const ok = await w.post('/v1/keys.createKey', `{"apiId":"${apiId}","meta":${nested(MAX_BODY_DEPTH - 2)}}`);
      assert.equal(ok.status, 200, 'nesting up to the limit is accepted');
    });

    test('a 404 quotes an id of any length cut to 64 characters, so it stays small', async () => {
      const long = `key_${'x'.repeat(1_000_000)}`;
      const res = await w.post('/v1/keys.deleteKey', { keyId: long });
      assert.equal(res.status, 404, res.body.slice(0, 300));
      assert.ok(res.body.length < 1024, `${res.body.length} bytes`);
      assert.equal(res.json.error.detail, `key ${long.slice(0, 64)}… not found`);
    });

    test('query numbers that coerce to Infinity ("Infinity", "1e400") are a 400, never a 500', async () => {
      for (const [path, query, member] of [
        ['/v1/identities.listIdentities', { limit: 'Infinity' }, '/limit'],
        ['/v1/audit.listLogs', { limit: '1e400' }, '/limit'],
        ['/v1/apis.listKeys', { apiId, limit: 'Infinity' }, '/limit'],
        ['/v1/audit.listLogs', { since: 'Infinity' }, '/since'],
      ] as const) {
        const res = await w.get(path, query);
        assertBadRequest(res, member);
      }
    });

    test('strings holding NUL or a lone surrogate are a 400 on both dialects, in bodies, member names and queries', async () => {
      await rejected('/v1/apis.createApi', { name: 'a\u0000b' }, '/name');
      await rejected('/v1/apis.createApi', '{"name":"a\\ud800b"}', '/name');
      await rejected('/v1/keys.createKey', `{"apiId":"${apiId}","meta":{"a\\u0000":1}}`, '/meta/a\u0000');
      await rejected('/v1/keys.createKey', `{"apiId":"${apiId}","meta":{"deep":["\\udfff"]}}`, '/meta/deep/0');
      await rejected('/v1/identities.createIdentity', { externalId: 'nul\u0000' }, '/externalId');
      for (const [path, query] of [
        ['/v1/keys.getKey', { keyId: 'key_\u0000' }],
        ['/v1/apis.getApi', { apiId: '\u0000' }],
      ] as const) {
        const res = await w.get(path, query);
        assert.equal(res.status, 400, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
      }
      const emoji = await w.post('/v1/apis.createApi', { name: 'ok 😀 \ud83d\ude00' });
      assert.equal(emoji.status, 200, 'well-formed surrogate pairs are fine');
    });
  });
}
