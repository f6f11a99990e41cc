import { CompiledQuery, type InsertQueryBuilder, PostgresAdapter, sql } from 'kysely';
import type { Database } from './schema.ts';
import type { Executor } from './store.ts';
import { IN_LIST_CHUNK, JSON_CHUNK, MAX_PARAMS } from './statement-limits.ts';

// Statements over many rows or values, each within both dialects' limits on bound parameters.

export const chunk = <T>(xs: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
};

/**
 * `xs` in chunks of `max`, and the rest in chunks of powers of two (300 with max 500: 256, 32, 8, 4): a
 * statement over each chunk has one of a few fixed shapes, whose prepared statements the store keeps,
 * instead of one shape per row count. For statements that run again and again (the analytics recorders).
 */
export function fixedShapeChunks<T>(xs: readonly T[], max: number): T[][] {
  const out: T[][] = [];
  let i = 0;
  for (; xs.length - i >= max; i += max) out.push(xs.slice(i, i + max));
  for (let size = 2 ** Math.floor(Math.log2(max)); size >= 1 && i < xs.length; size /= 2) {
    if (xs.length - i >= size) {
      out.push(xs.slice(i, i + size));
      i += size;
    }
  }
  return out;
}

/** Runs `query` once per IN_LIST_CHUNK values and concatenates the rows. */
export async function selectIn<V, R>(values: readonly V[], query: (chunk: V[]) => Promise<R[]>): Promise<R[]> {
  if (values.length === 0) return [];
  if (values.length <= IN_LIST_CHUNK) return query([...values]);
  const rows: R[] = [];
  for (const part of chunk(values, IN_LIST_CHUNK)) rows.push(...(await query(part)));
  return rows;
}

/**
 * Multi-row inserts of `rows`, each binding at most MAX_PARAMS parameters, in chunks of equal size (±1), so
 * that a batch of 1000 keys is two statements of one shape, not 727 + 273 rows.
 */
export async function insertAll<R extends object>(rows: readonly R[], insert: (chunk: R[]) => Promise<unknown>): Promise<void> {
  if (rows.length === 0) return;
  const maxRows = Math.max(1, Math.floor(MAX_PARAMS / Object.keys(rows[0]).length));
  const statements = Math.ceil(rows.length / maxRows);
  for (let i = 0, start = 0; i < statements; i++) {
    const end = Math.round(((i + 1) * rows.length) / statements);
    await insert(rows.slice(start, end));
    start = end;
  }
}

/**
 * SQL text of multi-row INSERTs, by dialect (its adapter) and shape (tables, columns, row counts). Kysely
 * builds and compiles one node per bound value, which for a batch of 1000 keys costs about as much as the
 * database's own work; a shape is compiled by Kysely once, then reused with fresh parameters.
 */
const insertTexts = new WeakMap<object, { any: Map<string, string>; recurring: Map<string, string> }>();
/** Shapes kept per dialect (least recently used dropped): the texts of big batches are 100+ KB each. */
const MAX_INSERT_TEXTS = 64;

/**
 * The text of `shape` on `db`'s dialect: cached, or made by `compile` and cached. `recurring`: a shape of
 * fixedShapeChunks, run again and again (the recorders' raw rows and roll-ups, about a dozen tables of about ten
 * shapes each, some 2 MB of text in all): kept for good, apart from the others, which would otherwise push them
 * out and have each flush compile its statements anew.
 */
export function insertText(db: Executor, shape: string, compile: () => string, recurring = false): string {
  const adapter = db.getExecutor().adapter;
  let texts = insertTexts.get(adapter);
  if (!texts) {
    texts = { any: new Map(), recurring: new Map() };
    insertTexts.set(adapter, texts);
  }
  if (recurring) {
    let text = texts.recurring.get(shape);
    if (text === undefined) {
      text = compile();
      texts.recurring.set(shape, text);
    }
    return text;
  }
  let text = texts.any.get(shape);
  if (text === undefined) {
    text = compile();
    if (texts.any.size >= MAX_INSERT_TEXTS) texts.any.delete(texts.any.keys().next().value!);
  } else {
    texts.any.delete(shape);
  }
  texts.any.set(shape, text);
  return text;
}

/** A shape's name for insertText: table, columns and row count. */
export const insertShape = (table: string, rows: ReadonlyArray<object>): string =>
  `${table}(${Object.keys(rows[0]).join(',')})x${rows.length}`;

/**
 * `INSERT INTO table (…) VALUES (…), (…)…` of `rows` (all with the same members in the same order, none
 * undefined), in statements of at most MAX_PARAMS parameters.
 */
export async function insertRows<T extends keyof Database>(tx: Executor, table: T, rows: ReadonlyArray<Database[T]>): Promise<void> {
  if (rows.length === 0) return;
  await insertAll(rows, (part) => insertChunk(tx, table, part));
}

/** Rows per statement of insertRecurringRows on SQLite: 256 rows of a dozen columns are some 20 KB of SQL, which the store keeps prepared. */
const RECURRING_ROWS = 256;

/**
 * insertRows for statements that run again and again with any number of rows (the analytics recorders' raw
 * events, every flush): one text per table and columns, compiled once (recurringInserts).
 */
export async function insertRecurringRows<T extends keyof Database>(
  tx: Executor,
  table: T,
  rows: ReadonlyArray<Database[T]>,
): Promise<void> {
  await recurringInserts(tx, table, rows, RECURRING_ROWS, 'insert', (insert) => insert);
}

/** An INSERT of the rows recurringInserts gives it, to which the caller may add a clause (ON CONFLICT …). */
// biome-ignore lint/suspicious/noExplicitAny: Kysely cannot type an insert into a table chosen by a type parameter
type RowsInsert = InsertQueryBuilder<Database, any, any>;

/**
 * Runs `finish(INSERT INTO table … rows)` over `rows` (all with the same members in the same order), in
 * statements whose texts are compiled once (insertText, `kind` naming the statement) and stay prepared:
 * - SQLite: multi-row VALUES in fixedShapeChunks of `maxRows` (a few fixed shapes);
 * - PostgreSQL: `SELECT … FROM json_populate_recordset(null::table, $1)`, the rows as one JSON parameter, up to
 *   JSON_CHUNK a statement: one text whatever the row count. As VALUES, each statement was thousands of parameters
 *   that PostgreSQL parsed and planned anew on each run (an unnamed statement) and the client serialized one by
 *   one: writing 10,000 roll-up rows of distinct keys took 15–20 µs a row instead of 21–31, the client's CPU 2–4 µs
 *   instead of 6–14 (docs/performance.md).
 * The rows are written in the order given (the same on every node, so that concurrent writes lock rows alike).
 */
export async function recurringInserts<T extends keyof Database>(
  tx: Executor,
  table: T,
  rows: ReadonlyArray<Database[T]>,
  maxRows: number,
  kind: string,
  finish: (insert: RowsInsert) => RowsInsert,
): Promise<void> {
  if (rows.length === 0) return;
  if (tx.getExecutor().adapter instanceof PostgresAdapter) {
    const columns = Object.keys(rows[0]);
    const text = insertText(
      tx,
      `${kind} ${table}(${columns.join(',')}) json`,
      () => finish(jsonRowsInsert(tx, table, columns)).compile().sql,
      true,
    );
    for (const part of chunk(rows, JSON_CHUNK)) await tx.executeQuery(CompiledQuery.raw(text, [JSON.stringify(part)]));
    return;
  }
  for (const part of fixedShapeChunks(rows, maxRows)) await insertChunk(tx, table, part, { kind, finish });
}

/** `INSERT INTO table (columns) SELECT columns FROM json_populate_recordset(null::table, $1::json)`: the rows of the JSON array, typed as the table's. */
function jsonRowsInsert(tx: Executor, table: string, columns: readonly string[]): RowsInsert {
  const names = sql.join(columns.map((c) => sql.ref(c)));
  return (
    tx
      // biome-ignore lint/suspicious/noExplicitAny: as RowsInsert
      .insertInto(table as any)
      .columns(columns as never[])
      .expression(sql`select ${names} from json_populate_recordset(null::${sql.table(table)}, ${'[]'}::json)`)
  );
}

/**
 * One multi-row INSERT of `part`, its text compiled once per shape (insertText); `recurring`: a statement of
 * recurringInserts, named by its kind, with its clause added by `finish`, kept for good.
 */
async function insertChunk<T extends keyof Database>(
  tx: Executor,
  table: T,
  part: ReadonlyArray<Database[T]>,
  recurring?: { kind: string; finish: (insert: RowsInsert) => RowsInsert },
): Promise<void> {
  const columns = Object.keys(part[0]) as Array<keyof Database[T]>;
  // Kysely cannot type an insert into a table chosen by a type parameter.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  const values = part as any;
  const shape = insertShape(table, part);
  const text = recurring
    ? insertText(tx, `${recurring.kind} ${shape}`, () => recurring.finish(tx.insertInto(table).values(values)).compile().sql, true)
    : insertText(tx, shape, () => tx.insertInto(table).values(values).compile().sql);
  await tx.executeQuery(CompiledQuery.raw(text, rowParams(part, columns)));
}

/** The bound values of a multi-row statement over `rows`: each row's `columns`, row after row. */
export function rowParams<R>(rows: ReadonlyArray<R>, columns: ReadonlyArray<keyof R>): unknown[] {
  const params: unknown[] = new Array(rows.length * columns.length);
  let k = 0;
  for (const row of rows) for (const c of columns) params[k++] = row[c];
  return params;
}
