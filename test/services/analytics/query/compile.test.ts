import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../../../src/domain/errors.ts';
import type { AnalyticsSource } from '../../../../src/services/analytics/query/catalog.ts';
import type { CompiledQuery, SqlDialect } from '../../../../src/services/analytics/query/compiled.ts';
import { compileQuery } from '../../../../src/services/analytics/query/compile-select.ts';
import { POSTGRES_QUERY_DIALECT } from '../../../../src/services/analytics/query/compile-postgres.ts';
import { SQLITE_QUERY_DIALECT } from '../../../../src/services/analytics/query/compile-sqlite.ts';
import { parseQuery } from '../../../../src/services/analytics/query/parse.ts';
import { validateQuery } from '../../../../src/services/analytics/query/validate.ts';

// The compiler on its own (no store): every reference to a public table, wherever it sits (CTE, subquery,
// UNION/EXCEPT branch, join side), becomes the physical table filtered to the caller's workspace (and readable
// APIs/namespaces) in the SQL of both dialects; a value of the query reaches the store only as a bound parameter.

const WS = 'ws_compile_T';
const NOW = Date.UTC(2026, 10, 28, 12);
const DIALECTS: SqlDialect[] = [SQLITE_QUERY_DIALECT, POSTGRES_QUERY_DIALECT];

function compile(
  dialect: SqlDialect,
  q: string,
  source: AnalyticsSource = 'verifications',
  scopeIds: string[] | null = null,
): CompiledQuery {
  const statement = parseQuery(q);
  validateQuery(statement, source);
  return compileQuery(statement, q, dialect, { workspaceId: WS, source, scopeIds }, NOW);
}

const PARAM = String.raw`(?:\?|\$)(\d+)(?:::text)?`;
const FILTERED = new RegExp(
  String.raw`\(SELECT \* FROM (analytics_[a-z_]+) WHERE workspace_id = ${PARAM}(?: AND (key_space_id|namespace_id) IN \(${PARAM}\))?`,
  'g',
);
/** A physical table's name not quoted (quoted names are the query's own aliases). */
const PHYSICAL = /(?<![\w"])analytics_[a-z_]+(?![\w"])/g;

/**
 * Asserts that the SQL reads exactly `tables` (physical names, in order), each through the workspace filter bound
 * to WS (and, with `scope`, the scope column bound to that id), and never a physical table without it.
 */
function assertFiltered(c: CompiledQuery, tables: string[], scope?: string): void {
  const filtered = [...c.sql.matchAll(FILTERED)];
  assert.deepEqual(
    filtered.map((m) => m[1]),
    tables,
    c.sql,
  );
  assert.equal([...c.sql.matchAll(PHYSICAL)].length, tables.length, `a physical table read without the filter: ${c.sql}`);
  for (const m of filtered) {
    assert.equal(c.params[Number(m[2]) - 1], WS, c.sql);
    if (scope) assert.equal(c.params[Number(m[4]) - 1], scope, c.sql);
    else assert.equal(m[3], undefined, c.sql);
  }
}

const refused = (kind: string, detail: RegExp) => (e: unknown) => {
  assert.ok(e instanceof AppError, String(e));
  assert.equal(e.kind, kind);
  assert.match(e.message, detail);
  return true;
};

for (const dialect of DIALECTS) {
  describe(`analytics query compiler (${dialect.name})`, () => {
    test('a plain read, a CTE, a subquery, UNION/EXCEPT branches and both sides of a join are each filtered', () => {
      assertFiltered(compile(dialect, 'SELECT count() FROM key_verifications_v1'), ['analytics_key_verifications']);
      assertFiltered(compile(dialect, 'WITH k AS (SELECT key_id FROM key_verifications_per_day_v1) SELECT key_id FROM k'), [
        'analytics_key_verifications_per_day',
      ]);
      assertFiltered(
        compile(
          dialect,
          'SELECT key_id FROM (SELECT key_id FROM key_verifications_per_hour_v1) WHERE key_id IN (SELECT key_id FROM key_verifications_per_minute_v1)',
        ),
        ['analytics_key_verifications_per_hour', 'analytics_key_verifications_per_minute'],
      );
      assertFiltered(
        compile(
          dialect,
          'SELECT key_id FROM key_verifications_v1 UNION ALL SELECT key_id FROM key_verifications_per_month_v1 EXCEPT SELECT a.key_id FROM key_verifications_v1 a JOIN key_verifications_per_day_v1 b ON a.key_id = b.key_id',
        ),
        [
          'analytics_key_verifications',
          'analytics_key_verifications_per_month',
          'analytics_key_verifications',
          'analytics_key_verifications_per_day',
        ],
      );
      assertFiltered(
        compile(
          dialect,
          'SELECT a.key_id FROM key_verifications_v1 AS a LEFT JOIN key_verifications_v1 AS b ON a.key_id = b.key_id, key_verifications_v1 c',
        ),
        ['analytics_key_verifications', 'analytics_key_verifications', 'analytics_key_verifications'],
      );
      assertFiltered(
        compile(dialect, 'SELECT identifier FROM ratelimits_v1 WHERE EXISTS (SELECT 1 FROM ratelimits_per_day_v1)', 'ratelimits'),
        ['analytics_ratelimits', 'analytics_ratelimits_per_day'],
      );
    });

    test('a scoped caller reads only its APIs or namespaces, in every reference', () => {
      assertFiltered(
        compile(
          dialect,
          'SELECT key_id FROM key_verifications_v1 UNION ALL SELECT key_id FROM key_verifications_per_day_v1',
          'verifications',
          ['api_only'],
        ),
        ['analytics_key_verifications', 'analytics_key_verifications_per_day'],
        'api_only',
      );
      assertFiltered(
        compile(dialect, 'WITH r AS (SELECT identifier FROM ratelimits_v1) SELECT identifier FROM r', 'ratelimits', ['rlns_only']),
        ['analytics_ratelimits'],
        'rlns_only',
      );
      const none = compile(dialect, 'SELECT count() FROM key_verifications_v1', 'verifications', []);
      assert.match(none.sql, /1 = 0/);
    });

    test('a CTE named as a public (or physical) table cannot read around the filter', () => {
      const shadow = compile(
        dialect,
        "WITH key_verifications_v1 AS (SELECT key_id, outcome FROM key_verifications_v1 WHERE outcome = 'VALID') SELECT key_id FROM key_verifications_v1",
      );
      assertFiltered(shadow, ['analytics_key_verifications']);
      const nested = compile(
        dialect,
        'WITH key_verifications_v1 AS (SELECT key_id FROM key_verifications_v1), key_verifications_per_day_v1 AS (SELECT key_id FROM key_verifications_v1) SELECT key_id FROM key_verifications_per_day_v1 UNION ALL SELECT key_id FROM key_verifications_v1',
      );
      for (const m of nested.sql.matchAll(PHYSICAL)) assert.ok(nested.sql.slice(m.index - 14, m.index) === 'SELECT * FROM ', nested.sql);
      assertFiltered(nested, ['analytics_key_verifications']);
      assert.throws(
        () =>
          compile(
            dialect,
            'WITH key_verifications_v1 AS (SELECT key_id FROM key_verifications_v1) SELECT key_id FROM (WITH key_verifications_v1 AS (SELECT 1 AS key_id) SELECT key_id FROM key_verifications_v1)',
          ),
        refused('analytics/invalid-query', /key_verifications_v1/),
      );
      const physical = compile(dialect, 'WITH analytics_key_verifications AS (SELECT 1 AS x) SELECT x FROM analytics_key_verifications');
      assertFiltered(physical, []);
      assert.throws(
        () =>
          compile(
            dialect,
            'WITH a AS (SELECT * FROM analytics_key_verifications), analytics_key_verifications AS (SELECT 1 AS x) SELECT * FROM a',
          ),
        refused('analytics/invalid-query', /analytics_key_verifications/),
      );
      assert.throws(
        () => compile(dialect, 'SELECT * FROM (WITH k AS (SELECT 1 AS x) SELECT x FROM k), analytics_key_verifications'),
        refused('analytics/invalid-table', /analytics_key_verifications/),
      );
    });

    test('values of the query are bound parameters, never SQL text', () => {
      const strings = ['zz_key_7f3a', "it's zz_quoted", 'zz_tag=prod', 'zz_ext_91', '2026-11-20 10:00:00'];
      const numbers = [424242, 987.625, 31337];
      const q = `SELECT key_id, if(outcome = '${strings[0]}', ${numbers[0]}, ${numbers[1]}) AS v
        FROM key_verifications_v1
        WHERE key_id IN ('${strings[0]}', '${strings[1].replace("'", "''")}') AND has(tags, '${strings[2]}') AND external_id != '${strings[3]}'
          AND time >= '${strings[4]}' AND latency > ${numbers[2]}
        UNION ALL SELECT concat(key_id, '${strings[3]}'), ${numbers[0]} FROM key_verifications_per_day_v1 WHERE outcome LIKE '${strings[2]}%'`;
      const c = compile(dialect, q);
      for (const value of [...strings, ...numbers.map(String), 'zz_'])
        assert.ok(!c.sql.includes(value), `${value} is in the SQL: ${c.sql}`);
      for (const value of [strings[0], strings[1], strings[2], strings[3], numbers[0], numbers[2]]) {
        assert.ok(c.params.includes(value), `${value} is not bound: ${JSON.stringify(c.params)}`);
      }
      assertFiltered(c, ['analytics_key_verifications', 'analytics_key_verifications_per_day']);
    });

    test('an unknown table in a compiled position is refused, naming it', () => {
      assert.throws(
        () => compile(dialect, 'SELECT * FROM key_verifications_v1', 'ratelimits'),
        refused('analytics/invalid-table', /key_verifications_v1/),
      );
    });
  });
}

test('SQLite: every table read checks the deadline, on one row read in 1,024 at random; PostgreSQL has its own timeout', () => {
  const sampled = '(random() % 1024 <> 0 OR keyhold_live(time))';
  for (const q of [
    'SELECT outcome, count() FROM key_verifications_v1 GROUP BY outcome',
    'SELECT time, sum(count) FROM key_verifications_per_day_v1 GROUP BY time',
    'SELECT count() FROM key_verifications_v1 AS a CROSS JOIN key_verifications_v1 AS b',
    'WITH k AS (SELECT key_id FROM key_verifications_v1) SELECT count() FROM k',
  ]) {
    const sql = compile(SQLITE_QUERY_DIALECT, q).sql;
    const tables = sql.match(/FROM analytics_/g)?.length ?? 0;
    assert.ok(tables > 0 && sql.split(sampled).length - 1 === tables, `${q}: ${sql}`);
  }
  assert.ok(!compile(POSTGRES_QUERY_DIALECT, 'SELECT count() FROM key_verifications_v1').sql.includes('keyhold_live'));
});
