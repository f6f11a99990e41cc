import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../../../helpers/harness.ts';
import type { Answer } from '../../../helpers/json.ts';
import { VerificationRecorder, HOUR_MS } from '../../../../src/services/verification/verification-recorder.ts';
import { MAX_QUERY_ITEMS, MAX_TAGS } from '../../../../src/domain/bounds.ts';

// The list parameters of analytics.getVerifications (keyId, groupBy, tag) in both forms clients send them:
// repeated (`keyId=a&keyId=b`) and comma-joined (`keyId=a,b`, what @unkey/api sends), and their bounds. The
// counting itself: test/services/analytics/verifications.test.ts; by tag: api-verifications-tags.test.ts there.

const path = '/v1/analytics.getVerifications';
/** A fixed, hour-aligned origin: 2025-01-30T00:00Z. */
const T0 = Date.UTC(2025, 0, 30);
const WINDOW = `start=${T0}&end=${T0 + 3 * HOUR_MS}`;

interface Row {
  time?: number;
  keyId?: string;
  valid: number;
  total: number;
}

/** A GET with this raw query string (after `apiId=…&start=…&end=…`), exactly as a client would send it. */
async function getRaw(w: World, apiId: string, query: string): Promise<Response<Answer>> {
  const url = `${path}?apiId=${apiId}&${WINDOW}${query ? `&${query}` : ''}`;
  const res = await w.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${w.root}` } });
  return { status: res.statusCode, json: res.json(), headers: res.headers, body: res.body };
}

const rows = (res: Response<Answer>): Row[] => {
  assert.equal(res.status, 200, res.body);
  return res.json as unknown as Row[];
};

/** A 400 `request/invalid-body` listing exactly problems at these paths. */
const refused = (res: Response<Answer>, paths: string[]) => {
  assert.equal(res.status, 400, res.body);
  assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
  assert.equal(res.json.error.code, 'BAD_REQUEST');
  assert.deepEqual([...new Set(res.json.error.errors.map((p: { path: string }) => p.path))].sort(), paths, res.body);
};

for (const dialect of DIALECTS) {
  describe(`GET ${path}: list parameters (${dialect})`, () => {
    let w: World;
    let apiId: string;
    /** Three keys verified 1, 2 and 3 times (VALID): key i in hour i, with tags `k<i>` and `all`. */
    let keys: string[];
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('an-lists');
      keys = [];
      for (let i = 0; i < 3; i++) keys.push((await w.createKey({ apiId })).keyId);
      const recorder = new VerificationRecorder(w.store.db);
      keys.forEach((keyId, i) => {
        for (let n = 0; n <= i; n++)
          recorder.record({
            keyId,
            workspaceId: w.workspaceId,
            apiId,
            identityId: null,
            code: 'VALID',
            time: T0 + i * HOUR_MS,
            tags: [`k${i}`, 'all'],
          });
      });
      await recorder.flush();
    });
    after(() => w.close());

    test('keyId: comma-joined, repeated and mixed forms select the same keys', async () => {
      const [a, b, c] = keys;
      const expected = [{ valid: 4, total: 4 }]; // keys a (1) and c (3)
      for (const query of [`keyId=${a},${c}`, `keyId=${a}&keyId=${c}`, `keyId=${c},${a},${a}`]) {
        assert.deepEqual(
          rows(await getRaw(w, apiId, query)).map(({ valid, total }) => ({ valid, total })),
          expected,
          query,
        );
      }
      const all = rows(await getRaw(w, apiId, `keyId=${a},${b}&keyId=${c}&groupBy=key`));
      assert.deepEqual(
        all.map((r) => [r.keyId, r.valid]),
        keys.map((k, i) => [k, i + 1]).sort(),
      );
      // One value is one key, as before; an unknown id among them matches nothing.
      assert.equal(rows(await getRaw(w, apiId, `keyId=${b}`))[0].valid, 2);
      assert.equal(rows(await getRaw(w, apiId, `keyId=${b},key_nothing`))[0].valid, 2);
    });

    test('groupBy: comma-joined, repeated and mixed forms combine the same groupings', async () => {
      const expected = keys.map((keyId, i) => ({ time: T0 + i * HOUR_MS, keyId, valid: i + 1 }));
      for (const query of ['groupBy=hour,key', 'groupBy=key&groupBy=hour', 'groupBy=key,hour&groupBy=key']) {
        assert.deepEqual(
          rows(await getRaw(w, apiId, query)).map(({ time, keyId, valid }) => ({ time, keyId, valid })),
          expected,
          query,
        );
      }
      assert.equal(rows(await getRaw(w, apiId, 'groupBy=hour')).length, 3);
      refused(await getRaw(w, apiId, 'groupBy=hour,day'), ['/groupBy']);
      refused(await getRaw(w, apiId, 'groupBy=hour&groupBy=key,day'), ['/groupBy']);
    });

    test(`bounds after splitting: at most ${MAX_QUERY_ITEMS} keyIds, 4 groupings and ${MAX_TAGS} tags, however they are sent`, async () => {
      const ids = (n: number) => Array.from({ length: n }, (_, i) => (i === 0 ? keys[0] : `key_${i}`));
      assert.equal(rows(await getRaw(w, apiId, `keyId=${ids(MAX_QUERY_ITEMS).join(',')}`))[0].valid, 1);
      const over = ids(MAX_QUERY_ITEMS + 1);
      for (const query of [
        `keyId=${over.join(',')}`,
        `keyId=${over.slice(0, 50).join(',')}&keyId=${over.slice(50).join(',')}`,
        over.map((id) => `keyId=${id}`).join('&'),
      ]) {
        const res = await getRaw(w, apiId, query);
        refused(res, ['/keyId']);
        assert.match(res.json.error.errors[0].message, new RegExp(`more than ${MAX_QUERY_ITEMS} items`));
      }
      assert.equal(rows(await getRaw(w, apiId, 'groupBy=key,identity,hour,key')).length, 0, 'no identity: no rows');
      refused(await getRaw(w, apiId, 'groupBy=key,identity,hour,key,tag'), ['/groupBy']);
      refused(await getRaw(w, apiId, 'groupBy=key,identity&groupBy=hour,key,tag'), ['/groupBy']);
      const tags = (n: number) => Array.from({ length: n }, (_, i) => (i === 0 ? 'all' : `t${i}`));
      assert.equal(rows(await getRaw(w, apiId, `tag=${tags(1).join(',')}`))[0].valid, 6);
      assert.equal(rows(await getRaw(w, apiId, `tag=${tags(MAX_TAGS).join(',')}`))[0].valid, 0);
      for (const query of [
        `tag=${tags(MAX_TAGS + 1).join(',')}`,
        `tag=${tags(10).join(',')}&tag=${tags(MAX_TAGS + 1)
          .slice(10)
          .join(',')}`,
        tags(MAX_TAGS + 1)
          .map((t) => `tag=${t}`)
          .join('&'),
      ]) {
        const res = await getRaw(w, apiId, query);
        refused(res, ['/tag']);
        assert.match(res.json.error.errors[0].message, new RegExp(`more than ${MAX_TAGS} items`));
      }
    });

    test('empty or unknown items are a 400 naming their position', async () => {
      const [a, b] = keys;
      const cases: Array<[string, string[]]> = [
        [`keyId=${a},,${b}`, ['/keyId/1']],
        [`keyId=${a},`, ['/keyId/1']],
        [`keyId=,${a}`, ['/keyId/0']],
        ['keyId=', ['/keyId/0']],
        ['keyId=,', ['/keyId/0', '/keyId/1']],
        [`keyId=${a}&keyId=`, ['/keyId/1']],
        ['groupBy=key,,hour', ['/groupBy/1']],
        ['groupBy=key,week', ['/groupBy/1']],
        ['groupBy=', ['/groupBy/0']],
        ['groupBy=tag,week', ['/groupBy/1']],
        ['tag=all,,k1', ['/tag/1']],
        ['tag=', ['/tag/0']],
        ['tag=all&tag=', ['/tag/1']],
      ];
      for (const [query, paths] of cases) refused(await getRaw(w, apiId, query), paths);
    });

    test('tag: comma-joined, repeated and mixed forms filter by the same tags (all of them); groupBy tag and tags', async () => {
      const [, b, c] = keys;
      for (const query of ['tag=all,k1', 'tag=k1&tag=all', 'tag=all,k1&tag=k1']) {
        assert.deepEqual(
          rows(await getRaw(w, apiId, query)).map(({ valid, total }) => ({ valid, total })),
          [{ valid: 2, total: 2 }],
          query,
        );
      }
      assert.equal(rows(await getRaw(w, apiId, 'tag=k1,k2'))[0].total, 0, 'no verification carries both');
      assert.deepEqual(
        rows(await getRaw(w, apiId, 'tag=all&groupBy=key,tag')).map((r) => [r.keyId, (r as { tag?: string }).tag, r.valid]),
        [
          [keys[0], 'all', 1],
          [keys[0], 'k0', 1],
          [b, 'all', 2],
          [b, 'k1', 2],
          [c, 'all', 3],
          [c, 'k2', 3],
        ].sort((x, y) => (`${x[0]}\u0000${x[1]}` < `${y[0]}\u0000${y[1]}` ? -1 : 1)),
      );
      assert.deepEqual(
        rows(await getRaw(w, apiId, 'groupBy=tags&groupBy=hour')).map((r) => [r.time, (r as { tags?: string[] }).tags, r.valid]),
        keys.map((_, i) => [T0 + i * HOUR_MS, [`k${i}`, 'all'], i + 1]),
      );
    });

    test('the OpenAPI document describes both forms and the refused tag', async () => {
      const doc = (await w.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const params: Array<{ name: string; description?: string; schema: { type?: string; maxItems?: number } }> =
        doc.paths[path].get.parameters;
      const param = (name: string) => params.find((p) => p.name === name)!;
      for (const [name, maxItems] of [
        ['keyId', MAX_QUERY_ITEMS],
        ['groupBy', 4],
        ['tag', MAX_TAGS],
      ] as const) {
        assert.equal(param(name).schema.type, 'array');
        assert.equal(param(name).schema.maxItems, maxItems);
        assert.match(param(name).description ?? '', /repeat the parameter, or join them with commas/);
      }
      assert.match(param('tag').description ?? '', /carrying all of these tags/);
      assert.match(param('groupBy').description ?? '', /tag.*tags/);
      const row = doc.paths[path].get.responses['200'].content['application/json'].schema.items.properties;
      assert.deepEqual([row.tag.type, row.tags.type, row.tags.items.type], ['string', 'array', 'string']);
    });
  });
}
