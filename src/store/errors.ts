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

/** A store call that got no answer in time: raised by Keyhold's own deadlines (query timeout, readiness ping). */
export class StoreUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreUnavailableError';
  }
}

/** Socket errors: the server is not there, or the connection to it broke. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs meaning "not now" rather than "not this": 57P01 admin_shutdown, 57P02 crash_shutdown,
 * 57P03 cannot_connect_now (starting up or recovering), 57014 query_canceled (Keyhold cancels nothing itself, so
 * it is statement_timeout), 55P03 lock_not_available, 25P03 idle_in_transaction_session_timeout.
 * Class 08 (connection exception) and class 53 (insufficient resources: too many connections, out of memory,
 * disk full) are matched by prefix.
 */
const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '57014', '55P03', '25P03']);

/** What `pg` and `pg-pool` say when a connection broke, could not be made in time, or a pooled client is unusable. */
const PG_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout)/;

/**
 * SQLite primary result codes: 5 BUSY (another connection held the lock beyond the busy timeout), 6 LOCKED,
 * 10 IOERR, 14 CANTOPEN.
 */
const SQLITE_UNAVAILABLE = new Set([5, 6, 10, 14]);

/**
 * Whether a store error means the store is unavailable (unreachable, restarting, overloaded or locked beyond
 * its timeouts) rather than that the statement is wrong: such a request is answered 503 `store/unavailable`
 * and may be retried as it is. Looks through `cause` and AggregateError's `errors` (a connection attempt to
 * several addresses of one host).
 */
export function isStoreUnavailable(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== 'object' || depth > 3) return false;
  if (err instanceof StoreUnavailableError) return true;
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string') {
    if (NETWORK_CODES.has(e.code) || PG_UNAVAILABLE.has(e.code)) return true;
    if (/^(08|53)[0-9A-Z]{3}$/.test(e.code)) return true;
  }
  if (typeof e.errcode === 'number' && SQLITE_UNAVAILABLE.has(e.errcode & 0xff)) return true;
  if (typeof e.message === 'string' && PG_MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isStoreUnavailable(inner, depth + 1))) return true;
  return isStoreUnavailable(e.cause, depth + 1);
}
