import { CompiledQuery, PostgresAdapter } from 'kysely';
import type { Database } from './schema.ts';
import { insertRows } from './bulk-statements.ts';
import { MAX_PARAMS, type Executor } from './store.ts';

/** Rows for one table: all with the same members in the same order, none undefined (as insertRows takes them). */
export interface Insert {
  table: keyof Database;
  rows: ReadonlyArray<object>;
}
export const insertOf = <T extends keyof Database>(table: T, rows: ReadonlyArray<Database[T]>): Insert => ({ table, rows });

/** PostgreSQL statement texts by adapter and shape (tables, columns, row counts), compiled by Kysely once. */
const texts = new WeakMap<object, Map<string, string>>();
const MAX_TEXTS = 64;

/**
 * Inserts every part's rows, in the order given (so a row may refer to one of an earlier part), all or
 * nothing, in as few round trips as the dialect allows: on PostgreSQL one statement (the parts as
 * data-modifying CTEs: a statement is atomic by itself, so no BEGIN/COMMIT either); on SQLite, where a
 * statement costs no round trip, one multi-row INSERT per part, in a transaction when there are several
 * (or `db`'s, when it is one).
 */
export async function insertTogether(db: Executor, parts: readonly Insert[]): Promise<void> {
  const present = parts.filter((p) => p.rows.length > 0);
  const params = present.reduce((n, p) => n + p.rows.length * Object.keys(p.rows[0]).length, 0);
  if (present.length === 0) return;
  if (params <= MAX_PARAMS && (present.length === 1 || db.getExecutor().adapter instanceof PostgresAdapter)) {
    await db.executeQuery(CompiledQuery.raw(statementText(db, present), parameters(present, params)));
  } else if (db.isTransaction) {
    for (const p of present) await insertRows(db, p.table, p.rows as never);
  } else {
    await db.transaction().execute(async (tx) => {
      for (const p of present) await insertRows(tx, p.table, p.rows as never);
    });
  }
}

function statementText(db: Executor, parts: readonly Insert[]): string {
  const adapter = db.getExecutor().adapter;
  let byShape = texts.get(adapter);
  if (!byShape) {
    byShape = new Map();
    texts.set(adapter, byShape);
  }
  const shape = parts.map((p) => `${p.table}(${Object.keys(p.rows[0]).join(',')})x${p.rows.length}`).join(';');
  let text = byShape.get(shape);
  if (text === undefined) {
    // Kysely cannot type tables chosen at run time.
    // biome-ignore lint/suspicious/noExplicitAny: see above
    let query: any = db;
    parts.slice(0, -1).forEach((p, i) => {
      // biome-ignore lint/suspicious/noExplicitAny: see above
      query = query.with(`w${i}`, (q: any) => q.insertInto(p.table).values(p.rows));
    });
    const last = parts[parts.length - 1];
    text = query.insertInto(last.table).values(last.rows).compile().sql as string;
    if (byShape.size >= MAX_TEXTS) byShape.delete(byShape.keys().next().value!);
    byShape.set(shape, text);
  }
  return text;
}

/** The rows' values in the order Kysely numbers them: part by part, row by row, column by column. */
function parameters(parts: readonly Insert[], count: number): unknown[] {
  const out: unknown[] = new Array(count);
  let k = 0;
  for (const p of parts) {
    const columns = Object.keys(p.rows[0]);
    for (const row of p.rows) for (const c of columns) out[k++] = (row as Record<string, unknown>)[c];
  }
  return out;
}
