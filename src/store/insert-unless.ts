import { CompiledQuery, PostgresAdapter } from 'kysely';
import { insertText } from './bulk-statements.ts';
import { insertTogether, type Insert } from './insert-together.ts';
import { nameStatement } from './dialects/postgres.ts';
import { MAX_PARAMS, type Executor } from './store.ts';

/**
 * A condition on what the store holds: an SQL expression whose parameters are `?` (numbered here for
 * PostgreSQL; so `?` appears nowhere else in it) and their values. Its text must be the same for every use of
 * one kind of condition: statements are cached by it.
 */
export interface Condition {
  sql: string;
  parameters: readonly unknown[];
}

/**
 * insertTogether's rows, unless `blocker` holds when they would be written: the check and the inserts are one
 * statement on PostgreSQL (one round trip and no BEGIN/COMMIT: a statement sees one snapshot and is atomic);
 * elsewhere a read of the condition, then insertTogether. Returns whether the rows were written (false: the
 * condition held and nothing was written).
 */
export async function insertTogetherUnless(db: Executor, parts: readonly Insert[], blocker: Condition): Promise<boolean> {
  const present = parts.filter((p) => p.rows.length > 0);
  const params = present.reduce((n, p) => n + p.rows.length * Object.keys(p.rows[0]).length, blocker.parameters.length);
  if (params <= MAX_PARAMS && db.getExecutor().adapter instanceof PostgresAdapter) {
    const shape = present.map((p) => `${p.table}(${Object.keys(p.rows[0]).join(',')})x${p.rows.length}`).join(';');
    const text = insertText(db, `unless ${blocker.sql}: ${shape}`, () => guardedText(present, blocker));
    nameStatement(text);
    const { rows } = await db.executeQuery<{ held: boolean }>(CompiledQuery.raw(text, [...blocker.parameters, ...rowValues(present)]));
    return !rows[0].held;
  }
  // Elsewhere (SQLite, where a statement costs no round trip) the condition is read first, then the rows are
  // inserted: outside a transaction the read goes to the reader connection and the inserts join the group
  // commit (checking inside the write transaction measured slower: 0.08× the limit against 0.13–0.17×). A
  // change that commits between the two is ordered as if it came after the inserts, as with any read before a write.
  const check = await db.executeQuery<{ held: number | boolean }>(
    CompiledQuery.raw(`select exists (${blocker.sql}) as held`, [...blocker.parameters]),
  );
  if (check.rows[0].held) return false;
  await insertTogether(db, present);
  return true;
}

/**
 * PostgreSQL: `with g as (select exists (…) as held), w0 as (insert into t (…) select $…, … where not …), …
 * select held from g`, one data-modifying CTE per row (a multi-row `VALUES` in a `SELECT` would type its
 * parameters as text; a single-row `INSERT … SELECT` types them by the target columns, as `VALUES` does).
 */
function guardedText(parts: readonly Insert[], blocker: Condition): string {
  let n = 0;
  const condition = blocker.sql.replaceAll('?', () => `$${++n}`);
  const ctes = [`g as (select exists (${condition}) as held)`];
  for (const p of parts) {
    const columns = Object.keys(p.rows[0]);
    const list = columns.map((c) => `"${c}"`).join(', ');
    for (let r = 0; r < p.rows.length; r++) {
      const values = columns.map(() => `$${++n}`).join(', ');
      ctes.push(`w${ctes.length} as (insert into "${p.table}" (${list}) select ${values} where not (select held from g))`);
    }
  }
  return `with ${ctes.join(', ')} select held from g`;
}

/** The rows' values in the order guardedText numbers them: part by part, row by row, column by column. */
function rowValues(parts: readonly Insert[]): unknown[] {
  const out: unknown[] = [];
  for (const p of parts) {
    const columns = Object.keys(p.rows[0]);
    for (const row of p.rows) for (const c of columns) out.push((row as Record<string, unknown>)[c]);
  }
  return out;
}
