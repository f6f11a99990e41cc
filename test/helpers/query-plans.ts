import { DatabaseSync } from 'node:sqlite';
import { CompiledQuery, sql } from 'kysely';
import { openStore, type Store } from '../../src/store/store.ts';

/**
 * What the store is asked, and how it plans to answer: statements recorded as the services run them, then
 * EXPLAINed on the same store and checked against the rules of a list that stays flat as its tables grow
 * (docs/performance.md, "Query plans").
 */

/** One statement as the driver receives it: the compiled SQL and its parameters. */
export interface Statement {
  sql: string;
  parameters: readonly unknown[];
}

/**
 * A second store on the database at `url` that records every statement it runs (the store's `onStatement`, Kysely's
 * log of what it sent), so the services run exactly as they do for a request; `take()` returns the statements
 * recorded since the last call.
 */
export function recordingStore(url: string): { store: Store; take(): Statement[] } {
  const statements: Statement[] = [];
  const store = openStore(url, { onStatement: (q) => statements.push({ sql: q.sql, parameters: q.parameters }) });
  return { store, take: () => statements.splice(0) };
}

/** The tables of the store holding at least `min` rows: those whose reads must never walk the whole table. */
export async function bigTables(store: Store, tables: readonly string[], min: number): Promise<Set<string>> {
  const big = new Set<string>();
  for (const table of tables) {
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(store.db);
    if (Number(rows[0].n) >= min) big.add(table);
  }
  return big;
}

/** A node of PostgreSQL's `EXPLAIN (FORMAT JSON)`. */
interface PgNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PgNode[];
}

/** A row of SQLite's `EXPLAIN QUERY PLAN`. */
interface SqliteStep {
  id: number;
  parent: number;
  detail: string;
}

/** The plan of a statement, as text for a failure message, and what in it breaks a rule. */
export interface PlanCheck {
  plan: string;
  problems: string[];
}

/**
 * Explains `statement` on `store` and checks its plan against `big` (the tables with ≥ 100,000 rows):
 * - no read of every row of a big table (PostgreSQL `Seq Scan`; SQLite `SCAN t` without an index);
 * - under a LIMIT (a page), no sort of a big table's rows: an index gives the order, so a page reads its own
 *   rows only (PostgreSQL `Sort` below a `Limit` over a big table's scan; SQLite `USE TEMP B-TREE FOR ORDER BY`
 *   beside a big table's scan or search, in a statement with a LIMIT);
 * - PostgreSQL: no aggregate (a count) over a big table's matching rows unless a LIMIT bounds them;
 * - PostgreSQL: under a LIMIT, no index scan of a big table whose rows are then filtered by a column held equal
 *   (`status = $1`): the owner's rows the filter rejects are read before the page fills, all of them when none match.
 *   SQLite's plan does not show aggregates; the capped count is asserted by the answers instead.
 */
export async function checkPlan(store: Store, statement: Statement, big: ReadonlySet<string>, opts: CheckOptions): Promise<PlanCheck> {
  const check =
    store.caps.dialect === 'postgres' ? await postgresPlan(store, statement, big) : sqlitePlan(statement, big, opts.sqlitePath!);
  // An answer that holds every row of a collection (v1's unpaginated lists) reads all of it, by contract; a list
  // whose filter walk is bounded by what its owner holds says so (Operation.filteredWalk).
  const excused = (p: string) => (opts.wholeAnswer && p.startsWith(EVERY_ROW)) || (opts.filteredWalk && p.startsWith(FILTER_WALK));
  return { ...check, problems: check.problems.filter((p) => !excused(p)) };
}

export interface CheckOptions {
  /** The SQLite database file (on SQLite). */
  sqlitePath?: string;
  /** The statement answers every row of a collection: reading every row of the table is what it must do. */
  wholeAnswer?: boolean;
  /** The statement filters an owner's rows by a column no index holds after the owner: accepted (see Operation). */
  filteredWalk?: boolean;
}

const EVERY_ROW = 'every row:';
const FILTER_WALK = 'filter walk:';

async function postgresPlan(store: Store, statement: Statement, big: ReadonlySet<string>): Promise<PlanCheck> {
  const { rows } = await store.db.executeQuery<{ 'QUERY PLAN': Array<{ Plan: PgNode }> }>(
    CompiledQuery.raw(`explain (format json) ${statement.sql}`, [...statement.parameters]),
  );
  const root = rows[0]['QUERY PLAN'][0].Plan;
  return { plan: JSON.stringify(root, pgPlanKeys, 1), problems: postgresProblems(root, big) };
}

function sqlitePlan(statement: Statement, big: ReadonlySet<string>, path: string): PlanCheck {
  const file = new DatabaseSync(path, { readOnly: true });
  try {
    const steps = file.prepare(`explain query plan ${statement.sql}`).all(...(statement.parameters as never[])) as unknown as SqliteStep[];
    const hasLimit = /\blimit\s+(\?|\d)/i.test(statement.sql); // not the column "limit"
    return { plan: steps.map((s) => `${s.id}<${s.parent} ${s.detail}`).join('\n'), problems: sqliteProblems(steps, big, hasLimit) };
  } finally {
    file.close();
  }
}

/** The members of a PostgreSQL plan worth printing. */
const pgPlanKeys = (key: string, value: unknown) =>
  key === '' ||
  /^\d+$/.test(key) ||
  ['Node Type', 'Relation Name', 'Index Name', 'Plans', 'Sort Key', 'Index Cond', 'Filter', 'Strategy'].includes(key)
    ? value
    : undefined;

/** The big tables a node reads, itself or below it, other than through a LIMIT (whose rows are bounded). */
function bigReads(node: PgNode, big: ReadonlySet<string>): string[] {
  if (node['Node Type'] === 'Limit') return [];
  const own = node['Relation Name'] && big.has(node['Relation Name']) ? [node['Relation Name']] : [];
  return [...own, ...(node.Plans ?? []).flatMap((child) => bigReads(child, big))];
}

function postgresProblems(root: PgNode, big: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const walk = (node: PgNode, underLimit: boolean) => {
    const type = node['Node Type'];
    const relation = node['Relation Name'];
    if (type === 'Seq Scan' && relation && big.has(relation)) problems.push(`${EVERY_ROW} Seq Scan on ${relation}`);
    // An index walked for its order alone (no condition, or one on id: a cursor) while a filter picks the owner's
    // rows (`api_id = $1`): every row the filter rejects before the page fills is read, however few the estimate says.
    const bounded = [...(node['Index Cond'] ?? '').matchAll(/(\w+) (=|<|>|<=|>=) /g)].some(
      ([, column, op]) => column !== 'id' || op === '=',
    );
    if (/Index (Only )?Scan/.test(type) && relation && big.has(relation) && / = /.test(node.Filter ?? '') && !bounded)
      problems.push(`walks ${node['Index Name']} and filters ${relation} rows by ${node.Filter}: no index cond selects them`);
    // A page read through an index that selects the owner's rows, then filtered by a column held equal (`status`):
    // every row of the owner the filter rejects is read before the page fills (all of them when none match).
    if (underLimit && /Index (Only )?Scan/.test(type) && relation && big.has(relation) && / = /.test(node.Filter ?? '') && bounded)
      problems.push(`${FILTER_WALK} reads ${node['Index Name']} and filters ${relation} rows by ${node.Filter} for a page`);
    if (type === 'Sort' && underLimit) {
      for (const table of new Set(bigReads(node, big))) problems.push(`Sort of ${table} rows for a LIMIT: no index gives the order`);
    }
    if (type === 'Aggregate') {
      for (const table of new Set(bigReads(node, big))) problems.push(`Aggregate over every matching row of ${table}: no LIMIT bounds it`);
    }
    for (const child of node.Plans ?? []) walk(child, underLimit || type === 'Limit');
  };
  walk(root, false);
  return problems;
}

/** `SCAN t`, `SCAN t AS a`, `SEARCH t USING …`: the table a step reads, and whether every row of it. */
function sqliteRead(detail: string): { table: string; everyRow: boolean } | undefined {
  const m = /^(SCAN|SEARCH) (\S+)(?: AS \S+)?(.*)$/.exec(detail);
  if (!m) return undefined;
  return { table: m[2], everyRow: m[1] === 'SCAN' && !/\bUSING (COVERING )?INDEX\b|\bUSING INTEGER PRIMARY KEY\b/.test(m[3]) };
}

function sqliteProblems(steps: SqliteStep[], big: ReadonlySet<string>, hasLimit: boolean): string[] {
  const problems: string[] = [];
  for (const step of steps) {
    const read = sqliteRead(step.detail);
    if (read?.everyRow && big.has(read.table)) problems.push(`${EVERY_ROW} SCAN ${read.table} without an index`);
    if (hasLimit && /^USE TEMP B-TREE FOR .*ORDER BY/.test(step.detail)) {
      const tables = steps
        .filter((s) => s.parent === step.parent)
        .map((s) => sqliteRead(s.detail)?.table)
        .filter((t): t is string => t !== undefined && big.has(t));
      for (const table of new Set(tables)) problems.push(`${step.detail} over ${table} rows for a LIMIT: no index gives the order`);
    }
  }
  return problems;
}
