import { sql, type Expression, type SqlBool } from 'kysely';

/**
 * Whether any of `columns` contains `text`, ignoring case: the `search` of v2's list operations. `%`, `_` and
 * `\` in the text match themselves. Both sides go through the store's own `lower()`, so each dialect folds the
 * column and the text alike (SQLite folds ASCII letters only, PostgreSQL every letter).
 */
export function containsText(columns: readonly string[], text: string): Expression<SqlBool> {
  const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<SqlBool>`(${sql.join(
    columns.map((c) => sql`lower(${sql.ref(c)}) like lower(${pattern}) escape '\\'`),
    sql` or `,
  )})`;
}
