import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../../../src/domain/errors.ts';
import type { AnalyticsSource } from '../../../../src/services/analytics/query/catalog.ts';
import { MAX_QUERY_BYTES, parseQuery } from '../../../../src/services/analytics/query/parse.ts';
import { MAX_DEPTH, validateQuery } from '../../../../src/services/analytics/query/validate.ts';

// The parser and the allow-list on their own: what they accept, and that every refusal is the analytics 400 kind
// naming the function, table or construct refused.

const check = (q: string, source: AnalyticsSource = 'verifications'): void => validateQuery(parseQuery(q), source);

const refused = (kind: string, detail: RegExp) => (e: unknown) => {
  assert.ok(e instanceof AppError, String(e));
  assert.equal(e.kind, kind);
  assert.match(e.message, detail);
  return true;
};

describe('analytics query parser', () => {
  test('one SELECT or compound SELECT, a trailing semicolon and comments allowed', () => {
    assert.equal(parseQuery('SELECT 1').type, 'select_stmt');
    assert.equal(parseQuery('SELECT 1 UNION ALL SELECT 2;').type, 'compound_select_stmt');
    assert.equal(parseQuery('/* c */ SELECT key_id -- c\n FROM key_verifications_v1 ;  ').type, 'select_stmt');
  });

  test('refuses empty, stacked, non-SELECT, invalid and oversized queries', () => {
    const cases: Array<[string, RegExp]> = [
      [';', /empty/],
      ['SELECT 1; SELECT 2', /one statement/],
      ['SELECT 1; DROP TABLE keys', /one statement/],
      ['DELETE FROM key_verifications_v1', /SELECT/],
      ["INSERT INTO key_verifications_v1 (key_id) VALUES ('x')", /SELECT/],
      ['UPDATE keys SET name = 1', /SELECT/],
      ['SELECT FROM WHERE', /not valid SQL/],
      [`SELECT '${'x'.repeat(MAX_QUERY_BYTES)}'`, new RegExp(`${MAX_QUERY_BYTES} bytes`)],
    ];
    for (const [q, detail] of cases) assert.throws(() => parseQuery(q), refused('analytics/invalid-query', detail), q.slice(0, 60));
    // the bound is in bytes: 4-byte characters count four times
    assert.throws(() => parseQuery(`SELECT '${'😀'.repeat(MAX_QUERY_BYTES / 4)}'`), refused('analytics/invalid-query', /bytes/));
  });
});

describe('analytics query allow-list', () => {
  test('accepts the public tables of its source, their CTEs, subqueries and allowed functions', () => {
    check("SELECT toStartOfDay(time) AS d, countIf(outcome = 'VALID') FROM key_verifications_per_hour_v1 GROUP BY d");
    check(
      'WITH k AS (SELECT key_id FROM key_verifications_v1) SELECT * FROM k JOIN (SELECT key_id FROM key_verifications_per_day_v1) d USING (key_id)',
    );
    check('SELECT identifier, count() FROM ratelimits_v1 GROUP BY identifier', 'ratelimits');
  });

  test('a function outside the allow-list is refused by name, wherever it is called', () => {
    const cases = [
      ['SELECT sleep(1) FROM key_verifications_v1', 'sleep'],
      ["SELECT key_id FROM key_verifications_v1 WHERE key_id = pg_read_file('/etc/passwd')", 'pg_read_file'],
      ['SELECT load_extension(1)', 'load_extension'],
      ['SELECT key_id FROM key_verifications_v1 ORDER BY randomPrintableASCII(5)', 'randomPrintableASCII'],
      ['WITH k AS (SELECT currentUser() AS u) SELECT u FROM k', 'currentUser'],
      ['SELECT count() FROM key_verifications_v1 GROUP BY key_id HAVING sum(hostName()) > 0', 'hostName'],
      ['SELECT quantile(0.5)(latency), version() FROM key_verifications_v1', 'version'],
    ];
    for (const [q, name] of cases) assert.throws(() => check(q), refused('analytics/invalid-function', new RegExp(`'${name}'`)), q);
  });

  test('a table outside the source is refused by name; table functions by their name', () => {
    const cases: Array<[string, string, AnalyticsSource]> = [
      ['SELECT * FROM ratelimits_v1', 'ratelimits_v1', 'verifications'],
      ['SELECT * FROM key_verifications_v1', 'key_verifications_v1', 'ratelimits'],
      ['SELECT * FROM analytics_key_verifications', 'analytics_key_verifications', 'verifications'],
      ['SELECT * FROM keys', 'keys', 'verifications'],
      ['SELECT name FROM sqlite_master', 'sqlite_master', 'verifications'],
      ['SELECT * FROM system.tables', 'system.tables', 'verifications'],
      ['SELECT * FROM pg_catalog.pg_tables', 'pg_catalog.pg_tables', 'verifications'],
      ['SELECT * FROM information_schema.tables', 'information_schema.tables', 'verifications'],
      ['SELECT key_id FROM key_verifications_v1 WHERE key_id IN (SELECT id FROM root_keys)', 'root_keys', 'verifications'],
      ['SELECT key_id FROM key_verifications_v1 UNION ALL SELECT secret FROM workspaces', 'workspaces', 'verifications'],
      ['SELECT k.key_id FROM key_verifications_v1 k JOIN api_keys a ON a.id = k.key_id', 'api_keys', 'verifications'],
    ];
    for (const [q, name, source] of cases) {
      assert.throws(() => check(q, source), refused('analytics/invalid-table', new RegExp(`'${name.replace('.', '\\.')}'`)), q);
    }
    assert.throws(() => check("SELECT * FROM file('/etc/passwd')"), refused('analytics/invalid-function', /'file'/));
    assert.throws(() => check("SELECT * FROM url('http://x')"), refused('analytics/invalid-function', /'url'/));
  });

  test('syntax outside the allow-list and over-deep trees are refused', () => {
    assert.throws(() => check(`SELECT ${'('.repeat(MAX_DEPTH)}1${')'.repeat(MAX_DEPTH)}`), refused('analytics/invalid-query', /nested/));
    assert.throws(() => check('SELECT key_id FROM key_verifications_v1 FOR UPDATE'), refused('analytics/invalid-query', /./));
    assert.throws(() => check('SELECT @x'), refused('analytics/invalid-query', /./));
  });
});
