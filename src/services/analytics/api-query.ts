import type { Store } from '../../store/store.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { requireApi } from '../lookups.ts';
import { runAnalyticsQuery, type AnalyticsQueryOptions } from './query/run.ts';

/**
 * An analytics query over one API's verifications (the dashboard's query box): the same query service as
 * `POST /v2/analytics.getVerifications`, run as the caller holding only `api.<apiId>.read_analytics`, so that it
 * reads the caller's workspace and that API's rows alone, whatever the caller may read besides. Another
 * workspace's API is a 404; a caller that may not read the API's analytics, a 403.
 */
export async function runApiAnalyticsQuery(
  store: Store,
  caller: Caller,
  apiId: string,
  query: string,
  options?: AnalyticsQueryOptions,
): Promise<Array<Record<string, unknown>>> {
  await requireApi(store.db, caller.workspaceId, apiId);
  const permission = `api.${apiId}.read_analytics`;
  requirePermissions(caller, permission);
  return runAnalyticsQuery(store, { ...caller, permissions: new Set([permission]) }, 'verifications', query, options);
}
