import { AppError } from '../../../domain/errors.ts';
import { QueryFailedError, QueryTimeoutError } from '../../../store/read-only-query.ts';
import type { Store } from '../../../store/store.ts';
import { can, requirePermissions, type Caller } from '../../caller.ts';
import type { AnalyticsSource } from './catalog.ts';
import type { SqlDialect } from './compiled.ts';
import { compileQuery } from './compile-select.ts';
import { POSTGRES_QUERY_DIALECT } from './compile-postgres.ts';
import { SQLITE_QUERY_DIALECT } from './compile-sqlite.ts';
import { parseQuery } from './parse.ts';
import { renderRow } from './render.ts';
import { validateQuery } from './validate.ts';

/** How long a query may run before it is stopped (422 query_execution_timeout). */
export const QUERY_TIMEOUT_MS = 5_000;
/** How many analytics queries one workspace may run at once on this server (429 beyond). */
export const QUERIES_PER_WORKSPACE = 3;

const DIALECTS: Record<Store['caps']['dialect'], SqlDialect> = { sqlite: SQLITE_QUERY_DIALECT, postgres: POSTGRES_QUERY_DIALECT };

/** The permission resource type and its wildcard per source. */
const RESOURCE: Record<AnalyticsSource, 'api' | 'ratelimit'> = { verifications: 'api', ratelimits: 'ratelimit' };

/**
 * Which APIs (or namespaces) the caller may read: null for all of the workspace (`api.*.read_analytics`), else
 * the ids of its `api.<apiId>.read_analytics`; neither is a 403 naming the wildcard, as Unkey answers.
 */
export function readableScope(caller: Caller, source: AnalyticsSource): string[] | null {
  const type = RESOURCE[source];
  if (can(caller, `${type}.*.read_analytics`)) return null;
  const ids = [...caller.permissions].flatMap((p) => {
    const [t, id, action] = p.split('.');
    return t === type && action === 'read_analytics' && id !== '*' && p.split('.').length === 3 ? [id] : [];
  });
  if (ids.length === 0) requirePermissions(caller, `${type}.*.read_analytics`);
  return ids.sort();
}

/** Queries running per workspace on this server; an entry goes when its last query ends. */
const running = new Map<string, number>();

function acquire(workspaceId: string): () => void {
  const now = running.get(workspaceId) ?? 0;
  if (now >= QUERIES_PER_WORKSPACE) {
    throw new AppError(
      'analytics/quota-exceeded',
      `This workspace already runs ${QUERIES_PER_WORKSPACE} analytics queries; retry when one ends.`,
    );
  }
  running.set(workspaceId, now + 1);
  return () => {
    const left = (running.get(workspaceId) ?? 1) - 1;
    if (left <= 0) running.delete(workspaceId);
    else running.set(workspaceId, left);
  };
}

export interface AnalyticsQueryOptions {
  timeoutMs?: number;
  /** The query's now() (tests); default the clock. */
  nowMs?: number;
  /** false: read every roll-up itself, never a coarser form (tests compare the answers). */
  forms?: boolean;
}

/**
 * Runs an analytics query (v2 analytics.getVerifications / getRatelimits, and the dashboard's query box): checks
 * the caller's permissions, parses, validates and compiles the query for the store (only the caller's workspace,
 * and only the APIs or namespaces it may read), and runs it read-only under QUERY_TIMEOUT_MS, at most
 * QUERIES_PER_WORKSPACE at once per workspace. Rows come back keyed by column name.
 */
export async function runAnalyticsQuery(
  store: Store,
  caller: Caller,
  source: AnalyticsSource,
  query: string,
  options: AnalyticsQueryOptions = {},
): Promise<Array<Record<string, unknown>>> {
  const scopeIds = readableScope(caller, source);
  const statement = parseQuery(query);
  validateQuery(statement, source);
  const nowMs = options.nowMs ?? Date.now();
  const filter = { workspaceId: caller.workspaceId, source, scopeIds, forms: options.forms };
  const compiled = compileQuery(statement, query, DIALECTS[store.caps.dialect], filter, nowMs);
  const timeoutMs = options.timeoutMs ?? QUERY_TIMEOUT_MS;
  const release = acquire(caller.workspaceId);
  try {
    const rows = await store.readOnlyQuery(compiled.sql, compiled.params, timeoutMs);
    return rows.map((row) => renderRow(row, compiled.columns));
  } catch (err) {
    if (err instanceof QueryTimeoutError) {
      throw new AppError(
        'analytics/query-timeout',
        `The query ran longer than ${timeoutMs / 1000} s and was stopped; narrow its time range or use a roll-up table.`,
      );
    }
    if (err instanceof QueryFailedError)
      throw new AppError('analytics/invalid-query', 'The query could not be run on this data (a type mismatch or an invalid conversion).');
    throw err;
  } finally {
    release();
  }
}
