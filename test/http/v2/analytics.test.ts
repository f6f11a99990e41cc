import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { refillRollupForms } from '../../helpers/rollup-forms.ts';
import { assertV2Error, v2Data, v2Locations, v2SecurityTests } from '../../helpers/v2.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

type Row = Record<string, unknown>;

/** Raw verification events written straight into the physical table (the recorder's rows). */
async function insertVerifications(w: World, workspaceId: string, rows: Array<Partial<Row> & { time: number }>): Promise<void> {
  const pg = w.store.caps.dialect === 'postgres';
  for (const [i, r] of rows.entries()) {
    const tags = (r.tags as string[] | undefined) ?? [];
    await sql`insert into analytics_key_verifications (request_id, time, workspace_id, key_space_id, identity_id, external_id, key_id, region, outcome, tags, spent_credits, latency)
      values (${`req_${i}_${Math.random()}`}, ${r.time}, ${workspaceId}, ${r.key_space_id ?? 'api_a'}, ${r.identity_id ?? ''}, ${r.external_id ?? ''},
        ${r.key_id ?? 'key_1'}, 'local', ${r.outcome ?? 'VALID'}, ${pg ? sql`${tags}::text[]` : JSON.stringify(tags)}, ${r.spent_credits ?? 0}, ${r.latency ?? 1})`.execute(
      w.store.db,
    );
  }
}

async function insertDaily(w: World, workspaceId: string, rows: Array<Partial<Row> & { time: number; count: number }>): Promise<void> {
  const pg = w.store.caps.dialect === 'postgres';
  for (const r of rows) {
    await sql`insert into analytics_key_verifications_per_day (time, workspace_id, key_space_id, identity_id, external_id, key_id, outcome, tags, count, spent_credits, latency_sum)
      values (${r.time}, ${workspaceId}, ${r.key_space_id ?? 'api_a'}, '', ${r.external_id ?? ''}, ${r.key_id ?? 'key_1'}, ${r.outcome ?? 'VALID'},
        ${pg ? sql`${[]}::text[]` : '[]'}, ${r.count}, ${r.spent_credits ?? 0}, 0)`.execute(w.store.db);
  }
  await refillRollupForms(w.store.db);
}

for (const dialect of DIALECTS) {
  describe(`v2 analytics.getVerifications (${dialect})`, () => {
    let w: World;
    const now = Date.now();
    const today = now - (now % DAY);
    before(async () => {
      w = await world(dialect);
      await insertVerifications(w, w.workspaceId, [
        {
          time: now - 1000,
          key_id: 'key_1',
          outcome: 'VALID',
          tags: ['path=/a', 'env=prod'],
          spent_credits: 2,
          latency: 10,
          external_id: 'user_1',
        },
        { time: now - 2000, key_id: 'key_1', outcome: 'RATE_LIMITED', tags: ['path=/b'], latency: 20, external_id: 'user_1' },
        { time: now - 3000, key_id: 'key_2', outcome: 'VALID', tags: ['env=prod'], spent_credits: 1, latency: 30, key_space_id: 'api_b' },
        { time: now - 2 * DAY, key_id: 'key_2', outcome: 'VALID', latency: 40, key_space_id: 'api_b' },
      ]);
      await insertDaily(w, w.workspaceId, [
        { time: today, key_id: 'key_1', outcome: 'VALID', count: 5, spent_credits: 3, external_id: 'user_1' },
        { time: today - DAY, key_id: 'key_2', outcome: 'VALID', count: 7, key_space_id: 'api_b' },
        { time: today - DAY, key_id: 'key_2', outcome: 'RATE_LIMITED', count: 1, key_space_id: 'api_b' },
      ]);
      const other = await w.otherWorkspace();
      await insertVerifications(w, other.workspaceId, [{ time: now - 1000, key_id: 'key_secret', key_space_id: 'api_a' }]);
      await insertDaily(w, other.workspaceId, [{ time: today, key_id: 'key_secret', count: 1000 }]);
    });
    after(() => w.close());

    const query = async (q: string, key?: string) => w.post('/v2/analytics.getVerifications', { query: q }, key);
    const rows = async (q: string, key?: string) => v2Data<Row[]>(await query(q, key));

    test("Unkey's documented examples answer with numbers, only the caller's rows", async () => {
      assert.deepEqual(await rows('SELECT COUNT(*) as total FROM key_verifications_v1 WHERE time >= now() - INTERVAL 7 DAY'), [
        { total: 4 },
      ]);
      assert.deepEqual(
        await rows('SELECT SUM(count) as total_verifications FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 7 DAY'),
        [{ total_verifications: 13 }],
      );
      assert.deepEqual(
        await rows(
          'SELECT outcome, SUM(count) as count FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY outcome ORDER BY count DESC',
        ),
        [
          { outcome: 'VALID', count: 12 },
          { outcome: 'RATE_LIMITED', count: 1 },
        ],
      );
      assert.deepEqual(
        await rows(
          "SELECT key_id, sumIf(count, outcome = 'VALID') AS valid, sumIf(count, outcome = 'RATE_LIMITED') AS rateLimited, SUM(count) AS total FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY key_id ORDER BY total DESC LIMIT 100",
        ),
        [
          { key_id: 'key_2', valid: 7, rateLimited: 1, total: 8 },
          { key_id: 'key_1', valid: 5, rateLimited: 0, total: 5 },
        ],
      );
      const daily = await rows(
        'SELECT time as date, SUM(count) as verifications FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY date ORDER BY date',
      );
      assert.deepEqual(daily, [
        { date: new Date(today - DAY).toISOString().replace('.000Z', 'Z'), verifications: 8 },
        { date: new Date(today).toISOString().replace('.000Z', 'Z'), verifications: 5 },
      ]);
      assert.deepEqual(
        await rows(
          "SELECT external_id, SUM(count) as total FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY AND external_id != '' GROUP BY external_id ORDER BY total DESC LIMIT 10",
        ),
        [{ external_id: 'user_1', total: 5 }],
      );
    });

    test('functions with ClickHouse results: aggregates, arrays, dates, strings, conditionals', async () => {
      const [r] = await rows(
        `SELECT count() AS n, uniq(key_id) AS keys, uniqExact(outcome) AS outcomes, sum(spent_credits) AS credits, avg(latency) AS avg_latency,
          min(latency) AS min_latency, max(latency) AS max_latency, quantile(0.5)(latency) AS median, countIf(outcome = 'VALID') AS valid,
          groupUniqArray(outcome) AS kinds
         FROM key_verifications_v1`,
      );
      assert.deepEqual(
        { ...r, kinds: (r.kinds as string[]).sort() },
        {
          n: 4,
          keys: 2,
          outcomes: 2,
          credits: 3,
          avg_latency: 25,
          min_latency: 10,
          max_latency: 40,
          median: 25,
          valid: 3,
          kinds: ['RATE_LIMITED', 'VALID'],
        },
      );
      const tags = await rows('SELECT arrayJoin(tags) AS tag, count() AS n FROM key_verifications_v1 GROUP BY tag ORDER BY n DESC, tag');
      assert.deepEqual(tags, [
        { tag: 'env=prod', n: 2 },
        { tag: 'path=/a', n: 1 },
        { tag: 'path=/b', n: 1 },
      ]);
      const filtered = await rows(
        "SELECT arrayFilter(x -> startsWith(x, 'path='), tags) AS paths, has(tags, 'env=prod') AS prod, length(tags) AS n FROM key_verifications_v1 WHERE key_id = 'key_1' ORDER BY time DESC",
      );
      assert.deepEqual(filtered, [
        { paths: ['path=/a'], prod: 1, n: 2 },
        { paths: ['path=/b'], prod: 0, n: 1 },
      ]);
      assert.deepEqual(await rows("SELECT count() AS n FROM key_verifications_v1 WHERE hasAny(tags, ['path=/b', 'nope'])"), [{ n: 1 }]);
      assert.deepEqual(await rows("SELECT count() AS n FROM key_verifications_v1 WHERE hasAll(tags, ['path=/a', 'env=prod'])"), [{ n: 1 }]);
      const [s] = await rows(
        `SELECT lower('AbC') AS l, upper('abc') AS u, substring('keyhold', 1, 3) AS sub, concat('a', '-', 'b') AS c, length('héllo') AS bytes,
          trim('  x  ') AS t, endsWith('key_1', '_1') AS e, round(2.5) AS r1, round(3.5) AS r2, round(1.2345, 2) AS r3, floor(1.7) AS f, ceil(1.2) AS ce, abs(-3) AS a,
          if(1 = 1, 'y', 'n') AS i, coalesce(NULL, 'z') AS co, toInt64('42') AS i64, toInt32(3.9) AS i32, toFloat64('1.5') AS f64, toString(12) AS str,
          CASE WHEN 2 > 1 THEN 'big' ELSE 'small' END AS cs`,
      );
      assert.deepEqual(s, {
        l: 'abc',
        u: 'ABC',
        sub: 'key',
        c: 'a-b',
        bytes: 6,
        t: 'x',
        e: 1,
        r1: 2,
        r2: 4,
        r3: 1.23,
        f: 1,
        ce: 2,
        a: 3,
        i: 'y',
        co: 'z',
        i64: 42,
        i32: 3,
        f64: 1.5,
        str: '12',
        cs: 'big',
      });
      const [d] = await rows(
        `SELECT toStartOfHour(toDateTime('2026-03-15 13:45:12')) AS h, toStartOfDay(toDateTime('2026-03-15 13:45:12')) AS d,
          toStartOfMonth(toDate('2026-03-15')) AS m, toStartOfYear(toDate('2026-03-15')) AS y, toStartOfWeek(toDate('2026-03-18')) AS w,
          toStartOfQuarter(toDate('2026-05-15')) AS q, toStartOfMinute(toDateTime('2026-03-15 13:45:12')) AS mi,
          date_trunc('hour', toDateTime('2026-03-15 13:45:12')) AS dt, formatDateTime(toDateTime('2026-03-05 07:08:09'), '%Y-%m-%d %H:%i:%S') AS f,
          toDateTime('2026-01-31 00:00:00') + INTERVAL 1 MONTH AS plus_month, toUnixTimestamp64Milli(toDateTime64('2026-03-15 00:00:00.250', 3)) AS ms,
          fromUnixTimestamp64Milli(1700000000000) AS from_ms, toDate('2026-03-15') - toIntervalDay(1) AS yesterday, toString(toDate('2026-03-15')) AS ds`,
      );
      assert.deepEqual(d, {
        h: '2026-03-15T13:00:00Z',
        d: '2026-03-15T00:00:00Z',
        m: '2026-03-01T00:00:00Z',
        y: '2026-01-01T00:00:00Z',
        w: '2026-03-15T00:00:00Z',
        q: '2026-04-01T00:00:00Z',
        mi: '2026-03-15T13:45:00Z',
        dt: '2026-03-15T13:00:00Z',
        f: '2026-03-05 07:08:09',
        plus_month: '2026-02-28T00:00:00Z',
        ms: Date.UTC(2026, 2, 15, 0, 0, 0, 250),
        from_ms: '2023-11-14T22:13:20Z',
        yesterday: '2026-03-14T00:00:00Z',
        ds: '2026-03-15',
      });
    });

    test('WITH, subqueries, UNION ALL, EXCEPT, joins: every table reference keeps the workspace filter', async () => {
      const cte = await rows(
        'WITH k AS (SELECT key_id, count() AS n FROM key_verifications_v1 GROUP BY key_id) SELECT key_id, n FROM k ORDER BY key_id',
      );
      assert.deepEqual(cte, [
        { key_id: 'key_1', n: 2 },
        { key_id: 'key_2', n: 2 },
      ]);
      const union = await rows('SELECT key_id FROM key_verifications_v1 UNION ALL SELECT key_id FROM key_verifications_per_day_v1');
      assert.equal(union.length, 7);
      assert.ok(union.every((r) => r.key_id !== 'key_secret'));
      const except = await rows(
        "SELECT key_id FROM key_verifications_per_day_v1 EXCEPT SELECT key_id FROM key_verifications_v1 WHERE outcome = 'RATE_LIMITED'",
      );
      assert.deepEqual(except, [{ key_id: 'key_2' }]);
      const sub = await rows(
        "SELECT count() AS n FROM key_verifications_v1 WHERE key_id IN (SELECT key_id FROM key_verifications_per_day_v1 WHERE key_id = 'key_secret' OR 1 = 1)",
      );
      assert.deepEqual(sub, [{ n: 4 }]);
      const join = await rows(
        'SELECT count() AS n FROM key_verifications_v1 AS v JOIN key_verifications_per_day_v1 AS d ON v.key_id = d.key_id',
      );
      assert.deepEqual(join, [{ n: 6 }]);
    });

    test("isolation: another workspace's rows never appear, whatever the query says", async () => {
      for (const [q, own] of [
        ["SELECT count() AS n FROM key_verifications_v1 WHERE key_id = 'key_secret'", 0],
        ["SELECT count() AS n FROM key_verifications_v1 WHERE workspace_id != '' OR 1 = 1", 4],
        ["SELECT count() AS n FROM key_verifications_per_day_v1 WHERE key_id = 'key_secret' OR workspace_id = workspace_id", 3],
      ] as const) {
        assert.deepEqual(await rows(q), [{ n: own }], q);
        assert.equal((await rows(`${q.replace('count() AS n', 'key_id')}`)).filter((x) => x.key_id === 'key_secret').length, 0);
      }
    });

    test('API-scoped permissions read only those APIs; api_id and apiId name the API', async () => {
      const key = await w.rootKey(['api.api_b.read_analytics']);
      assert.deepEqual(await rows('SELECT count() AS n FROM key_verifications_v1', key), [{ n: 2 }]);
      assert.deepEqual(await rows("SELECT count() AS n FROM key_verifications_v1 WHERE api_id = 'api_a'", key), [{ n: 0 }]);
      assert.deepEqual(await rows("SELECT count() AS n FROM key_verifications_v1 WHERE apiId = 'api_a'"), [{ n: 2 }]);
      assert.deepEqual(await rows("SELECT count() AS n FROM key_verifications_v1 WHERE externalId = 'user_1'"), [{ n: 2 }]);
      const none = await query('SELECT 1', await w.rootKey(['api.*.read_key']));
      assertV2Error(none, 403, 'unkey/authorization/insufficient_permissions');
      const wrongFamily = await w.post('/v2/analytics.getRatelimits', { query: 'SELECT 1' }, key);
      assertV2Error(wrongFamily, 403, 'unkey/authorization/insufficient_permissions');
    });

    test('hostile queries are 400s naming what is refused, and write nothing', async () => {
      const cases: Array<[string, string, RegExp]> = [
        ['SELECT 1; DROP TABLE analytics_key_verifications', 'invalid_analytics_query', /stacked/],
        ['DELETE FROM key_verifications_v1', 'invalid_analytics_query', /SELECT/],
        ['SELECT * FROM analytics_key_verifications', 'invalid_analytics_table', /analytics_key_verifications/],
        ['SELECT * FROM sqlite_master', 'invalid_analytics_table', /sqlite_master/],
        ['SELECT * FROM pg_catalog.pg_tables', 'invalid_analytics_table', /pg_catalog\.pg_tables/],
        ['SELECT * FROM information_schema.tables', 'invalid_analytics_table', /information_schema\.tables/],
        ['SELECT * FROM system.tables', 'invalid_analytics_table', /system\.tables/],
        ["SELECT * FROM file('/etc/passwd')", 'invalid_analytics_function', /file/],
        ["SELECT * FROM url('http://example.com')", 'invalid_analytics_function', /url/],
        ['SELECT * FROM ratelimits_v1', 'invalid_analytics_table', /ratelimits_v1/],
        ['SELECT sleep(10) FROM key_verifications_v1', 'invalid_analytics_function', /sleep/],
        ["SELECT pg_read_file('/etc/passwd')", 'invalid_analytics_function', /pg_read_file/],
        ['SELECT load_extension(1)', 'invalid_analytics_function', /load_extension/],
        ['SELECT CAST(key_id AS INT) FROM key_verifications_v1', 'invalid_analytics_query', /CAST/],
        ['SELECT key_id FROM key_verifications_v1 /* comment */ -- c\n WHERE 1 = 1 FOR UPDATE', 'invalid_analytics_query', /FOR UPDATE/],
        ['SELECT ?', 'invalid_analytics_query', /./],
      ];
      for (const [q, code, detail] of cases) {
        const res = await query(q);
        assertV2Error(res, 400, `user/bad_request/${code}`);
        assert.match(res.json.error.detail, detail, q);
      }
      const deep = `SELECT ${'('.repeat(300)}1${')'.repeat(300)}`;
      assertV2Error(await query(deep), 400, 'user/bad_request/invalid_analytics_query');
      const huge = `SELECT count() AS n FROM key_verifications_v1 WHERE key_id IN (${Array.from({ length: 1000 }, (_, i) => `'k${i}'`).join(',')})`;
      assert.ok(huge.length < 10_240);
      assert.deepEqual(await rows(huge), [{ n: 0 }]);
      assertV2Error(await query(`SELECT '${'x'.repeat(10_300)}'`), 400, 'unkey/application/invalid_input');
      const [count] = await rows('SELECT count() AS n FROM key_verifications_v1');
      assert.deepEqual(count, { n: 4 });
    });

    test('a range before the retention is a 400; results are capped at 10,000 rows', async () => {
      const res = await query('SELECT count() FROM key_verifications_v1 WHERE time >= now() - INTERVAL 60 DAY');
      assertV2Error(res, 400, 'user/bad_request/query_range_exceeds_retention');
      assertV2Error(
        await query('SELECT count() FROM key_verifications_per_minute_v1 WHERE time BETWEEN now() - INTERVAL 30 DAY AND now()'),
        400,
        'user/bad_request/query_range_exceeds_retention',
      );
      assert.equal((await rows('SELECT count() AS n FROM key_verifications_per_hour_v1 WHERE time >= now() - INTERVAL 60 DAY')).length, 1);
      const many = await rows(
        'SELECT a.key_id FROM key_verifications_v1 a, key_verifications_v1 b, key_verifications_v1 c, key_verifications_v1 d, key_verifications_v1 e, key_verifications_v1 f, key_verifications_v1 g LIMIT 20000',
      );
      assert.equal(many.length, 10_000);
    });

    test('a cross join of raw events is stopped at 5 s with a 422 while the server answers other requests', async () => {
      const tables = Array.from({ length: 16 }, (_, i) => `key_verifications_v1 t${i}`).join(', ');
      const started = Date.now();
      const slow = query(`SELECT count() AS n FROM ${tables}`);
      await new Promise((r) => setTimeout(r, 500));
      const t0 = Date.now();
      const live = await w.get('/v2/liveness', {});
      assert.equal(live.status, 200);
      assert.ok(Date.now() - t0 < 2_000, 'the server answered while the query ran');
      assertV2Error(await slow, 422, 'user/unprocessable_entity/query_execution_timeout');
      assert.ok(Date.now() - started < 15_000);
      // The query itself stopped (a worker left running would keep a core busy long after the answer).
      await new Promise((r) => setTimeout(r, 500));
      const before = process.cpuUsage();
      await new Promise((r) => setTimeout(r, 1_000));
      const spent = process.cpuUsage(before);
      assert.ok((spent.user + spent.system) / 1000 < 400, `CPU after the answer: ${(spent.user + spent.system) / 1000} ms in 1 s`);
    });

    test('a body without its query is a 400 locating it', async () => {
      const res = await w.post('/v2/analytics.getVerifications', {});
      assertV2Error(res, 400, 'unkey/application/invalid_input');
      assert.deepEqual(v2Locations(res), ['/query']);
    });

    describe('security: analytics.getVerifications', () =>
      v2SecurityTests(() => w, {
        path: '/v2/analytics.getVerifications',
        body: async () => ({ query: 'SELECT 1' }),
        permission: 'api.*.read_analytics',
      }));
  });

  describe(`v2 analytics.getRatelimits (${dialect})`, () => {
    let w: World;
    const now = Date.now();
    before(async () => {
      w = await world(dialect);
      const other = await w.otherWorkspace();
      for (const [ws, ns, id, passed] of [
        [w.workspaceId, 'rlns_a', 'user_1', 1],
        [w.workspaceId, 'rlns_a', 'user_1', 0],
        [w.workspaceId, 'rlns_b', 'user_2', 1],
        [other.workspaceId, 'rlns_a', 'user_secret', 1],
      ] as const) {
        await sql`insert into analytics_ratelimits (request_id, time, workspace_id, namespace_id, identifier, passed, latency)
          values (${`req_${Math.random()}`}, ${now - 1000}, ${ws}, ${ns}, ${id}, ${passed}, 1)`.execute(w.store.db);
      }
    });
    after(() => w.close());

    test('passed is a Bool; namespace-scoped keys read only their namespaces', async () => {
      const res = await w.post('/v2/analytics.getRatelimits', {
        query: 'SELECT identifier, passed FROM ratelimits_v1 ORDER BY identifier, passed',
      });
      assert.deepEqual(v2Data(res), [
        { identifier: 'user_1', passed: false },
        { identifier: 'user_1', passed: true },
        { identifier: 'user_2', passed: true },
      ]);
      const key = await w.rootKey(['ratelimit.rlns_b.read_analytics']);
      const scoped = await w.post(
        '/v2/analytics.getRatelimits',
        { query: 'SELECT namespace_id, countIf(passed) AS passed, count() AS total FROM ratelimits_v1 GROUP BY namespace_id' },
        key,
      );
      assert.deepEqual(v2Data(scoped), [{ namespace_id: 'rlns_b', passed: 1, total: 1 }]);
      assertV2Error(
        await w.post('/v2/analytics.getRatelimits', { query: 'SELECT * FROM key_verifications_v1' }),
        400,
        'user/bad_request/invalid_analytics_table',
      );
    });

    describe('security: analytics.getRatelimits', () =>
      v2SecurityTests(() => w, {
        path: '/v2/analytics.getRatelimits',
        body: async () => ({ query: 'SELECT 1' }),
        permission: 'ratelimit.*.read_analytics',
      }));
  });
}
