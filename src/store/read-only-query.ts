/**
 * Running one SELECT that users wrote (analytics queries) apart from the server's own work: read-only, under a
 * deadline, off the connections and the thread that answer verifications (dialects/sqlite-read-only.ts,
 * dialects/postgres-read-only.ts).
 */
export type ReadOnlyQuery = (sql: string, params: readonly unknown[], timeoutMs: number) => Promise<Array<Record<string, unknown>>>;

/** The statement ran past its deadline and was stopped. */
export class QueryTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`the query ran longer than ${timeoutMs} ms and was stopped`);
    this.name = 'QueryTimeoutError';
  }
}

/** The statement failed in the store (a type error, a bad conversion): its message is the store's own. */
export class QueryFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QueryFailedError';
  }
}
