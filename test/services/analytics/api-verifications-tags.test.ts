import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../../helpers/harness.ts';
import type { Answer } from '../../helpers/json.ts';
import { securityTests } from '../../helpers/security.ts';
import { eventually } from '../../helpers/outages.ts';
import { VerificationRecorder, HOUR_MS } from '../../../src/services/verification/verification-recorder.ts';
import { TAG_AND_TAGS } from '../../../src/services/analytics/api-verifications.ts';
import { MAX_TAG_LENGTH, MAX_TAGS } from '../../../src/domain/bounds.ts';
import type { VerifyCode } from '../../../src/domain/verify-codes.ts';
import { outcomeCounts } from '../../helpers/rows.ts';

// v1 analytics.getVerifications by tag: the `tag` filter (verifications carrying all given tags), groupBy `tag`
// (a row per single tag) and `tags` (a row per tag set as recorded), with the other filters and groupings, its
// bad input and its security. The other groupings: verifications.test.ts; list forms: test/http/v1/routes/.

const path = '/v1/analytics.getVerifications';
const DAY_MS = 24 * HOUR_MS;
/** A fixed, hour-aligned origin: 2025-01-30T00:00Z. */
const T0 = Date.UTC(2025, 0, 30);
const at = (day: number, hour: number) => T0 + day * DAY_MS + hour * HOUR_MS;

const counts = outcomeCounts;

/** A GET with these query parameters, repeated ones included, exactly as URLSearchParams sends them. */
async function get(w: World, params: Array<[string, string | number]>, key = w.root): Promise<Response<Answer>> {
  const qs = new URLSearchParams(params.map(([k, v]): [string, string] => [k, String(v)])).toString();
  const res = await w.app.inject({ method: 'GET', url: `${path}?${qs}`, headers: { authorization: `Bearer ${key}` } });
  return { status: res.statusCode, json: res.json(), headers: res.headers, body: res.body };
}

const rows = (res: Response<Answer>): unknown[] => {
  assert.equal(res.status, 200, res.body);
  return res.json as unknown as unknown[];
};

/** A 400 in the v1 envelope listing problems exactly at these paths. */
const refused = (res: Response<Answer>, paths: string[], what: string) => {
  assert.equal(res.status, 400, `${what}: ${res.body}`);
  assert.equal(res.json.error.code, 'BAD_REQUEST');
  assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
  assert.equal(res.json.error.docs, res.json.error.type);
  assert.match(res.json.meta.requestId, /^req_/);
  assert.deepEqual([...new Set(res.json.error.errors.map((p: { path: string }) => p.path))].sort(), paths, what);
};

for (const dialect of DIALECTS) {
  describe(`GET ${path} by tag (${dialect})`, () => {
    let w: World;
    let apiId: string;
    /** alice's key (with identity) and an anonymous one, both of `apiId`. */
    let a: string;
    let b: string;
    /** alice's identity id. */
    let alice: string | null;
    /** The first two days; the window of most requests. */
    const window = (): Array<[string, string | number]> => [
      ['apiId', apiId],
      ['start', at(0, 0)],
      ['end', at(2, 0)],
    ];

    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('an-tags');
      a = (await w.createKey({ apiId, externalId: 'alice' })).keyId;
      b = (await w.createKey({ apiId })).keyId;
      const identityOf = async (keyId: string) =>
        (await w.store.db.selectFrom('keys').select('identity_id').where('id', '=', keyId).executeTakeFirstOrThrow()).identity_id;
      const sibling = await w.createApi('an-tags-sibling');
      const siblingKey = (await w.createKey({ apiId: sibling })).keyId;
      const other = await w.otherWorkspace();
      const theirApi = await w.createApi('an-tags-theirs', other.root);
      const theirKey = (await w.createKey({ apiId: theirApi }, other.root)).keyId;

      const r = new VerificationRecorder(w.store.db, { dialect });
      const rec = (
        keyId: string,
        identityId: string | null,
        code: VerifyCode,
        time: number,
        n: number,
        tags: string[],
        ws = w.workspaceId,
        api = apiId,
      ) => {
        for (let i = 0; i < n; i++) r.record({ keyId, workspaceId: ws, apiId: api, identityId, code, time, tags });
      };
      alice = await identityOf(a);
      rec(a, alice, 'VALID', at(0, 0) + 600_000, 3, ['path=/a', 'region=eu']);
      rec(a, alice, 'VALID', at(0, 1), 2, ['region=eu', 'path=/a']); // the same set, in another order
      rec(a, alice, 'RATE_LIMITED', at(0, 1) + 60_000, 1, ['path=/a']);
      rec(b, null, 'VALID', at(0, 2), 4, []);
      rec(b, null, 'USAGE_EXCEEDED', at(1, 0), 2, ['path=/b', 'region=eu']);
      rec(b, null, 'EXPIRED', at(1, 0) + 60_000, 1, ['dup', 'dup']); // a tag given twice
      // The same tags on another API of the workspace and in another workspace: never counted here.
      rec(siblingKey, null, 'VALID', at(0, 0), 10, ['path=/a', 'region=eu'], w.workspaceId, sibling);
      rec(theirKey, null, 'VALID', at(0, 0), 10, ['path=/a', 'region=eu'], other.workspaceId, theirApi);
      await r.flush();
    });
    after(() => w.close());

    test('tag filter: one tag, several tags (all of them, in any order and form), none matching', async () => {
      const cases: Array<[Array<[string, string]>, ReturnType<typeof counts>]> = [
        [[['tag', 'path=/a']], counts({ valid: 5, rateLimited: 1 })],
        [[['tag', 'region=eu']], counts({ valid: 5, usageExceeded: 2 })],
        [
          [
            ['tag', 'path=/a'],
            ['tag', 'region=eu'],
          ],
          counts({ valid: 5 }),
        ],
        [
          [
            ['tag', 'region=eu'],
            ['tag', 'path=/a'],
          ],
          counts({ valid: 5 }),
        ],
        [[['tag', 'region=eu,path=/a']], counts({ valid: 5 })], // comma-joined, as @unkey/api sends a list
        [
          [
            ['tag', 'path=/a'],
            ['tag', 'path=/a'],
          ],
          counts({ valid: 5, rateLimited: 1 }),
        ],
        [[['tag', 'dup']], counts({ expired: 1 })],
        [
          [
            ['tag', 'path=/a'],
            ['tag', 'path=/b'],
          ],
          counts(),
        ],
        [[['tag', 'path=/']], counts()], // exact, not a prefix
        [[['tag', 'PATH=/a']], counts()], // case-sensitive
        [[['tag', 'nothing']], counts()],
      ];
      for (const [tags, expected] of cases) assert.deepEqual(rows(await get(w, [...window(), ...tags])), [expected], JSON.stringify(tags));
      // Without a tag filter: every verification, tagged or not.
      assert.deepEqual(rows(await get(w, window())), [counts({ valid: 9, rateLimited: 1, usageExceeded: 2, expired: 1 })]);
    });

    test('groupBy tag: a row per single tag, ordered by tag; a verification counts once per tag it carries, not at all without tags', async () => {
      assert.deepEqual(rows(await get(w, [...window(), ['groupBy', 'tag']])), [
        { tag: 'dup', ...counts({ expired: 1 }) },
        { tag: 'path=/a', ...counts({ valid: 5, rateLimited: 1 }) },
        { tag: 'path=/b', ...counts({ usageExceeded: 2 }) },
        { tag: 'region=eu', ...counts({ valid: 5, usageExceeded: 2 }) },
      ]);
      // With a tag filter: the tags that verifications carrying it also carry.
      assert.deepEqual(rows(await get(w, [...window(), ['groupBy', 'tag'], ['tag', 'region=eu']])), [
        { tag: 'path=/a', ...counts({ valid: 5 }) },
        { tag: 'path=/b', ...counts({ usageExceeded: 2 }) },
        { tag: 'region=eu', ...counts({ valid: 5, usageExceeded: 2 }) },
      ]);
      assert.deepEqual(rows(await get(w, [...window(), ['groupBy', 'tag'], ['tag', 'nothing']])), []);
    });

    test('groupBy tags: a row per tag set exactly as recorded (order and repeats included; no tags is the set [])', async () => {
      assert.deepEqual(rows(await get(w, [...window(), ['groupBy', 'tags']])), [
        { tags: [], ...counts({ valid: 4 }) },
        { tags: ['dup', 'dup'], ...counts({ expired: 1 }) },
        { tags: ['path=/a'], ...counts({ rateLimited: 1 }) },
        { tags: ['path=/a', 'region=eu'], ...counts({ valid: 3 }) },
        { tags: ['path=/b', 'region=eu'], ...counts({ usageExceeded: 2 }) },
        { tags: ['region=eu', 'path=/a'], ...counts({ valid: 2 }) },
      ]);
      assert.deepEqual(rows(await get(w, [...window(), ['groupBy', 'tags'], ['tag', 'path=/a'], ['tag', 'region=eu']])), [
        { tags: ['path=/a', 'region=eu'], ...counts({ valid: 3 }) },
        { tags: ['region=eu', 'path=/a'], ...counts({ valid: 2 }) },
      ]);
    });

    test('combined with time, key and identity groupings: only groups with data, by time then key, identity, tag', async () => {
      assert.deepEqual(rows(await get(w, [...window(), ['groupBy', 'tag,hour']])), [
        { time: at(0, 0), tag: 'path=/a', ...counts({ valid: 3 }) },
        { time: at(0, 0), tag: 'region=eu', ...counts({ valid: 3 }) },
        { time: at(0, 1), tag: 'path=/a', ...counts({ valid: 2, rateLimited: 1 }) },
        { time: at(0, 1), tag: 'region=eu', ...counts({ valid: 2 }) },
        { time: at(1, 0), tag: 'dup', ...counts({ expired: 1 }) },
        { time: at(1, 0), tag: 'path=/b', ...counts({ usageExceeded: 2 }) },
        { time: at(1, 0), tag: 'region=eu', ...counts({ usageExceeded: 2 }) },
      ]);
      const byKey = rows(await get(w, [...window(), ['groupBy', 'key'], ['groupBy', 'tags'], ['groupBy', 'day']]));
      const [first, second] = [a, b].sort();
      const expected = [
        { time: at(0, 0), keyId: a, tags: ['path=/a'], ...counts({ rateLimited: 1 }) },
        { time: at(0, 0), keyId: a, tags: ['path=/a', 'region=eu'], ...counts({ valid: 3 }) },
        { time: at(0, 0), keyId: a, tags: ['region=eu', 'path=/a'], ...counts({ valid: 2 }) },
        { time: at(0, 0), keyId: b, tags: [], ...counts({ valid: 4 }) },
        { time: at(1, 0), keyId: b, tags: ['dup', 'dup'], ...counts({ expired: 1 }) },
        { time: at(1, 0), keyId: b, tags: ['path=/b', 'region=eu'], ...counts({ usageExceeded: 2 }) },
      ];
      const day0 = expected.filter((r) => r.time === at(0, 0));
      const ordered = [
        ...day0.filter((r) => r.keyId === first),
        ...day0.filter((r) => r.keyId === second),
        ...expected.filter((r) => r.time === at(1, 0)),
      ];
      assert.deepEqual(byKey, ordered);
      assert.deepEqual(rows(await get(w, [...window(), ['groupBy', 'identity,tag']])), [
        { identity: { id: alice, externalId: 'alice' }, tag: 'path=/a', ...counts({ valid: 5, rateLimited: 1 }) },
        { identity: { id: alice, externalId: 'alice' }, tag: 'region=eu', ...counts({ valid: 5 }) },
      ]);
    });

    test('with the other filters: time window (zero-filled series), keyId, externalId; orderBy and limit', async () => {
      assert.deepEqual(
        rows(
          await get(w, [
            ['apiId', apiId],
            ['start', at(0, 0)],
            ['end', at(3, 0)],
            ['groupBy', 'day'],
            ['tag', 'region=eu'],
          ]),
        ),
        [
          { time: at(0, 0), ...counts({ valid: 5 }) },
          { time: at(1, 0), ...counts({ usageExceeded: 2 }) },
          { time: at(2, 0), ...counts() },
        ],
        'a tag-filtered series is still zero-filled',
      );
      assert.deepEqual(
        rows(
          await get(w, [
            ['apiId', apiId],
            ['start', at(0, 1)],
            ['end', at(0, 2)],
            ['tag', 'path=/a'],
          ]),
        ),
        [counts({ valid: 2, rateLimited: 1 })],
        'only the window',
      );
      assert.deepEqual(rows(await get(w, [...window(), ['tag', 'region=eu'], ['keyId', b]])), [counts({ usageExceeded: 2 })]);
      assert.deepEqual(rows(await get(w, [...window(), ['tag', 'region=eu'], ['externalId', 'alice']])), [counts({ valid: 5 })]);
      assert.deepEqual(
        rows(await get(w, [...window(), ['groupBy', 'tag'], ['orderBy', 'total'], ['order', 'desc'], ['limit', 2]])).map((r) => [
          (r as { tag: string }).tag,
          (r as { total: number }).total,
        ]),
        [
          ['region=eu', 7],
          ['path=/a', 6],
        ],
      );
    });

    test('bad input is a 400 in the v1 envelope naming every problem', async () => {
      const many = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);
      const cases: Array<[Array<[string, string | number]>, string[]]> = [
        [many(MAX_TAGS + 1).map((t): [string, string] => ['tag', t]), ['/tag']],
        [[['tag', many(MAX_TAGS + 1).join(',')]], ['/tag']],
        [[['tag', '']], ['/tag/0']],
        [
          [
            ['tag', 'a'],
            ['tag', ''],
          ],
          ['/tag/1'],
        ],
        [[['tag', 'a,,b']], ['/tag/1']],
        [[['tag', 'x'.repeat(MAX_TAG_LENGTH + 1)]], ['/tag/0']],
        [[['groupBy', 'week']], ['/groupBy/0']],
        [[['groupBy', 'tag,tags']], ['/groupBy']],
        [
          [
            ['groupBy', 'tags'],
            ['groupBy', 'tag'],
          ],
          ['/groupBy'],
        ],
        [[['groupBy', 'hour,key,identity,tag,day']], ['/groupBy']],
        [
          [
            ['tag', ''],
            ['tag', 'x'.repeat(MAX_TAG_LENGTH + 1)],
            ['groupBy', 'month'],
            ['groupBy', 'tag'],
            ['groupBy', 'hour'],
            ['groupBy', 'tags'],
          ],
          ['/tag/0', '/tag/1'],
        ],
      ];
      for (const [params, paths] of cases) refused(await get(w, [...window(), ...params]), paths, JSON.stringify(params));
      // The query's problems beyond its schema are listed together (once the schema holds).
      const semantic = await get(w, [
        ['apiId', apiId],
        ['start', at(1, 0)],
        ['end', at(1, 0)],
        ['groupBy', 'hour,day,tag,tags'],
      ]);
      refused(semantic, ['/groupBy', '/start'], 'several problems');
      assert.equal(semantic.json.error.errors.length, 3, semantic.body);
      const both = await get(w, [...window(), ['groupBy', 'tag,tags']]);
      assert.equal(both.json.error.errors[0].message, TAG_AND_TAGS);
      const long = await get(w, [...window(), ['tag', 'x'.repeat(MAX_TAG_LENGTH + 1)]]);
      assert.match(long.json.error.errors[0].message, new RegExp(`${MAX_TAG_LENGTH}`));
      // At the bounds: MAX_TAGS tags of MAX_TAG_LENGTH characters, and four groupings.
      assert.deepEqual(
        rows(await get(w, [...window(), ...many(MAX_TAGS).map((t): [string, string] => ['tag', t.padEnd(MAX_TAG_LENGTH, 'x')])])),
        [counts()],
      );
      assert.equal(rows(await get(w, [...window(), ['groupBy', 'hour,key,identity,tag']])).length, 4);
    });

    test('end to end: tags given to v1 and v2 keys.verifyKey are filtered and grouped', async () => {
      const api = await w.createApi('an-tags-e2e');
      const { key } = await w.createKey({ apiId: api });
      const start = Date.now() - HOUR_MS;
      assert.equal((await w.post('/v1/keys.verifyKey', { key, tags: ['via=v1', 'plan=pro'] })).json.code, 'VALID');
      assert.equal((await w.post('/v2/keys.verifyKey', { key, tags: ['via=v2', 'plan=pro'] }, w.root)).json.data.code, 'VALID');
      const e2e = (params: Array<[string, string]>) => get(w, [['apiId', api], ['start', start], ...params]);
      await eventually(
        'both verifications counted',
        async () => (rows(await e2e([['tag', 'plan=pro']]))[0] as { total: number }).total === 2,
      );
      assert.deepEqual(rows(await e2e([['tag', 'via=v2']])), [counts({ valid: 1 })]);
      assert.deepEqual(rows(await e2e([['groupBy', 'tag']])), [
        { tag: 'plan=pro', ...counts({ valid: 2 }) },
        { tag: 'via=v1', ...counts({ valid: 1 }) },
        { tag: 'via=v2', ...counts({ valid: 1 }) },
      ]);
    });

    test("permissions: read_analytics on this API (or api.*); read_api or another API's is a 403", async () => {
      const query: Array<[string, string | number]> = [...window(), ['tag', 'path=/a'], ['groupBy', 'tag']];
      const otherApi = await w.createApi('an-tags-perm-other');
      for (const permissions of [[`api.${apiId}.read_api`, `api.${apiId}.read_key`], [`api.${otherApi}.read_analytics`]]) {
        const res = await get(w, query, await w.rootKey(permissions));
        assert.equal(res.status, 403, res.body);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.equal(res.json.error.detail, `Missing permission: api.${apiId}.read_analytics`);
      }
      for (const permissions of [[`api.${apiId}.read_analytics`], ['api.*.read_analytics'], ['*']])
        assert.deepEqual(rows(await get(w, query, await w.rootKey(permissions))), [
          { tag: 'path=/a', ...counts({ valid: 5, rateLimited: 1 }) },
          { tag: 'region=eu', ...counts({ valid: 5 }) },
        ]);
    });

    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.read_analytics`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('an-tags-secure');
        return { method: 'GET', path, query: { apiId: securityApiId, start: Date.now() - HOUR_MS, tag: 'path=/a', groupBy: 'tag' } };
      },
      foreign: async (w, other) => ({
        method: 'GET',
        path,
        query: { apiId: await w.createApi('an-tags-foreign', other.root), start: Date.now() - HOUR_MS, tag: 'path=/a', groupBy: 'tags' },
      }),
    });
  });
}
