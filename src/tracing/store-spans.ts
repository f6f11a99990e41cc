import { context, type Span, SpanKind, trace, type Tracer } from '@opentelemetry/api';
import {
  AliasNode,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type OperationNode,
  type QueryCompiler,
  type QueryResult,
  TableNode,
  type TransactionSettings,
} from 'kysely';
import { markFailed } from './span-errors.ts';

/**
 * `dialect` with a CLIENT span per statement: named by its operation and table (`select keys`, `insert
 * audit_logs`), with `db.system`, `db.operation.name` and `db.collection.name`; never the SQL text or a value.
 * Transaction control is a statement too (`begin`, `commit`, `rollback`). Only statements run inside a recorded
 * span (a request's, a job's) get one: the background loops' (change feed, analytics flushes) would each be a
 * trace of their own, every second.
 */
export function tracedDialect(dialect: Dialect, system: 'sqlite' | 'postgresql', tracer: Tracer): Dialect {
  const spans = new StatementSpans(tracer, system);
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new TracedDriver(dialect.createDriver(), spans),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  };
}

/** The operation and table of a statement, from Kysely's query tree; for raw SQL, from its text (rawName). */
export function statementName(query: CompiledQuery): { operation: string; table?: string } {
  const node = query.query as OperationNode & Record<string, unknown>;
  switch (node.kind) {
    case 'SelectQueryNode':
      return { operation: 'select', table: tableName((node.from as { froms?: OperationNode[] } | undefined)?.froms?.[0]) };
    case 'InsertQueryNode':
      return { operation: 'insert', table: tableName(node.into as OperationNode | undefined) };
    case 'UpdateQueryNode':
      return { operation: 'update', table: tableName(node.table as OperationNode | undefined) };
    case 'DeleteQueryNode':
      return { operation: 'delete', table: tableName((node.from as { froms?: OperationNode[] }).froms?.[0]) };
    default:
      return rawName(query.sql);
  }
}

/** Names of raw statements by text: the hot paths' few texts are looked at once (bounded: bulk texts vary by size). */
const rawNames = new Map<string, { operation: string; table?: string }>();

/**
 * A raw statement's operation (its first word; after WITH, the first SELECT, INSERT, UPDATE or DELETE outside the
 * common table expressions) and table (after INSERT INTO or UPDATE, else after the first FROM), read from the words
 * outside parentheses, string literals and comments: only identifiers and keywords, never a value. A statement that
 * only reads a CTE of its own (`with g as (…), w1 as (insert into keys …) select held from g`) is named by the first
 * CTE that writes.
 */
export function rawName(sql: string): { operation: string; table?: string } {
  let name = rawNames.get(sql);
  if (name) return name;
  const words: Array<{ word: string; depth: number }> = [];
  let depth = 0;
  for (const [token] of sql.matchAll(/'(?:[^']|'')*'|--[^\n]*|\/\*[\s\S]*?\*\/|[()]|"[A-Za-z_][A-Za-z0-9_]*"|[A-Za-z_][A-Za-z0-9_]*/g)) {
    if (token === '(') depth++;
    else if (token === ')') depth--;
    else if (depth <= 1 && /^["A-Za-z_]/.test(token)) words.push({ word: token.replaceAll('"', '').toLowerCase(), depth });
  }
  const at = (d: number) => words.filter((w) => w.depth === d).map((w) => w.word);
  const top = at(0);
  name = nameOf(
    top[0] === 'with'
      ? top.slice(
          Math.max(
            0,
            top.findIndex((w) => /^(select|insert|update|delete)$/.test(w)),
          ),
        )
      : top,
  );
  const cte = name.table !== undefined && top[0] === 'with' && top.some((w, i) => w === name?.table && top[i + 1] === 'as');
  const inner = at(1);
  const write = cte ? inner.findIndex((w) => /^(insert|update|delete)$/.test(w)) : -1;
  if (write >= 0) name = nameOf(inner.slice(write));
  if (rawNames.size >= 256) rawNames.clear();
  rawNames.set(sql, name);
  return name;
}

/** The operation (first word) and table of a statement's words. */
function nameOf(words: string[]): { operation: string; table?: string } {
  const operation = words[0] ?? 'statement';
  const after = (word: string) => {
    const i = words.indexOf(word);
    return i < 0 ? undefined : words[i + 1];
  };
  const table = operation === 'insert' ? after('into') : operation === 'update' ? words[1] : after('from');
  return table ? { operation, table } : { operation };
}

function tableName(node: OperationNode | undefined): string | undefined {
  if (node && AliasNode.is(node)) return tableName(node.node);
  return node && TableNode.is(node) ? node.table.identifier.name : undefined;
}

class StatementSpans {
  readonly #tracer: Tracer;
  readonly #system: string;
  constructor(tracer: Tracer, system: string) {
    this.#tracer = tracer;
    this.#system = system;
  }

  /** A span for a statement, when one is being recorded around it. */
  start(operation: string, table?: string): Span | undefined {
    if (!trace.getActiveSpan()?.isRecording()) return undefined;
    const attributes = { 'db.system': this.#system, 'db.operation.name': operation, ...(table ? { 'db.collection.name': table } : {}) };
    return this.#tracer.startSpan(table ? `${operation} ${table}` : operation, { kind: SpanKind.CLIENT, attributes }, context.active());
  }

  async around<T>(operation: string, table: string | undefined, call: () => Promise<T>): Promise<T> {
    const span = this.start(operation, table);
    if (!span) return call();
    try {
      return await call();
    } catch (err) {
      markFailed(span, err);
      throw err;
    } finally {
      span.end();
    }
  }
}

class TracedConnection implements DatabaseConnection {
  readonly inner: DatabaseConnection;
  readonly #spans: StatementSpans;
  constructor(inner: DatabaseConnection, spans: StatementSpans) {
    this.inner = inner;
    this.#spans = spans;
  }
  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const { operation, table } = statementName(query);
    return this.#spans.around(operation, table, () => this.inner.executeQuery<R>(query));
  }
  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    const { operation, table } = statementName(query);
    const span = this.#spans.start(operation, table);
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize);
    } catch (err) {
      if (span) markFailed(span, err);
      throw err;
    } finally {
      span?.end();
    }
  }
}

type Compile = QueryCompiler['compileQuery'];

/** Hands the inner driver its own connections; statements and transaction control get their spans here. */
class TracedDriver implements Driver {
  readonly #inner: Driver;
  readonly #spans: StatementSpans;
  /** One wrapper per connection of the inner driver (pooled connections come back). */
  readonly #wrappers = new WeakMap<DatabaseConnection, TracedConnection>();

  savepoint?: Driver['savepoint'];
  rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  releaseSavepoint?: Driver['releaseSavepoint'];

  constructor(driver: Driver, spans: StatementSpans) {
    this.#inner = driver;
    this.#spans = spans;
    // Savepoints exactly where the inner driver has them (Kysely refuses them otherwise).
    const names = { savepoint: 'savepoint', rollbackToSavepoint: 'rollback', releaseSavepoint: 'release' } as const;
    for (const [name, operation] of Object.entries(names) as Array<[keyof typeof names, string]>) {
      const method = driver[name]?.bind(driver);
      if (method)
        this[name] = (c: DatabaseConnection, savepoint: string, compile: Compile) =>
          spans.around(operation, undefined, () => method(inner(c), savepoint, compile));
    }
  }

  init(): Promise<void> {
    return this.#inner.init();
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.#inner.acquireConnection();
    let wrapper = this.#wrappers.get(connection);
    if (!wrapper) {
      wrapper = new TracedConnection(connection, this.#spans);
      this.#wrappers.set(connection, wrapper);
    }
    return wrapper;
  }
  beginTransaction(c: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.#spans.around('begin', undefined, () => this.#inner.beginTransaction(inner(c), settings));
  }
  commitTransaction(c: DatabaseConnection): Promise<void> {
    return this.#spans.around('commit', undefined, () => this.#inner.commitTransaction(inner(c)));
  }
  rollbackTransaction(c: DatabaseConnection): Promise<void> {
    return this.#spans.around('rollback', undefined, () => this.#inner.rollbackTransaction(inner(c)));
  }
  releaseConnection(c: DatabaseConnection): Promise<void> {
    return this.#inner.releaseConnection(inner(c));
  }
  destroy(): Promise<void> {
    return this.#inner.destroy();
  }
}

const inner = (c: DatabaseConnection): DatabaseConnection => (c instanceof TracedConnection ? c.inner : c);
