import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { VerificationRecorder } from '../../../../src/services/verification/verification-recorder.ts';
import { runAnalyticsQuery } from '../../../../src/services/analytics/query/run.ts';
import { compileQuery } from '../../../../src/services/analytics/query/compile-select.ts';
import { parseQuery } from '../../../../src/services/analytics/query/parse.ts';
import { SQLITE_QUERY_DIALECT } from '../../../../src/services/analytics/query/compile-sqlite.ts';
import type { Caller } from '../../../../src/services/caller.ts';
import type { VerifyCode } from '../../../../src/domain/verify-codes.ts';
import { prng } from '../../../helpers/prng.ts';

// A roll-up's coarser forms (by_api, by_key) answer the queries they are chosen for exactly as the roll-up itself:
// every query below is run both ways on events written by the real batch writer, and the answers compared; which
// physical table each reads is checked from its compiled SQL.

const HOUR = 3_600_000;
const OUTCOMES: VerifyCode[] = ['VALID', 'RATE_LIMITED', 'USAGE_EXCEEDED', 'DISABLED'];

/** [query, the form it reads: 'by_api', 'by_key' or null for the roll-up itself]. */
const QUERIES: Array<[string, 'by_api' | 'by_key' | null]> = [
  [
    'SELECT time AS date, SUM(count) AS verifications FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY date ORDER BY date',
    'by_api',
  ],
  [
    'SELECT key_id, SUM(count) AS total FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 7 DAY GROUP BY key_id ORDER BY total DESC, key_id LIMIT 3',
    'by_key',
  ],
  [
    "SELECT time, SUM(count) AS n FROM key_verifications_per_hour_v1 WHERE key_id = 'KEY0' AND time >= now() - INTERVAL 24 HOUR GROUP BY time ORDER BY time",
    'by_key',
  ],
  [
    "SELECT toStartOfHour(time) AS h, sumIf(count, outcome = 'VALID') AS ok, sum(spent_credits) AS credits, sum(latency_sum) AS l FROM key_verifications_per_minute_v1 AS m WHERE m.time >= now() - INTERVAL 2 DAY GROUP BY h ORDER BY h",
    'by_api',
  ],
  [
    'SELECT api_id, sum(spent_credits) AS credits, uniq(key_id) AS keys, min(time) AS first, max(time) AS last FROM key_verifications_per_hour_v1 GROUP BY api_id ORDER BY api_id',
    'by_key',
  ],
  [
    'SELECT externalId, identity_id, SUM(count) AS n FROM key_verifications_per_hour_v1 GROUP BY externalId, identity_id HAVING n > 0 ORDER BY n DESC, externalId',
    'by_key',
  ],
  ['SELECT sum(count) AS count, outcome FROM key_verifications_per_month_v1 GROUP BY outcome ORDER BY count DESC, outcome', 'by_api'],
  ['SELECT DISTINCT outcome FROM key_verifications_per_day_v1 GROUP BY outcome ORDER BY outcome', 'by_api'],
  [
    'WITH d AS (SELECT time, sum(count) AS n FROM key_verifications_per_day_v1 GROUP BY time) SELECT max(n) AS peak, count() AS days FROM d',
    'by_api',
  ],
  [
    "SELECT outcome, sum(count) AS n FROM key_verifications_per_day_v1 WHERE api_id IN ('API0') AND outcome != 'DISABLED' GROUP BY 1 ORDER BY 1",
    'by_api',
  ],
  // What a coarser form cannot answer: rows counted, summed columns read other than by sum, tags, no grouping.
  ['SELECT count() AS n_rows FROM key_verifications_per_day_v1', null],
  ['SELECT avg(count) AS a, outcome FROM key_verifications_per_day_v1 GROUP BY outcome ORDER BY outcome', null],
  ['SELECT min(count) AS a FROM key_verifications_per_day_v1', null],
  ['SELECT sum(1) AS a FROM key_verifications_per_day_v1', null],
  ["SELECT countIf(outcome = 'VALID') AS a FROM key_verifications_per_day_v1", null],
  ["SELECT sum(count) AS n FROM key_verifications_per_day_v1 WHERE has(tags, 't1')", null],
  ['SELECT tags, sum(count) AS n FROM key_verifications_per_day_v1 GROUP BY tags ORDER BY n DESC, toString(tags)', null],
  ['SELECT key_id, count FROM key_verifications_per_month_v1 ORDER BY key_id, count, outcome, toString(tags)', null],
  ['SELECT outcome, sum(count) AS n FROM key_verifications_per_day_v1 GROUP BY outcome HAVING min(count) >= 1 ORDER BY outcome', null],
  ['SELECT sum(count) AS n FROM key_verifications_per_day_v1 WHERE key_id IN (SELECT key_id FROM key_verifications_per_day_v1)', null],
  [
    'SELECT a.outcome, sum(a.count) AS n FROM key_verifications_per_day_v1 AS a JOIN key_verifications_per_day_v1 AS b ON a.key_id = b.key_id GROUP BY a.outcome ORDER BY a.outcome',
    null,
  ],
];

const formOf = (sqlText: string): 'by_api' | 'by_key' | null =>
  sqlText.includes('_by_api ') ? 'by_api' : sqlText.includes('_by_key ') ? 'by_key' : null;

const sorted = (rows: Array<Record<string, unknown>>) => rows.map((r) => JSON.stringify(r)).sort();

test('each query reads the coarsest form that answers it, or the roll-up itself', () => {
  for (const [query, form] of QUERIES) {
    const compiled = compileQuery(
      parseQuery(query),
      query,
      SQLITE_QUERY_DIALECT,
      { workspaceId: 'ws', source: 'verifications', scopeIds: null },
      0,
    );
    assert.equal(formOf(compiled.sql), form, query);
    const itself = compileQuery(
      parseQuery(query),
      query,
      SQLITE_QUERY_DIALECT,
      { workspaceId: 'ws', source: 'verifications', scopeIds: null, forms: false },
      0,
    );
    assert.equal(formOf(itself.sql), null, query);
  }
});

for (const dialect of DIALECTS) {
  describe(`roll-up forms answer as the roll-up (${dialect})`, () => {
    let w: World;
    const now = Date.now();
    let keys: string[] = [];
    let apis: string[] = [];
    const rename = (q: string) => q.replaceAll('KEY0', keys[0]).replaceAll('API0', apis[0]);
    before(async () => {
      w = await world(dialect);
      apis = [await w.createApi('forms-a'), await w.createApi('forms-b')];
      keys = [];
      for (let i = 0; i < 6; i++) keys.push((await w.createKey({ apiId: apis[i % 2] })).keyId);
      const other = await w.otherWorkspace();
      const r = new VerificationRecorder(w.store.db, { dialect });
      const rand = prng(11);
      for (let i = 0; i < 3000; i++) {
        const k = Math.floor(rand() * keys.length);
        const mine = i % 10 !== 0;
        r.record({
          keyId: mine ? keys[k] : 'key_elsewhere',
          workspaceId: mine ? w.workspaceId : other.workspaceId,
          apiId: apis[k % 2],
          identityId: k < 3 ? `id_${k}` : null,
          externalId: k < 3 ? `user_${k}` : null,
          code: OUTCOMES[Math.floor(rand() * OUTCOMES.length)],
          time: now - Math.floor(rand() * 3 * 24 * HOUR),
          tags: rand() < 0.4 ? [] : [`t${Math.floor(rand() * 3)}`, ...(rand() < 0.3 ? ['x'] : [])],
          spentCredits: Math.floor(rand() * 3),
          latency: Math.floor(rand() * 50) / 4,
        });
      }
      await r.flush();
    });
    after(() => w.close());

    const caller = (permissions: string[]): Caller => ({
      workspaceId: w.workspaceId,
      rootKeyId: 'root_test',
      permissions: new Set(permissions),
      requestId: 'req_forms',
    });

    for (const [query, form] of QUERIES) {
      test(`${form ?? 'roll-up'}: ${query.slice(0, 90)}`, async () => {
        for (const permissions of [['api.*.read_analytics'], [`api.${apis[1]}.read_analytics`]]) {
          const q = rename(query);
          const run = (forms: boolean) => runAnalyticsQuery(w.store, caller(permissions), 'verifications', q, { nowMs: now, forms });
          const [coarse, itself] = [await run(true), await run(false)];
          if (permissions[0] === 'api.*.read_analytics') assert.ok(itself.length > 0, `${q} answers rows`);
          assert.deepEqual(sorted(coarse), sorted(itself), q);
        }
      });
    }
  });
}
