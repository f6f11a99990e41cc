import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { windowWithRoom } from '../../helpers/timing.ts';
import { keyRow, snapshot } from '../../helpers/rows.ts';
import { unrelatedPermissions } from '../../helpers/security.ts';
import { assertV2Error, v2Data, v2Locations } from '../../helpers/v2.ts';
import { newId } from '../../../src/domain/ids.ts';
import { parsePermissionQueryText } from '../../../src/domain/permission-query.ts';
import { KeyCache } from '../../../src/services/verification/key-cache.ts';
import { KeyRecordLoader } from '../../../src/services/verification/key-record.ts';
import type { RateLimiter } from '../../../src/services/verification/rate-limiter.ts';
import type { VerificationRecorder } from '../../../src/services/verification/verification-recorder.ts';
import { Verifier } from '../../../src/services/verification/verifier.ts';

const PATH = '/v2/keys.verifyKey';
const BARE_NOT_FOUND = { valid: false, code: 'NOT_FOUND' };
interface CheckedLimit {
  id: string;
  name: string;
  limit: number;
  duration: number;
  reset: number;
  remaining: number;
  exceeded: boolean;
  autoApply: boolean;
}
/** The `data` of a v2 verification. */
interface Data {
  valid: boolean;
  code: string;
  keyId?: string;
  name?: string;
  meta?: Record<string, unknown>;
  expires?: number;
  credits?: number;
  enabled?: boolean;
  permissions?: string[];
  roles?: string[];
  identity?: {
    id: string;
    externalId: string;
    meta?: Record<string, unknown>;
    ratelimits?: Omit<CheckedLimit, 'reset' | 'remaining' | 'exceeded'>[];
  };
  ratelimits?: CheckedLimit[];
}

test('the v2 query string as a v1 permission query: AND binds tighter, any case, long lists split, nesting bounded', () => {
  assert.deepEqual(parsePermissionQueryText('a AND b or c'), { query: { or: [{ and: ['a', 'b'] }, 'c'] } });
  assert.deepEqual(parsePermissionQueryText(' a and (b OR c) '), { query: { and: ['a', { or: ['b', 'c'] }] } });
  assert.deepEqual(parsePermissionQueryText('api.*.read_key'), { query: 'api.*.read_key' });
  const many = parsePermissionQueryText(Array.from({ length: 150 }, (_, i) => `p${i}`).join(' OR '));
  assert.ok(
    'query' in many && typeof many.query === 'object' && 'or' in many.query && many.query.or.length === 2,
    'split into ≤ 100 per node',
  );
  assert.match((parsePermissionQueryText('a & b') as { error: string }).error, /character 3/);
  assert.match((parsePermissionQueryText(`${'('.repeat(20)}a${')'.repeat(20)}`) as { error: string }).error, /deeper/);
  assert.match((parsePermissionQueryText(`p${'x'.repeat(600)}`) as { error: string }).error, /512/);
});

for (const dialect of DIALECTS) {
  describe(`v2 keys.verifyKey (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('verify-v2');
    });
    after(() => w.close());

    const verify = async (body: Record<string, unknown>, root: string | null = w.root): Promise<Data> =>
      v2Data<Data>(await w.post(PATH, body, root));
    const remaining = async (keyId: string): Promise<number | undefined> =>
      (await w.get<{ remaining?: number }>('/v1/keys.getKey', { keyId })).json.remaining;
    /** A stored rate limit of a key or an identity (as keys.createKey / identities v2 write them). */
    const addLimit = async (owner: { keyId?: string; identityId?: string }, name: string, limit: number, autoApply: boolean) => {
      const id = newId('rl');
      const now = Date.now();
      await w.store.db
        .insertInto('ratelimits')
        .values({
          id,
          workspace_id: w.workspaceId,
          key_id: owner.keyId ?? null,
          identity_id: owner.identityId ?? null,
          name,
          type: 'consistent',
          limit,
          duration: 60_000,
          auto_apply: autoApply ? 1 : 0,
          created_at: now,
          updated_at: now,
        })
        .execute();
      return id;
    };

    test("a key created through v1 verifies through v2, with v2's data (empties omitted, credits spent)", async () => {
      const expires = Date.now() + 3_600_000;
      const { keyId, key } = await w.createKey({
        apiId,
        name: 'main',
        externalId: 'user_v2',
        meta: { plan: 'pro' },
        roles: ['reader'],
        permissions: ['docs.read'],
        expires,
        remaining: 10,
      });
      const data = await verify({ key });
      const identity = (await w.get('/v1/keys.getKey', { keyId })).json.identity;
      assert.deepEqual(data, {
        valid: true,
        code: 'VALID',
        keyId,
        name: 'main',
        meta: { plan: 'pro' },
        expires,
        credits: 9,
        enabled: true,
        permissions: ['docs.read'],
        roles: ['reader'],
        identity: { id: identity.id, externalId: 'user_v2' },
      });
      assert.equal(await remaining(keyId), 9);
      const bare = await w.createKey({ apiId });
      assert.deepEqual(await verify({ key: bare.key }), { valid: true, code: 'VALID', keyId: bare.keyId, enabled: true });
    });

    test('a key created through v2 (keys.createKey v2 when it exists, else v1) verifies through v1', async () => {
      const made = await w.post('/v2/keys.createKey', { apiId, credits: { remaining: 3 } });
      const { keyId, key } =
        made.status === 404 ? await w.createKey({ apiId, remaining: 3 }) : v2Data<{ keyId: string; key: string }>(made);
      assert.equal((await verify({ key, credits: { cost: 1 } })).credits, 2);
      const v1 = await w.post('/v1/keys.verifyKey', { key }, null);
      assert.equal(v1.json.code, 'VALID');
      assert.equal(v1.json.keyId, keyId);
      assert.equal(v1.json.remaining, 1, 'both versions spend the same credits');
    });

    test('who may verify: api.*.verify_key, api.<apiId>.verify_key or *; anything else is a bare NOT_FOUND that spends nothing', async () => {
      const { keyId, key } = await w.createKey({ apiId, remaining: 5, ratelimit: { limit: 1, duration: 60_000 } });
      const denied = [
        await w.rootKey(unrelatedPermissions('api.*.verify_key')),
        await w.rootKey(['api.*.read_key', 'api.*.create_key', `api.${apiId}.read_api`]),
        await w.rootKey([`api.${await w.createApi('sibling')}.verify_key`]),
      ];
      for (const root of denied) {
        for (let i = 0; i < 3; i++) assert.deepEqual(await verify({ key, credits: { cost: 2 } }, root), BARE_NOT_FOUND);
      }
      assert.equal(await remaining(keyId), 5, 'no credit spent');
      const allowed = await verify({ key }, await w.rootKey([`api.${apiId}.verify_key`]));
      assert.equal(allowed.code, 'VALID', 'the rate limit (1 per minute) was not consumed by the denied calls');
      assert.equal(allowed.credits, 4);
      for (const perms of [['api.*.verify_key'], ['*']]) {
        const other = await w.createKey({ apiId });
        assert.equal((await verify({ key: other.key }, await w.rootKey(perms))).code, 'VALID', perms[0]);
      }
    });

    test("unknown, deleted, another workspace's key, a deleted API's key → bare NOT_FOUND; nothing spent", async () => {
      assert.deepEqual(await verify({ key: 'nope_123456' }), BARE_NOT_FOUND);
      const other = await w.otherWorkspace();
      const theirApi = await w.createApi('theirs', other.root);
      const theirs = await w.createKey({ apiId: theirApi, remaining: 4 }, other.root);
      assert.deepEqual(await verify({ key: theirs.key, credits: { cost: 1 } }), BARE_NOT_FOUND, 'our * root key cannot verify their key');
      assert.equal((await verify({ key: theirs.key }, other.root)).credits, 3, 'their root key can; our attempt spent nothing');
      const gone = await w.createKey({ apiId });
      assert.equal((await verify({ key: gone.key })).code, 'VALID');
      await w.post('/v1/keys.deleteKey', { keyId: gone.keyId });
      assert.deepEqual(await verify({ key: gone.key }), BARE_NOT_FOUND);
      const doomed = await w.createApi('doomed');
      const orphan = await w.createKey({ apiId: doomed });
      await w.post('/v1/apis.deleteApi', { apiId: doomed });
      assert.deepEqual(await verify({ key: orphan.key }), BARE_NOT_FOUND);
    });

    test('credits: exact under a concurrent burst with a cost; USAGE_EXCEEDED spends nothing and shows the balance; cost 0 passes at 0', async () => {
      const { keyId, key } = await w.createKey({ apiId, remaining: 50 });
      const burst = await Promise.all(Array.from({ length: 40 }, () => verify({ key, credits: { cost: 3 } })));
      assert.equal(burst.filter((d) => d.code === 'VALID').length, 16, '16 × 3 = 48 of 50');
      assert.ok(burst.filter((d) => d.code !== 'VALID').every((d) => d.code === 'USAGE_EXCEEDED' && d.credits !== undefined));
      assert.equal(await remaining(keyId), 2);
      const refused = await verify({ key, credits: { cost: 5 } });
      assert.deepEqual([refused.valid, refused.code, refused.credits], [false, 'USAGE_EXCEEDED', 2]);
      assert.equal((await verify({ key })).credits, 1, 'no credits member: cost 1');
      assert.equal((await verify({ key, credits: { cost: 1 } })).credits, 0);
      const free = await verify({ key, credits: { cost: 0 } });
      assert.deepEqual([free.code, free.credits], ['VALID', 0]);
      const unlimited = await w.createKey({ apiId });
      const d = await verify({ key: unlimited.key, credits: { cost: 7 } });
      assert.deepEqual([d.code, d.credits], ['VALID', undefined], 'a key without credits is never charged');
    });

    test('disabled and expired keys: their code with the key data, nothing spent', async () => {
      const disabled = await w.createKey({ apiId, enabled: false, remaining: 3, name: 'off' });
      const d = await verify({ key: disabled.key });
      assert.deepEqual(d, { valid: false, code: 'DISABLED', keyId: disabled.keyId, name: 'off', enabled: false, credits: 3 });
      const expired = await w.createKey({ apiId, expires: Date.now() + 1000, remaining: 3 });
      await new Promise((r) => setTimeout(r, 1100));
      const e = await verify({ key: expired.key });
      assert.deepEqual([e.code, e.valid, e.credits, e.enabled, typeof e.expires], ['EXPIRED', false, 3, true, 'number']);
      assert.equal(await remaining(expired.keyId), 3);
    });

    test('ratelimits: auto-applied and named configured limits (key and identity, with ids), inline ad-hoc limits, unknown name → 400', async () => {
      const { keyId, key } = await w.createKey({ apiId, externalId: 'rl_user' });
      const identityId = (await w.get<{ identity: { id: string } }>('/v1/keys.getKey', { keyId })).json.identity.id;
      const globalId = await addLimit({ identityId }, 'global', 5, true);
      const emailsId = await addLimit({ keyId }, 'emails', 2, false);
      // Every limit here counts in windows aligned to the minute: the verifications must fall in one window.
      await windowWithRoom(60_000, 5_000);
      const first = await verify({ key, ratelimits: [{ name: 'emails' }] });
      assert.equal(first.code, 'VALID');
      assert.deepEqual(first.identity, {
        id: identityId,
        externalId: 'rl_user',
        ratelimits: [{ id: globalId, name: 'global', limit: 5, duration: 60_000, autoApply: true }],
      });
      const shown = first.ratelimits!.map(({ reset, ...l }) => {
        assert.ok(reset > Date.now());
        return l;
      });
      assert.deepEqual(shown, [
        { id: globalId, name: 'global', limit: 5, duration: 60_000, remaining: 4, exceeded: false, autoApply: true },
        { id: emailsId, name: 'emails', limit: 2, duration: 60_000, remaining: 1, exceeded: false, autoApply: false },
      ]);
      assert.equal((await verify({ key })).ratelimits!.length, 1, 'only the auto-applied limit when none is named');
      // A key's own limit of a name replaces its identity's, and the answer names the key's own.
      const sibling = await w.createKey({ apiId, externalId: 'rl_user' });
      const ownGlobalId = await addLimit({ keyId: sibling.keyId }, 'global', 9, true);
      assert.deepEqual(
        (await verify({ key: sibling.key })).ratelimits!.map((l) => [l.id, l.name, l.limit, l.autoApply]),
        [[ownGlobalId, 'global', 9, true]],
      );
      assert.equal((await verify({ key, ratelimits: [{ name: 'emails', cost: 1 }] })).code, 'VALID');
      const limited = await verify({ key, ratelimits: [{ name: 'emails' }] });
      assert.equal(limited.code, 'RATE_LIMITED');
      assert.deepEqual(
        limited.ratelimits!.map((l) => [l.name, l.exceeded, l.remaining]),
        [
          ['global', false, 1],
          ['emails', true, 0],
        ],
      );

      const plain = await w.createKey({ apiId });
      const adHoc = { key: plain.key, ratelimits: [{ name: 'burst', limit: 1, duration: 60_000 }] };
      const one = await verify(adHoc);
      assert.deepEqual(
        [one.code, one.ratelimits![0].id, one.ratelimits![0].autoApply, one.ratelimits![0].limit, one.ratelimits![0].exceeded],
        ['VALID', '', false, 1, false],
      );
      assert.equal((await verify(adHoc)).code, 'RATE_LIMITED');
      const unknown = await w.post(PATH, { key: plain.key, ratelimits: [{ name: 'nope' }] });
      assertV2Error(unknown, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(unknown), ['/ratelimits/0/name']);
    });

    test('permissions: the v2 query string over direct and role permissions, matched exactly; a syntax error → 400 at /permissions', async () => {
      const { keyId, key } = await w.createKey({ apiId, permissions: ['a', 'b', 'docs.*', 'x:y/z'], roles: ['editor'], remaining: 9 });
      await w.post('/v1/permissions.createPermission', { name: 'edit.all' });
      const role = await w.post('/v1/permissions.createRole', { name: 'editor2', permissions: ['edit.all'] });
      assert.equal(role.status, 200, role.body);
      await w.post('/v1/keys.addRoles', { keyId, roles: [{ name: 'editor2' }] });
      const cases: Array<[string, boolean]> = [
        ['a', true],
        ['a AND b', true],
        ['a and c', false],
        ['c OR (a AND b)', true],
        ['c or a and b', true],
        ['(c OR a) AND d', false],
        ['docs.read', false],
        ['docs.*', true],
        ['x:y/z AND edit.all', true],
        ['((a))', true],
      ];
      for (const [permissions, valid] of cases) {
        const d = await verify({ key, permissions, credits: { cost: 0 } });
        assert.equal(d.code, valid ? 'VALID' : 'INSUFFICIENT_PERMISSIONS', permissions);
      }
      for (const permissions of ['a & b', '()', 'a AND', '(a', 'a b', 'a)', 'AND a', 'a OR OR b']) {
        const res = await w.post(PATH, { key, permissions });
        assertV2Error(res, 400, 'unkey/application/invalid_input');
        assert.deepEqual(v2Locations(res), ['/permissions'], permissions);
        assert.match(res.json.error.errors![0].message, /syntax error/);
      }
      assertV2Error(await w.post(PATH, { key: 'unknown_key_123', permissions: 'a &' }), 400, 'unkey/application/invalid_input');
      assert.equal(await remaining(keyId), 9, 'neither the queries (cost 0) nor the 400s spent a credit');
    });

    test('migrationId: a found key ignores it; an unknown key with an unknown migration is a bare NOT_FOUND', async () => {
      const { key } = await w.createKey({ apiId });
      assert.equal((await verify({ key, migrationId: 'mig_unknown' })).code, 'VALID');
      assert.deepEqual(await verify({ key: 'sk_unknown_123456', migrationId: 'mig_unknown' }), BARE_NOT_FOUND);
    });

    test('body problems are 400s locating each member, checked after the root key; tags are accepted', async () => {
      const { key } = await w.createKey({ apiId });
      assert.equal((await verify({ key, tags: ['path=/v1/x', 'region=eu'] })).code, 'VALID');
      const res = await w.post(PATH, {
        key: '',
        credits: {},
        ratelimits: [{ name: '', duration: 5 }],
        tags: [''],
        migrationId: 'm'.repeat(257),
      });
      assertV2Error(res, 400, 'unkey/application/invalid_input');
      for (const at of ['/key', '/credits/cost', '/ratelimits/0/name', '/ratelimits/0/duration', '/tags/0', '/migrationId'])
        assert.ok(v2Locations(res).includes(at), `${at} in ${v2Locations(res)}`);
      assertV2Error(await w.post(PATH, { key: '' }, 'kh_root_1111111111111111111111111'), 401, 'unkey/authentication/key_not_found');
    });

    describe('security (a missing permission is a 200 NOT_FOUND here, never a 403)', () => {
      const body = async () => ({ key: (await w.createKey({ apiId })).key });
      test('no root key → 400 authentication/missing', async () =>
        assertV2Error(await w.post(PATH, await body(), null), 400, 'unkey/authentication/missing'));
      test('malformed Authorization → 400 authentication/malformed', async () => {
        const res = await w.app.inject({
          method: 'POST',
          url: PATH,
          payload: JSON.stringify(await body()),
          headers: { authorization: 'Basic abc', 'content-type': 'application/json' },
        });
        const answer = { status: res.statusCode, json: res.json(), headers: res.headers, body: res.body };
        assertV2Error(answer, 400, 'unkey/authentication/malformed');
      });
      test('unknown root key → 401', async () =>
        assertV2Error(await w.post(PATH, await body(), 'kh_root_1111111111111111111111111'), 401, 'unkey/authentication/key_not_found'));
      test('revoked root key → 401', async () =>
        assertV2Error(await w.post(PATH, await body(), await w.revokedRootKey()), 401, 'unkey/authentication/key_not_found'));
      test('expired root key → 403 forbidden', async () => {
        const expired = await w.rootKey(['*'], { expiresAt: Date.now() - 1000 });
        assertV2Error(await w.post(PATH, await body(), expired), 403, 'unkey/authorization/forbidden');
      });
      test('missing permission → 200 bare NOT_FOUND, writing nothing', async () => {
        // Tables the verification itself could write at once (analytics and rate-limit counters are flushed and
        // swept in the background: the verifier test below shows a refused key reaches neither).
        const { keyId, key } = await w.createKey({ apiId, remaining: 2 });
        const root = await w.rootKey(unrelatedPermissions('api.*.verify_key'));
        const was = { rows: await snapshot(w, ['keys', 'audit_logs']), key: await keyRow(w, keyId) };
        assert.deepEqual(await verify({ key }, root), BARE_NOT_FOUND);
        assert.deepEqual({ rows: await snapshot(w, ['keys', 'audit_logs']), key: await keyRow(w, keyId) }, was);
      });
      test("another workspace's key → 200 bare NOT_FOUND", async () => {
        const other = await w.otherWorkspace();
        const theirs = await w.createKey({ apiId: await w.createApi('foreign', other.root) }, other.root);
        assert.deepEqual(await verify({ key: theirs.key }), BARE_NOT_FOUND);
      });
    });

    test('the verifier: a refused authorize answers NOT_FOUND before any rate limit, credit or analytics', async () => {
      const { key } = await w.createKey({ apiId, remaining: 1, ratelimit: { limit: 1, duration: 60_000 } });
      const calls: string[] = [];
      const limiter: RateLimiter = {
        check: async () => {
          calls.push('limit');
          return [];
        },
        checkInMemory: () => {
          calls.push('limit');
          return undefined;
        },
        close: async () => {},
      };
      const recorder = { record: () => calls.push('record') } as unknown as VerificationRecorder;
      const records = new KeyRecordLoader(w.store.db, dialect);
      const verifier = new Verifier({ db: w.store.db, cache: new KeyCache(), records, limiter, recorder });
      const seen: string[] = [];
      const result = await verifier.verify({ key }, Date.now(), (record) => {
        seen.push(record.apiId);
        return false;
      });
      assert.deepEqual(result, BARE_NOT_FOUND);
      assert.deepEqual(seen, [apiId], 'authorize saw the loaded key');
      assert.deepEqual(calls, []);
      assert.equal(verifier.stats.outcomes.NOT_FOUND, 1);
    });
  });
}
