import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_CATALOG, STATUS_TITLES, errorTypeUri, invalid, type ErrorKind } from '../domain/errors.ts';
import { isForeignKeyViolation, isStoreUnavailable } from '../store/errors.ts';
import { validationProblems, type AjvIssue } from './validation.ts';
import { discardRequestBody } from './connection-errors.ts';
import { isV2Path, v2ErrorResponse } from './v2/errors.ts';

/** Maps anything thrown during a request to a catalog kind. */
function classify(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = (err ?? {}) as FastifyError;
  if (e.validation) {
    return invalid(validationProblems(e.validation as unknown as AjvIssue[]), e.validationContext === 'querystring' ? 'query' : 'body');
  }
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('request/invalid-json', 'The body is not valid JSON');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('request/invalid-json', 'The body is empty but Content-Type is application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('request/body-too-large', 'The body is larger than this operation accepts (5 MiB; 64 KiB for keys.verifyKey)');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('request/unsupported-media-type', 'Bodies must be sent with Content-Type: application/json');
  }
  if (e.statusCode === 400) return new AppError('request/invalid-body', e.message);
  // Not logged per request: the runtime logs each outage once, when it starts and when it ends.
  if (isStoreUnavailable(err)) return new AppError('store/unavailable', 'The store did not answer in time; retry the request shortly');
  if (isForeignKeyViolation(err)) {
    return new AppError('data/conflict', 'A resource this request refers to was deleted while the request ran; nothing was changed');
  }
  return new AppError('internal', 'An internal error occurred; it has been logged with the request id');
}

/**
 * The error envelope (SPEC §2), the one body of every non-2xx answer wherever it is given (routes, the
 * lane, connection-level answers). Besides the problem-details members, `error` repeats what
 * Unkey v1 clients read: `message` (the detail), `docs` (the type URI) and `requestId` (meta.requestId).
 */
export function envelope(requestId: string, err: AppError) {
  const { status, code } = ERROR_CATALOG[err.kind];
  const type = errorTypeUri(err.kind);
  return {
    meta: { requestId },
    error: {
      title: STATUS_TITLES[status] ?? 'Error',
      detail: err.message,
      status,
      type,
      code,
      message: err.message,
      docs: type,
      requestId,
      ...(err.errors ? { errors: err.errors } : {}),
    },
  };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, kind: ErrorKind, detail: string) {
  const { status, body } = rendered(request.url, request.id, new AppError(kind, detail));
  return reply.code(status).send(body);
}

/** An error as the API version of `url` answers it: v2's envelope and statuses under /v2/, else the catalog's. */
function rendered(url: string, requestId: string, err: AppError): { status: number; body: object } {
  return isV2Path(url) ? v2ErrorResponse(requestId, err) : { status: err.status, body: envelope(requestId, err) };
}

/** The status and envelope answering anything thrown during a request; an internal failure is logged with the request id. */
export function errorResponse(err: unknown, requestId: string, url: string, log: FastifyBaseLogger | undefined) {
  const appErr = classify(err);
  if (appErr.kind === 'internal') log?.error({ err, requestId, url }, 'request failed');
  return rendered(url, requestId, appErr);
}

export async function errorHandler(err: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) {
  const { status, body } = errorResponse(err, request.id, request.url, request.log);
  // A body too large was not read: read and discard it first, so the client, still sending, gets the 413
  // instead of a connection reset when the connection closes.
  if (status === 413) await discardRequestBody(request.raw);
  return reply.code(status).send(body);
}
