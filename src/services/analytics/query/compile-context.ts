import type { SqlNode as Node } from './parse.ts';
import type { AnalyticsSource, PublicTable, ValueType } from './catalog.ts';
import type { Ex, OutputColumn, SqlDialect } from './compiled.ts';
import { invalidQuery } from './parse.ts';

/** A column a SELECT can name: the SQL that reads it from one of its FROM items. */
export interface ScopeColumn {
  sql: string;
  type: ValueType;
  elem?: ValueType;
}

/** One FROM item of a SELECT: the name that qualifies its columns, and its columns by name (in order). */
export interface ScopeSource {
  name: string;
  columns: Map<string, ScopeColumn>;
  /** The columns `*` expands to (a base table's aliases such as `apiId` are left out). */
  star: string[];
  /** The public table it reads, when it is one. */
  table?: PublicTable;
}

/** What a SELECT's expressions can name: its FROM items, its SELECT aliases, and the enclosing SELECT's scope. */
export interface Scope {
  sources: ScopeSource[];
  aliases: Map<string, () => Ex>;
  /** The aliases being compiled (an alias never refers to itself: ClickHouse then reads the column). */
  expanding: Set<string>;
  /** Lambda parameters (arrayFilter) in reach. */
  lambdas: Map<string, ScopeColumn>;
  parent: Scope | null;
  /** FROM items arrayJoin adds to this SELECT. */
  laterals: string[];
}

export const newScope = (parent: Scope | null): Scope => ({
  sources: [],
  aliases: new Map(),
  expanding: new Set(),
  lambdas: new Map(parent?.lambdas ?? []),
  parent,
  laterals: [],
});

/** Whom a query reads for: the caller's workspace, and the ids of the scope column it may read (null: all). */
export interface QueryFilter {
  workspaceId: string;
  source: AnalyticsSource;
  scopeIds: readonly string[] | null;
  /** false: every roll-up is read itself, never a coarser form (to compare the two). Default true. */
  forms?: boolean;
}

/** The state of one compilation: the dialect, the bound parameters, the query's "now", CTEs and fresh names. */
export class CompileContext {
  readonly dialect: SqlDialect;
  readonly filter: QueryFilter;
  readonly nowMs: number;
  readonly params: unknown[] = [];
  /** The query's text (an unnamed column is named by its expression's text). */
  readonly text: string;
  /** CTEs compiled so far, by the query's name for them: their name in the compiled SQL and their columns. */
  readonly ctes = new Map<string, { sqlName: string; columns: OutputColumn[] }>();
  /** The compiled CTEs, `name AS (…)`, put in front of the statement. */
  readonly cteDefs: string[] = [];
  private names = 0;
  private bound = new Map<string, string>();
  private keys = new Map<string, string>();
  private uses = new Map<string, number>();
  /** Compiles an expression in a scope (set by compile-expr.ts' user). */
  expr: (scope: Scope, node: Node) => Ex = () => {
    throw new Error('no expression compiler');
  };
  /** Compiles a subquery in the scope of the SELECT it appears in (set by compile-select.ts). */
  subquery: (node: Node, parent: Scope | null) => { sql: string; columns: OutputColumn[] } = () => {
    throw new Error('no subquery compiler');
  };

  constructor(dialect: SqlDialect, filter: QueryFilter, nowMs: number, text: string) {
    this.dialect = dialect;
    this.text = text;
    this.filter = filter;
    this.nowMs = nowMs;
  }

  /**
   * Binds a value; returns its placeholder. An equal value of the same type reuses its placeholder, so an
   * expression written twice (in SELECT and GROUP BY) compiles to the same SQL, as PostgreSQL's grouping needs.
   */
  bind(value: unknown, type: ValueType): string {
    const key = `${type}:${typeof value}:${String(value)}`;
    const known = this.bound.get(key);
    if (known) {
      this.uses.set(known, (this.uses.get(known) ?? 1) + 1);
      return known;
    }
    this.params.push(value);
    const placeholder = this.dialect.param(this.params.length, type);
    this.bound.set(key, placeholder);
    this.keys.set(placeholder, key);
    return placeholder;
  }

  /**
   * Takes back a literal just bound and not used elsewhere (a text read as a time at compile time is bound as
   * the time instead): PostgreSQL refuses a statement with a parameter it never sees.
   */
  release(e: Ex): void {
    const last = this.dialect.param(this.params.length, e.type);
    if (e.sql !== last || (this.uses.get(last) ?? 1) > 1) return;
    this.params.pop();
    this.bound.delete(this.keys.get(last)!);
    this.keys.delete(last);
  }

  /** A bound literal as an expression. */
  literal(value: unknown, type: ValueType): Ex {
    return { sql: this.bind(value, type), type, constant: true, literal: value };
  }

  /** A name no user identifier can take (user names are always quoted and used as written). */
  fresh(prefix: string): string {
    this.names += 1;
    return `kh_${prefix}${this.names}`;
  }
}

/** An identifier's name (its text without quotes). */
export const nameOf = (node: Node): string => {
  if (node.type !== 'identifier') throw invalidQuery(`Expected a name, found "${node.type.replace(/_/g, ' ')}".`);
  if (node.name.includes('\u0000')) throw invalidQuery('Names may not contain NUL.');
  return node.name;
};

/** A keyword operator's text: `NOT IN`, `AND`…; a symbol stays as it is. */
export function operatorText(op: unknown): string {
  if (typeof op === 'string') return op;
  const parts = Array.isArray(op) ? op : [op];
  return parts.map((k: { name?: string }) => k.name ?? '').join(' ');
}

/** The nodes of a `list_expr` (or the one node when it is not a list). */
export const itemsOf = (node: Node): Node[] => (node.type === 'list_expr' ? (node.items as Node[]) : [node]);

/** Looks a column up through the scopes, nearest first; an alias of the SELECT wins over a column, as in ClickHouse. */
export function resolveColumn(scope: Scope, qualifier: string | null, name: string): Ex {
  if (qualifier === null) {
    const lambda = scope.lambdas.get(name);
    if (lambda) return { sql: lambda.sql, type: lambda.type };
  }
  for (let s: Scope | null = scope; s; s = s.parent) {
    if (qualifier === null && s === scope) {
      const alias = s.aliases.get(name);
      if (alias && !s.expanding.has(name)) return alias();
    }
    const found = findInSources(s.sources, qualifier, name);
    if (found) return found;
  }
  const shown = qualifier === null ? name : `${qualifier}.${name}`;
  throw invalidQuery(`Unknown column '${shown}'.`);
}

function findInSources(sources: ScopeSource[], qualifier: string | null, name: string): Ex | null {
  const matches = sources.filter((src) => (qualifier === null || src.name === qualifier) && src.columns.has(name));
  if (matches.length > 1) throw invalidQuery(`Column '${name}' is ambiguous: qualify it with its table.`);
  const column = matches[0]?.columns.get(name);
  return column ? { sql: column.sql, type: column.type, ...(column.elem ? { elem: column.elem } : {}) } : null;
}
