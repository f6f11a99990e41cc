import type { SqlNode as Node } from './parse.ts';
import { AppError } from '../../../domain/errors.ts';
import { ALLOWED_FUNCTIONS, PUBLIC_TABLES, type AnalyticsSource } from './catalog.ts';
import { invalidQuery, type QueryStatement } from './parse.ts';

/** How deep a query's syntax tree may nest (a deeper one is refused before it reaches the store). */
export const MAX_DEPTH = 200;

/** The syntax a query may use; any other node (CAST, window, FOR UPDATE, a parameter…) is refused by name. */
const ALLOWED_NODES = new Set([
  'select_stmt',
  'compound_select_stmt',
  'with_clause',
  'common_table_expr',
  'select_clause',
  'select_distinct',
  'select_all',
  'from_clause',
  'where_clause',
  'group_by_clause',
  'having_clause',
  'order_by_clause',
  'limit_clause',
  'sort_specification',
  'sort_direction_asc',
  'sort_direction_desc',
  'list_expr',
  'alias',
  'identifier',
  'member_expr',
  'all_columns',
  'join_expr',
  'join_on_specification',
  'join_using_specification',
  'paren_expr',
  'binary_expr',
  'prefix_op_expr',
  'func_call',
  'func_args',
  'string_literal',
  'number_literal',
  'null_literal',
  'boolean_literal',
  'case_expr',
  'case_when',
  'case_else',
  'between_expr',
  'interval_literal',
  'interval_unit',
  'array_expr',
  'keyword',
]);

const NODE_NAMES: Record<string, string> = {
  cast_expr: 'CAST',
  over_arg: 'window functions (OVER)',
  for_clause: 'FOR UPDATE/SHARE',
  parameter: 'query parameters',
  into_clause: 'SELECT … INTO',
  variable: 'variables',
};

const describeNode = (type: string): string => NODE_NAMES[type] ?? `"${type.replace(/_/g, ' ')}"`;
const tableError = (name: string): AppError => new AppError('analytics/invalid-table', `Access to table '${name}' is not allowed.`);
const functionError = (name: string, table = false): AppError =>
  new AppError('analytics/invalid-function', table ? `Table function '${name}' is not allowed.` : `Function '${name}' is not allowed.`);

const children = (node: object): unknown[] => Object.entries(node).flatMap(([k, v]) => (k === 'range' ? [] : [v]));

/** Every object node below `value` (itself included), depth first, with its depth. */
function walk(value: unknown, visit: (node: Node, depth: number) => void, depth = 0): void {
  if (Array.isArray(value)) {
    for (const v of value) walk(v, visit, depth);
    return;
  }
  if (!value || typeof value !== 'object') return;
  if ('type' in value) visit(value as Node, depth);
  for (const child of children(value)) walk(child, visit, depth + 1);
}

/** The name a function call uses: `f(...)`, or for a parametric aggregate `quantile(0.9)(x)` its inner name. */
export function calledName(call: Node): string {
  const name = call.name as Node;
  if (name.type === 'identifier') return name.name;
  if (name.type === 'func_call') return calledName(name);
  throw invalidQuery(`A function must be called by its plain name, not "${sourceText(name)}".`);
}

const sourceText = (node: Node): string => ('text' in node && typeof node.text === 'string' ? node.text : node.type);

/** The names of every CTE the statement defines. */
function cteNames(statement: QueryStatement): Set<string> {
  const names = new Set<string>();
  walk(statement, (node) => {
    if (node.type === 'common_table_expr') names.add((node.table as Node & { name: string }).name);
  });
  return names;
}

/** Checks one table position of a FROM clause (a name, `db.name`, a table function or a subquery). */
function checkTableRef(node: Node, ctes: Set<string>, source: AnalyticsSource): void {
  switch (node.type) {
    case 'alias':
      checkTableRef(node.expr as Node, ctes, source);
      return;
    case 'join_expr':
      checkTableRef(node.left as Node, ctes, source);
      checkTableRef(node.right as Node, ctes, source);
      return;
    case 'identifier': {
      const table = PUBLIC_TABLES.get(node.name);
      if (ctes.has(node.name) || table?.source === source) return;
      throw tableError(node.name);
    }
    case 'member_expr':
      throw tableError(`${sourceText(node.object as Node)}.${sourceText(node.property as Node)}`);
    case 'func_call':
      throw functionError(calledName(node), true);
    case 'paren_expr':
      if ((node.expr as Node).type === 'select_stmt' || (node.expr as Node).type === 'compound_select_stmt') return;
      checkTableRef(node.expr as Node, ctes, source);
      return;
    default:
      throw invalidQuery(`${describeNode(node.type)} is not allowed in FROM.`);
  }
}

/**
 * Checks a parsed query against what analytics queries allow: only the syntax of ALLOWED_NODES, only the
 * functions of the allow-list, only the public tables of `source` (or the query's own CTEs) in FROM, and a tree
 * at most MAX_DEPTH deep. Throws the 400 naming the first thing refused.
 */
export function validateQuery(statement: QueryStatement, source: AnalyticsSource): void {
  const ctes = cteNames(statement);
  walk(statement, (node, depth) => {
    if (depth > MAX_DEPTH) throw invalidQuery(`The query is nested more than ${MAX_DEPTH} levels deep.`);
    if (!ALLOWED_NODES.has(node.type)) throw invalidQuery(`${describeNode(node.type)} is not allowed in analytics queries.`);
    if (node.type === 'func_call') {
      const name = calledName(node);
      if (!ALLOWED_FUNCTIONS.has(name.toLowerCase())) throw functionError(name);
    }
    if (node.type === 'from_clause') checkTableRef(node.expr as Node, ctes, source);
    if (node.type === 'binary_expr' && typeof node.operator === 'string' && !OPERATORS.has(node.operator)) {
      if (node.operator !== '->') throw invalidQuery(`The operator ${node.operator} is not allowed.`);
    }
  });
}

const OPERATORS = new Set(['=', '==', '!=', '<>', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', '||']);
