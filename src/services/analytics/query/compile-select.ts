import type { SqlNode as Node } from './parse.ts';
import { RESULT_ROWS_MAX, type CompiledQuery, type Ex, type OutputColumn, type SqlDialect } from './compiled.ts';
import { CompileContext, itemsOf, nameOf, newScope, operatorText, type QueryFilter, type Scope } from './compile-context.ts';
import { compileExpr } from './compile-expr.ts';
import { compileFromItem, tablesOf } from './compile-from.ts';
import { projectionFor } from './compile-projection.ts';
import { checkRetention } from './retention.ts';
import { invalidQuery, type QueryStatement } from './parse.ts';

interface Compiled {
  sql: string;
  columns: OutputColumn[];
}

/**
 * Compiles a validated query (validate.ts) into the store's SQL: every public table read through its filtered
 * form (compile-from.ts), every value a parameter, at most RESULT_ROWS_MAX rows. `nowMs` is the query's now().
 */
export function compileQuery(
  statement: QueryStatement,
  text: string,
  dialect: SqlDialect,
  filter: QueryFilter,
  nowMs: number,
): CompiledQuery {
  const ctx = new CompileContext(dialect, filter, nowMs, text);
  ctx.subquery = (node, parent) => compileStatement(ctx, node, parent, 'sub');
  ctx.expr = (scope, node) => compileExpr(ctx, scope, node);
  const { sql, columns } = compileStatement(ctx, statement, null, 'top');
  const withClause = ctx.cteDefs.length > 0 ? `WITH ${ctx.cteDefs.join(', ')} ` : '';
  return { sql: withClause + sql, params: ctx.params, columns };
}

/**
 * `top`: the statement's outermost SELECT (columns named c0, c1… for the runner, LIMIT capped); `branch`: a side
 * of the outermost UNION/EXCEPT (named so too); `sub`: anything else (columns named as the query names them).
 */
type Mode = 'top' | 'branch' | 'sub';

function compileStatement(ctx: CompileContext, node: Node, parent: Scope | null, mode: Mode): Compiled {
  if (node.type === 'select_stmt') return compileSelect(ctx, node, parent, mode);
  if (node.type !== 'compound_select_stmt') throw invalidQuery('Expected a SELECT.');
  const op = operatorText(node.operator).toUpperCase();
  const ops: Record<string, string> = {
    UNION: 'UNION',
    'UNION DISTINCT': 'UNION',
    'UNION ALL': 'UNION ALL',
    EXCEPT: 'EXCEPT',
    'EXCEPT DISTINCT': 'EXCEPT',
    INTERSECT: 'INTERSECT',
    'INTERSECT DISTINCT': 'INTERSECT',
  };
  if (!ops[op]) throw invalidQuery(`${op} is not supported.`);
  const side: Mode = mode === 'sub' ? 'sub' : 'branch';
  const left = compileStatement(ctx, node.left as Node, parent, side);
  const right = compileStatement(ctx, node.right as Node, parent, side);
  if (left.columns.length !== right.columns.length) throw invalidQuery(`The two sides of ${op} select different numbers of columns.`);
  // Each side in its own subquery: its ORDER BY and LIMIT are its own, as in ClickHouse.
  const sql = `SELECT * FROM (${left.sql}) AS ${ctx.fresh('l')} ${ops[op]} SELECT * FROM (${right.sql}) AS ${ctx.fresh('r')}`;
  if (mode !== 'top') return { sql, columns: left.columns };
  return { sql: `SELECT * FROM (${sql}) AS ${ctx.fresh('all')} LIMIT ${RESULT_ROWS_MAX}`, columns: left.columns };
}

const clauseOf = (node: Node, type: string): Node | undefined => (node.clauses as Node[]).find((c) => c.type === type);

function compileWith(ctx: CompileContext, clause: Node): void {
  for (const cte of itemsOf(clause.tables as Node)) {
    const name = nameOf(cte.table as Node);
    if (ctx.ctes.has(name)) throw invalidQuery(`The CTE '${name}' is defined twice.`);
    const body = (cte.expr as Node).type === 'paren_expr' ? ((cte.expr as Node & { expr: Node }).expr as Node) : (cte.expr as Node);
    const compiled = compileStatement(ctx, body, null, 'sub');
    const sqlName = ctx.fresh('cte');
    ctx.cteDefs.push(`${sqlName} AS (${compiled.sql})`);
    ctx.ctes.set(name, { sqlName, columns: compiled.columns });
  }
}

/** The name ClickHouse gives a column: its alias, the column's name, or else the expression's text. */
function columnName(ctx: CompileContext, node: Node): string {
  if (node.type === 'identifier') return node.name;
  if (node.type === 'member_expr' && (node.property as Node).type === 'identifier') return (node.property as Node & { name: string }).name;
  const range = node.range;
  return range ? ctx.text.slice(range[0], range[1]) : node.type;
}

interface SelectItem {
  name: string;
  compile: () => Ex;
}

/** The SELECT list as named items; `*` and `t.*` expand to the sources' columns. Aliases are registered in `scope`. */
function selectItems(ctx: CompileContext, scope: Scope, columns: Node[]): SelectItem[] {
  const items: SelectItem[] = [];
  for (const node of columns) {
    if (node.type === 'all_columns' || (node.type === 'member_expr' && (node.property as Node).type === 'all_columns')) {
      const qualifier = node.type === 'member_expr' ? nameOf(node.object as Node) : null;
      const sources = scope.sources.filter((s) => qualifier === null || s.name === qualifier);
      if (sources.length === 0) throw invalidQuery(qualifier ? `Unknown table '${qualifier}'.` : 'SELECT * needs a FROM clause.');
      for (const s of sources) for (const name of s.star) items.push({ name, compile: () => ({ ...s.columns.get(name)! }) });
      continue;
    }
    const expr = node.type === 'alias' ? (node.expr as Node) : node;
    const name = node.type === 'alias' ? nameOf(node.alias as Node) : columnName(ctx, node);
    let memo: Ex | undefined;
    const compile = (): Ex => {
      if (memo) return memo;
      scope.expanding.add(name);
      try {
        memo = compileExpr(ctx, scope, expr);
      } finally {
        scope.expanding.delete(name);
      }
      return memo;
    };
    if (node.type === 'alias') scope.aliases.set(name, compile);
    items.push({ name, compile });
  }
  return items;
}

/** GROUP BY and ORDER BY items: a number is a position in the SELECT list, anything else an expression. */
function byItem(ctx: CompileContext, scope: Scope, node: Node): string {
  if (node.type === 'number_literal' && Number.isInteger(node.value)) return String(node.value);
  return ctx.dialect.value(compileExpr(ctx, scope, node));
}

function orderBy(ctx: CompileContext, scope: Scope, clause: Node): string {
  const specs = itemsOf(clause.specifications as Node).map((spec) => {
    if (spec.type !== 'sort_specification') return byItem(ctx, scope, spec);
    const dir = (spec.direction as Node | undefined)?.type === 'sort_direction_desc' ? ' DESC' : '';
    return byItem(ctx, scope, spec.expr as Node) + dir;
  });
  return ` ORDER BY ${specs.join(', ')}`;
}

const limitNumber = (node: Node | undefined, what: string): number | null => {
  if (!node) return null;
  if (node.type !== 'number_literal' || !Number.isInteger(node.value) || node.value < 0)
    throw invalidQuery(`${what} must be a whole number.`);
  return node.value;
};

/** LIMIT and OFFSET as literals; the outermost SELECT's LIMIT is added or lowered to RESULT_ROWS_MAX. */
function limit(clause: Node | undefined, top: boolean): string {
  const count = limitNumber(clause?.count as Node | undefined, 'LIMIT');
  const offset = limitNumber(clause?.offset as Node | undefined, 'OFFSET');
  const rows = top ? Math.min(count ?? RESULT_ROWS_MAX, RESULT_ROWS_MAX) : count;
  return (rows === null ? (offset === null ? '' : ' LIMIT -1') : ` LIMIT ${rows}`) + (offset === null ? '' : ` OFFSET ${offset}`);
}

function compileSelect(ctx: CompileContext, node: Node, parent: Scope | null, mode: Mode): Compiled {
  const top = mode === 'top';
  const withClause = clauseOf(node, 'with_clause');
  if (withClause) compileWith(ctx, withClause);
  const scope = newScope(parent);
  const d = ctx.dialect;
  const fromClause = clauseOf(node, 'from_clause');
  const form = fromClause && ctx.filter.forms !== false ? projectionFor(node, new Set(ctx.ctes.keys())) : undefined;
  const from = fromClause ? compileFromItem(ctx, scope, fromClause.expr as Node, null, form) : null;
  const select = clauseOf(node, 'select_clause')!;
  const items = selectItems(ctx, scope, itemsOf(select.columns as Node));
  const compiled = items.map((item) => ({ item, ex: item.compile() }));
  const where = clauseOf(node, 'where_clause');
  if (where) checkRetention(where.expr as Node, scope, tablesOf(scope), ctx.nowMs);
  const whereSql = where ? ` WHERE ${d.cond(compileExpr(ctx, scope, where.expr as Node))}` : '';
  const group = clauseOf(node, 'group_by_clause');
  const groupSql = group
    ? ` GROUP BY ${itemsOf(group.columns as Node)
        .map((n) => byItem(ctx, scope, n))
        .join(', ')}`
    : '';
  const having = clauseOf(node, 'having_clause');
  const havingSql = having ? ` HAVING ${d.cond(compileExpr(ctx, scope, having.expr as Node))}` : '';
  const order = clauseOf(node, 'order_by_clause');
  const orderSql = order ? orderBy(ctx, scope, order) : '';
  const distinct = (select.modifiers as Node[]).some((m) => m.type === 'select_distinct') ? 'DISTINCT ' : '';
  const list = compiled.map(({ item, ex }, i) => `${d.value(ex)} AS ${d.id(mode === 'sub' ? item.name : `c${i}`)}`).join(', ');
  const laterals = scope.laterals.join('');
  const fromSql = from !== null ? ` FROM ${from}${laterals}` : laterals ? ` FROM (SELECT 1) AS ${ctx.fresh('one')}${laterals}` : '';
  const sql = `SELECT ${distinct}${list}${fromSql}${whereSql}${groupSql}${havingSql}${orderSql}${limit(clauseOf(node, 'limit_clause'), top)}`;
  return { sql, columns: compiled.map(({ item, ex }) => ({ name: item.name, type: ex.type, ...(ex.elem ? { elem: ex.elem } : {}) })) };
}
