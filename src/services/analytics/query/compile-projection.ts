import type { SqlNode as Node } from './parse.ts';
import { PUBLIC_TABLES, type PublicTable } from './catalog.ts';
import { itemsOf, nameOf } from './compile-context.ts';

/*
 * Which physical form of a roll-up a SELECT reads. A roll-up's coarser forms (catalog.ts `forms`: the same sums
 * over fewer group columns) answer a query exactly as the roll-up itself would when the query only asks what
 * summing rows together keeps: the SELECT reads that one table (no join, no subquery), groups or aggregates, and
 *   - names only columns the form has,
 *   - reads a summed column (count, spent_credits, latency_sum) only as the argument of sum() or sumIf()'s first,
 *   - uses no aggregate that counts rows or sees each one (count, countIf, avg, groupArray, quantile, arrayJoin…):
 *     min, max, any, uniq, uniqExact and groupUniqArray of group columns see the same values in any form.
 * Anything this does not recognise keeps the roll-up itself: a wrong choice would change an answer, a missed one
 * only costs time.
 */

/** Aggregates whose result is the same over a form's rows as over the roll-up's, when given group columns. */
const SAME_OVER_GROUPS = new Set(['min', 'max', 'any', 'uniq', 'uniqexact', 'groupuniqarray']);
/** Every aggregate (and row-multiplying function) of the allow-list; the others are per-row functions. */
const AGGREGATES = new Set([...SAME_OVER_GROUPS, 'sum', 'sumif', 'count', 'countif', 'avg', 'grouparray', 'quantile', 'arrayjoin']);
/** Node types that hold nothing but their children (operators, literals, lists, CASE, INTERVAL). */
const PLAIN = new Set([
  'binary_expr',
  'unary_expr',
  'paren_expr',
  'list_expr',
  'func_args',
  'between_expr',
  'case_expr',
  'case_when',
  'case_else',
  'interval_literal',
  'interval_unit',
  'keyword',
  'string_literal',
  'number_literal',
  'boolean_literal',
  'null_literal',
  'sort_specification',
  'sort_direction_asc',
  'sort_direction_desc',
]);

class NotProjectable extends Error {}

interface Walk {
  table: PublicTable;
  /** The names the FROM item goes by (its alias, or the table's name). */
  qualifier: string;
  aliases: ReadonlySet<string>;
  /** Physical columns named. */
  used: Set<string>;
  aggregated: boolean;
}

function column(w: Walk, name: string, asSummed: boolean): void {
  const col = w.table.columns[name];
  if (!col) throw new NotProjectable();
  if ((w.table.summed?.has(name) ?? false) !== asSummed) throw new NotProjectable();
  w.used.add(col.physical);
}

/** A column reference: `name` (a SELECT alias wins, as in ClickHouse, except inside its own expression) or `t.name`. */
function reference(w: Walk, node: Node, asSummed: boolean, self: string | null): void {
  if (node.type === 'identifier') {
    const alias = !asSummed && w.aliases.has(node.name) && node.name !== self;
    if (!alias) column(w, node.name, asSummed);
  } else if (node.type === 'member_expr' && (node.object as Node).type === 'identifier' && (node.property as Node).type === 'identifier') {
    if (nameOf(node.object as Node) !== w.qualifier) throw new NotProjectable();
    column(w, (node.property as Node).name, asSummed);
  } else throw new NotProjectable();
}

/**
 * Whether `node` has fields set beyond these (a call's DISTINCT, FILTER, OVER, ORDER BY… change what it sees; the
 * parser leaves an absent one undefined).
 */
const hasMore = (node: Node | undefined, fields: readonly string[]): boolean =>
  node !== undefined && Object.entries(node).some(([f, v]) => v != null && f !== 'type' && f !== 'range' && !fields.includes(f));

function call(w: Walk, node: Node, self: string | null): void {
  if ((node.name as Node).type !== 'identifier') throw new NotProjectable();
  const name = nameOf(node.name as Node).toLowerCase();
  const argsNode = (node.args as Node | undefined)?.expr as Node | undefined;
  if (hasMore(node, ['name', 'args']) || hasMore(argsNode, ['args'])) throw new NotProjectable();
  const args = argsNode?.args ? itemsOf(argsNode.args as Node) : [];
  if (!AGGREGATES.has(name)) {
    for (const a of args) visit(w, a, self);
    return;
  }
  w.aggregated = true;
  if (SAME_OVER_GROUPS.has(name)) for (const a of args) visit(w, a, self);
  else if (name === 'sum' && args.length === 1) reference(w, args[0], true, self);
  else if (name === 'sumif' && args.length === 2) {
    reference(w, args[0], true, self);
    visit(w, args[1], self);
  } else throw new NotProjectable();
}

function visit(w: Walk, node: Node, self: string | null): void {
  if (node.type === 'identifier' || node.type === 'member_expr') reference(w, node, false, self);
  else if (node.type === 'func_call') call(w, node, self);
  else if (node.type === 'alias') visit(w, node.expr as Node, nameOf(node.alias as Node));
  else if (PLAIN.has(node.type)) visitChildren(w, node, self);
  else throw new NotProjectable();
}

function visitChildren(w: Walk, node: Node, self: string | null): void {
  for (const [field, value] of Object.entries(node)) {
    if (field === 'type' || field === 'range' || value === null || typeof value !== 'object') continue;
    for (const child of Array.isArray(value) ? value : [value]) if (child && typeof child.type === 'string') visit(w, child, self);
  }
}

/** The public roll-up a FROM item reads by name (`t` or `t AS x`), with the name it goes by; null for anything else. */
function singleTable(from: Node, cteNames: ReadonlySet<string>): { table: PublicTable; qualifier: string } | null {
  const inner = from.type === 'alias' ? (from.expr as Node) : from;
  if (inner.type !== 'identifier') return null;
  const name = nameOf(inner);
  const table = PUBLIC_TABLES.get(name);
  if (!table?.forms || cteNames.has(name)) return null;
  return { table, qualifier: from.type === 'alias' ? nameOf(from.alias as Node) : name };
}

/**
 * The physical table a SELECT should read for its FROM item: the coarsest form of the roll-up that answers it
 * exactly, or undefined (read the roll-up itself).
 */
export function projectionFor(select: Node, cteNames: ReadonlySet<string>): string | undefined {
  const clauses = select.clauses as Node[];
  const from = clauses.find((c) => c.type === 'from_clause');
  const named = from && singleTable(from.expr as Node, cteNames);
  if (!named) return undefined;
  const columns = itemsOf(clauses.find((c) => c.type === 'select_clause')!.columns as Node);
  const aliases = new Set(columns.filter((c) => c.type === 'alias').map((c) => nameOf(c.alias as Node)));
  const w: Walk = { ...named, aliases, used: new Set(), aggregated: false };
  try {
    for (const clause of clauses) {
      if (clause.type === 'from_clause' || clause.type === 'limit_clause') continue;
      if (clause.type === 'select_clause') for (const c of columns) visit(w, c, null);
      else if (clause.type === 'where_clause' || clause.type === 'having_clause') visit(w, clause.expr as Node, null);
      else if (clause.type === 'group_by_clause') {
        w.aggregated = true;
        for (const c of itemsOf(clause.columns as Node)) visit(w, c, null);
      } else if (clause.type === 'order_by_clause') for (const c of itemsOf(clause.specifications as Node)) visit(w, c, null);
      else throw new NotProjectable();
    }
  } catch (err) {
    if (err instanceof NotProjectable) return undefined;
    throw err;
  }
  if (!w.aggregated) return undefined;
  // Forms are listed coarsest first.
  return named.table.forms?.find((f) => [...w.used].every((c) => f.columns.has(c)))?.physical;
}
