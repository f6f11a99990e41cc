import fc from 'fast-check';

/**
 * Analytics queries for the fuzz (the `query` member of v2 analytics.getVerifications / getRatelimits): SELECTs
 * over the public tables of either source (so a route gets the other's tables too), with allowed and refused
 * functions, CTEs, subqueries, UNION/EXCEPT and joins, and hostile literals (always quoted as SQL strings): most
 * parse, many run, the rest must be a clean 4xx.
 */

const TABLES: Record<string, string[]> = {
  key_verifications_v1: ['time', 'key_id', 'outcome', 'key_space_id', 'external_id', 'tags', 'spent_credits', 'latency'],
  key_verifications_per_day_v1: ['time', 'key_id', 'outcome', 'key_space_id', 'tags', 'count', 'spent_credits'],
  key_verifications_per_hour_v1: ['time', 'key_id', 'outcome', 'count'],
  ratelimits_v1: ['time', 'identifier', 'passed', 'namespace_id', 'latency'],
  ratelimits_per_minute_v1: ['time', 'identifier', 'passed', 'namespace_id', 'count'],
};
const CALLS = ['count()', 'sum(latency)', 'avg(latency)', 'max(time)', 'countIf(passed)', 'uniq(key_id)', 'toStartOfHour(time)'];
const REFUSED = ['sleep(1)', "file('/etc/passwd')", 'version()', 'load_extension(1)', "pg_read_file('x')"];
const BAD_SQL = ['; DROP TABLE keys', "' OR 1=1 --", '/*', ')', 'FOR UPDATE', 'SETTINGS max_threads = 1'];

const quoted = fc
  .oneof(fc.string({ maxLength: 12 }), fc.constantFrom("'; DROP TABLE keys; --", 'x\\', '\u0000', '😀'))
  .map((s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`);
const literal = fc.oneof(
  quoted,
  fc.integer({ min: -1e6, max: 1e12 }).map(String),
  fc.constantFrom('NULL', '1.5', 'now()', 'now() - INTERVAL 7 DAY'),
);

const select = (depth: number): fc.Arbitrary<string> =>
  fc
    .record({
      table: fc.constantFrom(...Object.keys(TABLES)),
      items: fc.array(fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...CALLS, '*') }, fc.constantFrom(...REFUSED), literal), {
        minLength: 1,
        maxLength: 3,
      }),
      where: fc.option(fc.tuple(fc.constantFrom('=', '!=', '>', '<', 'LIKE', 'IN'), literal), { nil: undefined }),
      tail: fc.constantFrom('', ' GROUP BY 1', ' ORDER BY 1 DESC', ' LIMIT 5', ' LIMIT 5, 10'),
      sub: depth > 0 ? fc.option(select(depth - 1), { nil: undefined }) : fc.constant(undefined),
    })
    .chain(({ table, items, where, tail, sub }) =>
      fc.constantFrom(...TABLES[table]).map((col) => {
        const cond = where ? ` WHERE ${col} ${where[0]} ${where[0] === 'IN' ? `(${where[1]})` : where[1]}` : '';
        if (sub) return `SELECT count() FROM (${sub}) AS s${tail}`;
        return `SELECT ${items.map((i) => (i === '*' ? col : i)).join(', ')} FROM ${table}${cond}${tail}`;
      }),
    );

/** An analytics query: a SELECT, a compound or a CTE of SELECTs, now and then with a hostile fragment added. */
export const analyticsQuery = (): fc.Arbitrary<string> =>
  fc
    .tuple(
      select(1),
      fc.option(fc.tuple(fc.constantFrom('UNION ALL', 'EXCEPT', 'JOIN'), select(0)), { nil: undefined }),
      fc.boolean(),
      fc.oneof({ weight: 7, arbitrary: fc.constant(undefined) }, fc.constantFrom(...BAD_SQL)),
    )
    .map(([first, second, cte, bad]) => {
      let q = first;
      if (second && second[0] !== 'JOIN') q = `${first} ${second[0]} ${second[1]}`;
      if (second?.[0] === 'JOIN') q = `SELECT count() FROM (${first}) a JOIN (${second[1]}) b ON 1 = 1`;
      if (cte) q = `WITH key_verifications_v1 AS (${first}) SELECT * FROM key_verifications_v1`;
      return bad ? `${q} ${bad}` : q;
    });
