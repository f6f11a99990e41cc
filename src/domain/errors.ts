import { MAX_LISTED_PROBLEMS } from './bounds.ts';

/**
 * The one catalog of error kinds. Every non-2xx response is rendered from an entry here:
 * `type` is `https://keyhold.dev/errors/<kind>` and never changes meaning once released.
 */
export const ERROR_CATALOG = {
  'request/invalid-body': {
    status: 400,
    code: 'BAD_REQUEST',
    description: 'The body or query failed validation; `errors` lists every problem with its JSON path.',
  },
  'request/invalid-json': { status: 400, code: 'BAD_REQUEST', description: 'The body is not valid JSON.' },
  'auth/missing': { status: 401, code: 'UNAUTHORIZED', description: 'No `Authorization: Bearer <root key>` header.' },
  'auth/malformed': { status: 401, code: 'UNAUTHORIZED', description: 'The Authorization header is not `Bearer kh_root_…`.' },
  'auth/invalid': { status: 401, code: 'UNAUTHORIZED', description: 'The root key is unknown.' },
  'auth/revoked': { status: 401, code: 'UNAUTHORIZED', description: 'The root key was revoked.' },
  'auth/expired': { status: 401, code: 'UNAUTHORIZED', description: 'The root key has expired.' },
  'auth/invalid-signature': {
    status: 401,
    code: 'UNAUTHORIZED',
    description: 'A secret scanning report whose signature is missing, invalid, or made with an unknown key.',
  },
  'auth/insufficient-permissions': {
    status: 403,
    code: 'INSUFFICIENT_PERMISSIONS',
    description: 'The root key lacks a required permission; `detail` names it.',
  },
  'request/route-not-found': { status: 404, code: 'NOT_FOUND', description: 'No operation at this path.' },
  'data/api-not-found': { status: 404, code: 'NOT_FOUND', description: "The API does not exist in the caller's workspace." },
  'data/key-not-found': { status: 404, code: 'NOT_FOUND', description: "The key does not exist in the caller's workspace." },
  'data/role-not-found': { status: 404, code: 'NOT_FOUND', description: "A named role does not exist in the caller's workspace." },
  'data/permission-not-found': {
    status: 404,
    code: 'NOT_FOUND',
    description: "A named permission does not exist in the caller's workspace.",
  },
  'data/identity-not-found': { status: 404, code: 'NOT_FOUND', description: "The identity does not exist in the caller's workspace." },
  'data/migration-not-found': { status: 404, code: 'NOT_FOUND', description: "The migration does not exist in the caller's workspace." },
  'data/namespace-not-found': {
    status: 404,
    code: 'NOT_FOUND',
    description: "The rate-limit namespace does not exist in the caller's workspace.",
  },
  'data/override-not-found': {
    status: 404,
    code: 'NOT_FOUND',
    description: 'The namespace has no override for this identifier.',
  },
  'data/webhook-endpoint-not-found': {
    status: 404,
    code: 'NOT_FOUND',
    description: "The webhook endpoint does not exist in the caller's workspace.",
  },
  'data/webhook-delivery-not-found': {
    status: 404,
    code: 'NOT_FOUND',
    description: "The webhook delivery does not exist in the caller's workspace.",
  },
  'data/usage-export-not-found': {
    status: 404,
    code: 'NOT_FOUND',
    description: "The usage export does not exist in the caller's workspace.",
  },
  'data/workspace-not-found': { status: 404, code: 'NOT_FOUND', description: 'The workspace does not exist.' },
  'data/root-key-not-found': { status: 404, code: 'NOT_FOUND', description: 'The root key does not exist.' },
  'request/method-not-allowed': { status: 405, code: 'METHOD_NOT_ALLOWED', description: 'The path exists but not with this HTTP method.' },
  'data/conflict': { status: 409, code: 'CONFLICT', description: 'A unique value (key hash, name) already exists.' },
  'state/precondition-failed': {
    status: 412,
    code: 'PRECONDITION_FAILED',
    description: "The operation is not possible in the resource's current state or configuration.",
  },
  'state/delete-protected': { status: 412, code: 'DELETE_PROTECTED', description: 'The API is protected from deletion.' },
  'request/timeout': { status: 408, code: 'REQUEST_TIMEOUT', description: 'The request did not arrive completely in time.' },
  'request/body-too-large': {
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
    description: 'The body is larger than the operation accepts: 5 MiB, 64 KiB for keys.verifyKey, 1 MiB for a secret scanning report.',
  },
  'request/unsupported-media-type': {
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    description: 'A body was sent without `Content-Type: application/json`.',
  },
  'request/headers-too-large': {
    status: 431,
    code: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
    description: 'The request line and headers (a query string included) are larger than 16 KiB.',
  },
  'limit/rate-limited': { status: 429, code: 'RATE_LIMITED', description: 'A limit on the caller was hit.' },
  'request/malformed': { status: 400, code: 'BAD_REQUEST', description: 'The request is not valid HTTP/1.1.' },
  'analytics/invalid-query': {
    status: 400,
    code: 'BAD_REQUEST',
    description: 'An analytics query is not one read-only SELECT this server can run (syntax, clause or column); `detail` says what.',
  },
  'analytics/invalid-table': {
    status: 400,
    code: 'BAD_REQUEST',
    description: 'An analytics query names a table that is not one of its public tables; `detail` names it.',
  },
  'analytics/invalid-function': {
    status: 400,
    code: 'BAD_REQUEST',
    description: 'An analytics query calls a function that is not on the allow-list; `detail` names it.',
  },
  'analytics/range-exceeds-retention': {
    status: 400,
    code: 'BAD_REQUEST',
    description: "An analytics query asks for a time range that starts before the table's retention.",
  },
  'analytics/query-timeout': {
    status: 422,
    code: 'UNPROCESSABLE_ENTITY',
    description: 'An analytics query ran longer than its 5 s statement timeout and was stopped.',
  },
  'analytics/quota-exceeded': {
    status: 429,
    code: 'RATE_LIMITED',
    description: 'The workspace already runs as many analytics queries at once as it may; retry when one ends.',
  },
  internal: { status: 500, code: 'INTERNAL_SERVER_ERROR', description: 'An unexpected failure; it is logged with the request id.' },
  'server/shutting-down': {
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    description: 'This server is shutting down; send the request again (another node answers it).',
  },
  'upstream/unavailable': {
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    description: "A service Keyhold needs for this request (GitHub's secret scanning signing keys) did not answer in time; retry.",
  },
  'store/unavailable': {
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    description: 'The database did not answer in time (unreachable, restarting or overloaded); retry the request as it is.',
  },
} as const satisfies Record<string, { status: number; code: string; description: string }>;

export type ErrorKind = keyof typeof ERROR_CATALOG;

export const STATUS_TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export const errorTypeUri = (kind: ErrorKind): string => `https://keyhold.dev/errors/${kind}`;

export interface FieldProblem {
  path: string;
  message: string;
}

/** A failure a use case reports to its caller; rendered as the error envelope by the HTTP layer and as a message by the CLI. */
export class AppError extends Error {
  readonly kind: ErrorKind;
  readonly errors?: FieldProblem[];
  constructor(kind: ErrorKind, detail: string, errors?: FieldProblem[]) {
    super(detail);
    this.name = 'AppError';
    this.kind = kind;
    this.errors = errors;
  }
  get status(): number {
    return ERROR_CATALOG[this.kind].status;
  }
}

/** The not-found kind of each resource a request can name. */
const NOT_FOUND = {
  api: 'data/api-not-found',
  key: 'data/key-not-found',
  role: 'data/role-not-found',
  permission: 'data/permission-not-found',
  identity: 'data/identity-not-found',
  migration: 'data/migration-not-found',
  namespace: 'data/namespace-not-found',
  override: 'data/override-not-found',
  'webhook endpoint': 'data/webhook-endpoint-not-found',
  'webhook delivery': 'data/webhook-delivery-not-found',
  'usage export': 'data/usage-export-not-found',
  workspace: 'data/workspace-not-found',
  'root key': 'data/root-key-not-found',
} as const satisfies Record<string, ErrorKind>;

/** The 404 for a resource that does not exist in the caller's workspace: `<resource> <id> not found`. */
export const notFound = (resource: keyof typeof NOT_FOUND, id: string): AppError =>
  new AppError(NOT_FOUND[resource], `${resource} ${shown(id)} not found`);

/** An id as a message quotes it: ids have no length bound, so a long one is cut (a 404 stays small). */
const shown = (id: string): string => (id.length > 64 ? `${id.slice(0, 64)}…` : id);

/** Values for a message, each JSON-quoted: `"a", "b"`. */
export const quoted = (values: readonly string[]): string => values.map((v) => JSON.stringify(v)).join(', ');

/** How many problems a 400's `detail` names (`errors` lists up to MAX_LISTED_PROBLEMS). */
export const DETAIL_PROBLEMS = 10;

const byPath = (a: FieldProblem, b: FieldProblem): number => a.path.localeCompare(b.path, 'en', { numeric: true });

/**
 * The one 400 for invalid input: the problems in `errors`, sorted by path (numerically, so `/2` comes before
 * `/10`) and cut to MAX_LISTED_PROBLEMS, and the first DETAIL_PROBLEMS of them in `detail` with the count of
 * the rest, so no 400 grows with the request that caused it.
 */
export function invalid(problems: FieldProblem[], where: 'body' | 'query' = 'body'): AppError {
  const sorted = problems.map((p) => ({ path: p.path || '/', message: p.message })).sort(byPath);
  const named = sorted
    .slice(0, DETAIL_PROBLEMS)
    .map((p) => `${p.path} ${p.message}`)
    .join('; ');
  const more = sorted.length > DETAIL_PROBLEMS ? `; … and ${sorted.length - DETAIL_PROBLEMS} more` : '';
  return new AppError('request/invalid-body', `The request ${where} is invalid: ${named}${more}`, sorted.slice(0, MAX_LISTED_PROBLEMS));
}
