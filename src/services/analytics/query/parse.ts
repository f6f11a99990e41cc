import { createRequire } from 'node:module';
import type { Program } from 'sql-parser-cst';
import { AppError } from '../../../domain/errors.ts';

/**
 * sql-parser-cst, loaded on the first query rather than at start: its parser (6.5 MB of generated source) adds
 * some 24 MB to the memory of a server that loads it, and most servers never run an analytics query. The first
 * query pays its load (about 130 ms on a slow 2-core machine).
 */
let parser: typeof import('sql-parser-cst') | undefined;
const sqlParser = () => (parser ??= createRequire(import.meta.url)('sql-parser-cst') as typeof import('sql-parser-cst'));

/** The longest query accepted, in bytes (UTF-8). */
export const MAX_QUERY_BYTES = 10 * 1024;

/**
 * A node of sql-parser-cst's tree, navigated by its `type` field by field (the library's own union of 600 node
 * types is too wide for TypeScript to narrow usefully here). `range` is its place in the query's text.
 */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type SqlNode = { type: string; range?: [number, number]; [field: string]: any };

/** The one statement of a query: a SELECT or a compound of SELECTs (UNION, EXCEPT…). */
export type QueryStatement = SqlNode;

export const invalidQuery = (detail: string): AppError => new AppError('analytics/invalid-query', detail);

/**
 * sql-parser-cst reads ClickHouse's syntax in two of its dialects between them: MySQL's (backticks, `INTERVAL 7 DAY`,
 * plain EXCEPT, and `x -> …` lambdas, read as its JSON operator and restored by lambda.ts) and BigQuery's (array
 * literals `['a', 'b']`). A query is read as MySQL first and as BigQuery when MySQL cannot read it; the MySQL
 * error is the one reported.
 */
function parseEither(query: string): Program {
  const { parse } = sqlParser();
  try {
    return parse(query, { dialect: 'mysql', includeRange: true });
  } catch (mysqlError) {
    try {
      return parse(query, { dialect: 'bigquery', includeRange: true });
    } catch {
      throw invalidQuery(`The query is not valid SQL: ${firstLine(mysqlError)}`);
    }
  }
}

const firstLine = (err: unknown): string => String(err instanceof Error ? err.message : err).split('\n')[0];

/**
 * Parses an analytics query into its syntax tree: one SELECT statement (a trailing `;` is allowed, a second
 * statement is not), at most MAX_QUERY_BYTES long.
 */
export function parseQuery(query: string): QueryStatement {
  if (Buffer.byteLength(query, 'utf8') > MAX_QUERY_BYTES) {
    throw invalidQuery(`The query is longer than ${MAX_QUERY_BYTES} bytes.`);
  }
  const program = parseEither(query);
  const statements = program.statements.filter((s) => s.type !== 'empty');
  if (statements.length === 0) throw invalidQuery('The query is empty.');
  if (statements.length > 1) throw invalidQuery('The query must be one statement; stacked statements are not allowed.');
  const statement = statements[0] as SqlNode;
  if (statement.type !== 'select_stmt' && statement.type !== 'compound_select_stmt') {
    throw invalidQuery(`Only SELECT queries are allowed, not ${statement.type.replace(/_stmt$/, '').toUpperCase()}.`);
  }
  return statement;
}
