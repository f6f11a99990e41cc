import type { SqlNode as Node } from './parse.ts';
import { PUBLIC_TABLES, SCOPE_COLUMN, type PublicTable } from './catalog.ts';
import type { OutputColumn } from './compiled.ts';
import { nameOf, operatorText, type CompileContext, type Scope, type ScopeColumn, type ScopeSource } from './compile-context.ts';
import { invalidQuery } from './parse.ts';

/** Public names that are second names of another column (left out of `*`). */
const SECOND_NAMES = new Set(['api_id', 'apiId', 'externalId']);

/**
 * A public table as the store reads it: its physical table, filtered to the caller's workspace and to the APIs or
 * namespaces the caller may read, whatever else the query says. Every reference to a public table, in every
 * subquery, CTE and branch, goes through here.
 */
function baseTable(ctx: CompileContext, physical: string): string {
  const { workspaceId, scopeIds, source } = ctx.filter;
  const conditions = [`workspace_id = ${ctx.bind(workspaceId, 'string')}`];
  if (scopeIds) {
    const ids = scopeIds.map((id) => ctx.bind(id, 'string'));
    conditions.push(ids.length > 0 ? `${SCOPE_COLUMN[source]} IN (${ids.join(', ')})` : '1 = 0');
  }
  if (ctx.dialect.rowCheck) conditions.push(ctx.dialect.rowCheck);
  return `(SELECT * FROM ${physical} WHERE ${conditions.join(' AND ')})`;
}

const sourceOf = (name: string, columns: Array<[string, ScopeColumn]>, star: string[]): ScopeSource => ({
  name,
  columns: new Map(columns),
  star,
});

const outputSource = (ctx: CompileContext, name: string, columns: OutputColumn[]): ScopeSource =>
  sourceOf(
    name,
    columns.map((c) => [c.name, { sql: `${ctx.dialect.id(name)}.${ctx.dialect.id(c.name)}`, type: c.type, elem: c.elem }]),
    columns.map((c) => c.name),
  );

/** A named FROM item: one of the query's CTEs, or a public table (read from `form`, one of its forms, when given). */
function namedItem(ctx: CompileContext, scope: Scope, name: string, alias: string | null, form?: string): string {
  const as = alias ?? name;
  const d = ctx.dialect;
  const cte = ctx.ctes.get(name);
  if (cte) {
    scope.sources.push(outputSource(ctx, as, cte.columns));
    return `${cte.sqlName} AS ${d.id(as)}`;
  }
  const table = PUBLIC_TABLES.get(name);
  if (!table || table.source !== ctx.filter.source) throw invalidQuery(`Unknown table '${name}'.`);
  const columns = Object.entries(table.columns).map(([n, c]): [string, ScopeColumn] => [
    n,
    { sql: `${d.id(as)}.${d.id(c.physical)}`, type: c.type, elem: c.type === 'array' ? 'string' : undefined },
  ]);
  scope.sources.push({
    ...sourceOf(
      as,
      columns,
      Object.keys(table.columns).filter((n) => !SECOND_NAMES.has(n)),
    ),
    table,
  });
  return `${baseTable(ctx, form ?? table.physical)} AS ${d.id(as)}`;
}

const JOINS: Record<string, string> = {
  ',': 'CROSS JOIN',
  JOIN: 'JOIN',
  'INNER JOIN': 'JOIN',
  'CROSS JOIN': 'CROSS JOIN',
  'LEFT JOIN': 'LEFT JOIN',
  'LEFT OUTER JOIN': 'LEFT JOIN',
};

/**
 * Compiles a FROM clause's item into `scope`: tables become their filtered reads (baseTable), subqueries are
 * compiled with their own scope; joins take ON conditions (compiled once both sides are in scope). `form`: the
 * physical form a lone roll-up is read from (compile-projection.ts).
 */
export function compileFromItem(ctx: CompileContext, scope: Scope, node: Node, alias: string | null = null, form?: string): string {
  switch (node.type) {
    case 'identifier':
      return namedItem(ctx, scope, nameOf(node), alias, form);
    case 'alias':
      return compileFromItem(ctx, scope, node.expr as Node, nameOf(node.alias as Node), form);
    case 'paren_expr': {
      const inner = node.expr as Node;
      if (inner.type !== 'select_stmt' && inner.type !== 'compound_select_stmt') return compileFromItem(ctx, scope, inner, alias);
      const sub = ctx.subquery(inner, null);
      const as = alias ?? ctx.fresh('sub');
      scope.sources.push(outputSource(ctx, as, sub.columns));
      return `(${sub.sql}) AS ${ctx.dialect.id(as)}`;
    }
    case 'join_expr':
      return compileJoin(ctx, scope, node);
    default:
      throw invalidQuery(`"${node.type.replace(/_/g, ' ')}" is not allowed in FROM.`);
  }
}

function compileJoin(ctx: CompileContext, scope: Scope, node: Node): string {
  const op = JOINS[operatorText(node.operator).toUpperCase()];
  if (!op) throw invalidQuery(`${operatorText(node.operator)} is not supported; use JOIN, LEFT JOIN or CROSS JOIN.`);
  const left = compileFromItem(ctx, scope, node.left as Node);
  const right = compileFromItem(ctx, scope, node.right as Node);
  const spec = node.specification as Node | undefined;
  if (!spec) {
    if (op !== 'CROSS JOIN') throw invalidQuery(`${op} needs an ON condition.`);
    return `${left} CROSS JOIN ${right}`;
  }
  if (spec.type !== 'join_on_specification') throw invalidQuery('JOIN … USING is not supported; use ON.');
  if (op === 'CROSS JOIN') throw invalidQuery('CROSS JOIN takes no ON condition.');
  const on = ctx.expr(scope, spec.expr as Node);
  return `${left} ${op} ${right} ON ${ctx.dialect.cond(on)}`;
}

/** The public tables read directly by a SELECT's FROM (for the retention check). */
export const tablesOf = (scope: Scope): PublicTable[] => scope.sources.flatMap((s) => (s.table ? [s.table] : []));
