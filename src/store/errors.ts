/** Whether a driver error is a unique-constraint violation (PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE/PRIMARYKEY). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown };
  if (e?.code === '23505') return true;
  if (e?.errcode === 2067 || e?.errcode === 1555) return true;
  return typeof e?.message === 'string' && /UNIQUE constraint failed|PRIMARY KEY constraint failed/.test(e.message);
}

/**
 * Whether a driver error is a foreign-key violation (PostgreSQL 23503, SQLite SQLITE_CONSTRAINT_FOREIGNKEY):
 * a row this write refers to was deleted by a concurrent transaction.
 */
export function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown };
  if (e?.code === '23503' || e?.errcode === 787) return true;
  return typeof e?.message === 'string' && /FOREIGN KEY constraint failed/.test(e.message);
}
