import type { ErrorKind, AppError } from '../../domain/errors.ts';

/** How Unkey v2 answers each kind of error: its status, title and `type` (after https://unkey.com/docs/errors/). */
interface V2Kind {
  status: number;
  title: string;
  type: string;
}

const BAD_INPUT: V2Kind = { status: 400, title: 'Bad Request', type: 'unkey/application/invalid_input' };
const NOT_FOUND = (what: string): V2Kind => ({ status: 404, title: 'Not Found', type: `unkey/data/${what}_not_found` });
const UNAVAILABLE: V2Kind = { status: 503, title: 'Service Unavailable', type: 'unkey/application/service_unavailable' };

/**
 * Every catalog kind in v2 terms. Statuses follow v2 where it differs from v1: a missing or malformed
 * Authorization header is a 400, an expired root key a 403; an unreachable store stays a 503 (v2 says 500).
 */
export const V2_KINDS: Record<ErrorKind, V2Kind> = {
  'request/invalid-body': BAD_INPUT,
  'request/invalid-json': BAD_INPUT,
  'request/malformed': BAD_INPUT,
  'auth/missing': { status: 400, title: 'Bad Request', type: 'unkey/authentication/missing' },
  'auth/malformed': { status: 400, title: 'Bad Request', type: 'unkey/authentication/malformed' },
  'auth/invalid': { status: 401, title: 'Unauthorized', type: 'unkey/authentication/key_not_found' },
  'auth/revoked': { status: 401, title: 'Unauthorized', type: 'unkey/authentication/key_not_found' },
  'auth/expired': { status: 403, title: 'Forbidden', type: 'unkey/authorization/forbidden' },
  // Only the secret scanning route (outside /v2) raises it; listed so the map stays total.
  'auth/invalid-signature': { status: 401, title: 'Unauthorized', type: 'unkey/authentication/malformed' },
  'auth/insufficient-permissions': { status: 403, title: 'Insufficient Permissions', type: 'unkey/authorization/insufficient_permissions' },
  'request/route-not-found': { status: 404, title: 'Not Found', type: 'unkey/application/route_not_found' },
  'data/api-not-found': NOT_FOUND('api'),
  'data/key-not-found': NOT_FOUND('key'),
  'data/role-not-found': NOT_FOUND('role'),
  'data/permission-not-found': NOT_FOUND('permission'),
  'data/identity-not-found': NOT_FOUND('identity'),
  'data/migration-not-found': NOT_FOUND('migration'),
  'data/namespace-not-found': NOT_FOUND('ratelimit_namespace'),
  'data/override-not-found': NOT_FOUND('ratelimit_override'),
  'data/webhook-endpoint-not-found': NOT_FOUND('webhook_endpoint'),
  'data/webhook-delivery-not-found': NOT_FOUND('webhook_delivery'),
  'data/usage-export-not-found': NOT_FOUND('usage_export'),
  'data/workspace-not-found': NOT_FOUND('workspace'),
  'data/root-key-not-found': { status: 401, title: 'Unauthorized', type: 'unkey/authentication/key_not_found' },
  'request/method-not-allowed': { status: 405, title: 'Method Not Allowed', type: 'unkey/application/method_not_allowed' },
  'data/conflict': { status: 409, title: 'Conflicting Resource', type: 'unkey/data/resource_already_exists' },
  'state/precondition-failed': { status: 412, title: 'Precondition Failed', type: 'unkey/application/precondition_failed' },
  'state/delete-protected': { status: 412, title: 'Resource is protected', type: 'unkey/application/protected_resource' },
  'request/timeout': { status: 408, title: 'Request Timeout', type: 'user/bad_request/request_timeout' },
  'request/body-too-large': { status: 413, title: 'Request Entity Too Large', type: 'user/bad_request/request_body_too_large' },
  'request/unsupported-media-type': { status: 415, title: 'Unsupported Media Type', type: 'unkey/application/invalid_input' },
  'request/headers-too-large': {
    status: 431,
    title: 'Request Header Fields Too Large',
    type: 'user/bad_request/request_headers_too_large',
  },
  'limit/rate-limited': { status: 429, title: 'Too Many Requests', type: 'user/too_many_requests/workspace_rate_limited' },
  'analytics/invalid-query': { status: 400, title: 'Bad Request', type: 'user/bad_request/invalid_analytics_query' },
  'analytics/invalid-table': { status: 400, title: 'Bad Request', type: 'user/bad_request/invalid_analytics_table' },
  'analytics/invalid-function': { status: 400, title: 'Bad Request', type: 'user/bad_request/invalid_analytics_function' },
  'analytics/range-exceeds-retention': { status: 400, title: 'Bad Request', type: 'user/bad_request/query_range_exceeds_retention' },
  'analytics/query-timeout': { status: 422, title: 'Unprocessable Entity', type: 'user/unprocessable_entity/query_execution_timeout' },
  'analytics/quota-exceeded': { status: 429, title: 'Too Many Requests', type: 'user/too_many_requests/query_quota_exceeded' },
  internal: { status: 500, title: 'Internal Server Error', type: 'unkey/application/unexpected_error' },
  'server/shutting-down': UNAVAILABLE,
  'store/unavailable': UNAVAILABLE,
  'upstream/unavailable': UNAVAILABLE,
};

export const V2_ERROR_BASE = 'https://unkey.com/docs/errors/';

/** Whether a request path is a v2 operation's (its errors then take v2's envelope). */
export const isV2Path = (url: string): boolean => url.startsWith('/v2/');

/** The status and v2 error envelope of an error; a 400 always lists its problems (`[]` when none). */
export function v2ErrorResponse(requestId: string, err: AppError): { status: number; body: object } {
  const kind = V2_KINDS[err.kind];
  const errors = err.errors?.map((p) => ({ location: p.path, message: p.message })) ?? (kind.status === 400 ? [] : undefined);
  return {
    status: kind.status,
    body: {
      meta: { requestId },
      error: {
        title: kind.title,
        detail: err.message,
        status: kind.status,
        type: V2_ERROR_BASE + kind.type,
        ...(errors ? { errors } : {}),
      },
    },
  };
}
