import type { SqlNode as Node } from './parse.ts';
import type { ValueType } from './catalog.ts';
import type { Ex } from './compiled.ts';
import { itemsOf, nameOf, operatorText, resolveColumn, type CompileContext, type Scope } from './compile-context.ts';
import { compileCall } from './compile-functions.ts';
import { arithmetic, comparable, INTERVAL_UNITS } from './compile-dates.ts';
import { invalidQuery } from './parse.ts';

const isNumeric = (t: ValueType): boolean => t === 'int' || t === 'float' || t === 'bool' || t === 'any' || t === 'null';

/** Compiles one expression of a query in `scope`. */
export function compileExpr(ctx: CompileContext, scope: Scope, node: Node): Ex {
  switch (node.type) {
    case 'string_literal':
      return ctx.literal(node.value, 'string');
    case 'number_literal':
      return ctx.literal(
        node.value,
        Number.isInteger(node.value) && ![...node.text].some((ch) => ch === '.' || ch === 'e' || ch === 'E') ? 'int' : 'float',
      );
    case 'boolean_literal':
      return ctx.literal(node.value ? 1 : 0, 'bool');
    case 'null_literal':
      return { sql: 'NULL', type: 'null', constant: true };
    case 'identifier':
      return resolveColumn(scope, null, nameOf(node));
    case 'member_expr':
      return resolveColumn(scope, nameOf(node.object as Node), nameOf(node.property as Node));
    case 'paren_expr':
      return compileParen(ctx, scope, node.expr as Node);
    case 'binary_expr':
      return compileBinary(ctx, scope, node);
    case 'prefix_op_expr':
      return compilePrefix(ctx, scope, node);
    case 'between_expr':
      return compileBetween(ctx, scope, node);
    case 'case_expr':
      return compileCase(ctx, scope, node);
    case 'interval_literal':
      return compileInterval(ctx, scope, node);
    case 'array_expr':
      return arrayLiteral(ctx, scope, itemsOf(node.expr as Node));
    case 'func_call':
      return compileCall(ctx, scope, node, (n, inScope) => compileExpr(ctx, inScope ?? scope, n));
    default:
      throw invalidQuery(`"${node.type.replace(/_/g, ' ')}" is not allowed here.`);
  }
}

function compileParen(ctx: CompileContext, scope: Scope, inner: Node): Ex {
  if (inner.type === 'select_stmt' || inner.type === 'compound_select_stmt') {
    const sub = ctx.subquery(inner, scope);
    if (sub.columns.length !== 1) throw invalidQuery('A subquery used as a value must select one column.');
    return { sql: `(${sub.sql})`, type: sub.columns[0].type };
  }
  if (inner.type === 'list_expr') throw invalidQuery('Tuples are not supported.');
  const e = compileExpr(ctx, scope, inner);
  return { ...e, sql: `(${e.sql})` };
}

/** An array literal `['a', 'b']` (of text, as tags are). */
export function arrayLiteral(ctx: CompileContext, scope: Scope, items: Node[]): Ex {
  const compiled = items.map((n) => compileExpr(ctx, scope, n));
  return {
    sql: ctx.dialect.arrayOf(compiled.map((e) => ctx.dialect.castText(ctx.dialect.value(e)))),
    type: 'array',
    elem: 'string',
    constant: true,
  };
}

const COMPARISONS: Record<string, string> = { '=': '=', '==': '=', '!=': '<>', '<>': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };

function compileBinary(ctx: CompileContext, scope: Scope, node: Node): Ex {
  const op = operatorText(node.operator).toUpperCase();
  if (op === 'IN' || op === 'NOT IN') return compileIn(ctx, scope, node.left as Node, node.right as Node, op === 'NOT IN');
  const left = compileExpr(ctx, scope, node.left as Node);
  const right = compileExpr(ctx, scope, node.right as Node);
  const d = ctx.dialect;
  const constant = Boolean(left.constant && right.constant);
  if (op === 'AND' || op === 'OR') return { sql: `(${d.cond(left)} ${op} ${d.cond(right)})`, type: 'int', cond: true, constant };
  if (op in COMPARISONS) {
    const [l, r] = comparable(ctx, left, right);
    return { sql: `(${d.value(l)} ${COMPARISONS[op]} ${d.value(r)})`, type: 'int', cond: true, constant };
  }
  if (op === 'LIKE' || op === 'NOT LIKE') return { sql: `(${d.value(left)} ${op} ${d.value(right)})`, type: 'int', cond: true, constant };
  if (op === 'IS' || op === 'IS NOT') {
    if (right.type !== 'null') throw invalidQuery(`${op} is only allowed with NULL.`);
    return { sql: `(${d.value(left)} ${op} NULL)`, type: 'int', cond: true, constant };
  }
  if (op === '||') return { sql: d.concat([d.value(left), d.value(right)]), type: 'string', constant };
  if (['+', '-', '*', '/', '%'].includes(op)) return arithmetic(ctx, op, left, right);
  throw invalidQuery(`The operator ${op} is not allowed.`);
}

function compileIn(ctx: CompileContext, scope: Scope, leftNode: Node, rightNode: Node, negated: boolean): Ex {
  const left = compileExpr(ctx, scope, leftNode);
  const d = ctx.dialect;
  const op = negated ? 'NOT IN' : 'IN';
  const inner = rightNode.type === 'paren_expr' ? (rightNode.expr as Node) : rightNode;
  if (inner.type === 'select_stmt' || inner.type === 'compound_select_stmt') {
    const sub = ctx.subquery(inner, scope);
    return { sql: `(${d.value(left)} ${op} (${sub.sql}))`, type: 'int', cond: true };
  }
  if (rightNode.type !== 'paren_expr' && rightNode.type !== 'array_expr') {
    throw invalidQuery('IN takes a list in parentheses or a subquery; table-backed IN is not supported.');
  }
  const items = itemsOf(inner).map((n) => comparable(ctx, left, compileExpr(ctx, scope, n))[1]);
  if (items.length === 0) return { sql: negated ? '(1 = 1)' : '(1 = 0)', type: 'int', cond: true };
  const [l] = comparable(ctx, left, items[0]);
  return { sql: `(${d.value(l)} ${op} (${items.map((e) => d.value(e)).join(', ')}))`, type: 'int', cond: true };
}

function compilePrefix(ctx: CompileContext, scope: Scope, node: Node): Ex {
  const op = operatorText(node.operator).toUpperCase();
  const d = ctx.dialect;
  if (op === 'EXISTS') {
    const inner = (node.expr as Node & { expr: Node }).expr;
    return { sql: `(EXISTS (${ctx.subquery(inner, scope).sql}))`, type: 'int', cond: true };
  }
  const e = compileExpr(ctx, scope, node.expr as Node);
  if (op === 'NOT') return { sql: `(NOT ${d.cond(e)})`, type: 'int', cond: true, constant: e.constant };
  if (op === '-' && isNumeric(e.type)) return { sql: `(-${d.value(e)})`, type: e.type, constant: e.constant };
  if (op === '+' && isNumeric(e.type)) return e;
  throw invalidQuery(`The operator ${op} is not allowed here.`);
}

function compileBetween(ctx: CompileContext, scope: Scope, node: Node): Ex {
  const left = compileExpr(ctx, scope, node.left as Node);
  const [l, begin] = comparable(ctx, left, compileExpr(ctx, scope, node.begin as Node));
  const [, end] = comparable(ctx, left, compileExpr(ctx, scope, node.end as Node));
  const not = operatorText(node.betweenKw).toUpperCase().includes('NOT') ? 'NOT ' : '';
  const d = ctx.dialect;
  return { sql: `(${d.value(l)} ${not}BETWEEN ${d.value(begin)} AND ${d.value(end)})`, type: 'int', cond: true };
}

function compileCase(ctx: CompileContext, scope: Scope, node: Node): Ex {
  const d = ctx.dialect;
  const subject = node.expr ? compileExpr(ctx, scope, node.expr as Node) : null;
  let type: ValueType = 'null';
  const parts = (node.clauses as Node[]).map((clause) => {
    const result = compileExpr(ctx, scope, clause.result as Node);
    if (type === 'null' || (type === 'int' && result.type === 'float')) type = result.type;
    if (clause.type === 'case_else') return `ELSE ${d.value(result)}`;
    const cond = compileExpr(ctx, scope, clause.condition as Node);
    const when = subject ? d.value(cond) : d.cond(cond);
    return `WHEN ${when} THEN ${d.value(result)}`;
  });
  return { sql: `(CASE ${subject ? `${d.value(subject)} ` : ''}${parts.join(' ')} END)`, type };
}

function compileInterval(ctx: CompileContext, scope: Scope, node: Node): Ex {
  const unitName = operatorText((node.unit as { unitKw: unknown }).unitKw).toUpperCase();
  const unit = INTERVAL_UNITS[unitName];
  if (!unit) throw invalidQuery(`The interval unit ${unitName} is not supported.`);
  const count = compileExpr(ctx, scope, node.value as Node);
  if (!isNumeric(count.type)) throw invalidQuery('An INTERVAL counts a number of units.');
  return { sql: ctx.dialect.value(count), type: 'interval', unit, constant: count.constant };
}
