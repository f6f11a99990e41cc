import { CompiledQuery, PostgresAdapter } from 'kysely';
import type { Database } from './schema.ts';
import { insertRows, insertShape, insertText } from './bulk-statements.ts';
import { MAX_PARAMS, type Executor } from './store.ts';

/** Rows for one table: all with the same members in the same order, none undefined (as insertRows takes them). */
export interface Insert {
  table: keyof Database;
  rows: ReadonlyArray<object>;
}
export const insertOf = <T extends keyof Database>(table: T, rows: ReadonlyArray<Database[T]>): Insert => ({ table, rows });

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

/** One INSERT with the parts before the last as data-modifying CTEs, its text compiled once per shape. */
function statementText(db: Executor, parts: readonly Insert[]): string {
  const shape = parts.map((p) => insertShape(p.table, p.rows)).join(';');
  return insertText(db, shape, () => {
    // Kysely cannot type tables chosen at run time.
    // biome-ignore lint/suspicious/noExplicitAny: see above
    let query: any = db;
    parts.slice(0, -1).forEach((p, i) => {
      // biome-ignore lint/suspicious/noExplicitAny: see above
      query = query.with(`w${i}`, (q: any) => q.insertInto(p.table).values(p.rows));
    });
    const last = parts[parts.length - 1];
    return query.insertInto(last.table).values(last.rows).compile().sql as string;
  });
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
