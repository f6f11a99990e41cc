import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_CATALOG, STATUS_TITLES, errorTypeUri, type ErrorKind, type FieldProblem } from '../domain/errors.ts';
import { isForeignKeyViolation } from '../store/errors.ts';

interface AjvIssue { instancePath: string; keyword: string; params: Record<string, unknown>; message?: string }

/** Every failed validation rule, with the JSON path of the offending member. */
export function validationProblems(issues: AjvIssue[]): FieldProblem[] {
  return issues.map((i) => {
    const path = i.keyword === 'required' ? `${i.instancePath}/${String(i.params.missingProperty)}` : i.instancePath;
    let message = i.message ?? 'is invalid';
    if (i.keyword === 'enum' || i.keyword === 'const') message += `: ${JSON.stringify(i.params.allowedValues ?? i.params.allowedValue)}`;
    return { path: path || '/', message };
  });
}

const invalidRequest = (where: string, problems: FieldProblem[]): AppError =>
  new AppError('request/invalid-body', `The request ${where} is invalid: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`, problems);

/** The 400 for a body its schema rejected, listing every failed rule. */
export const invalidBody = (issues: AjvIssue[]): AppError => invalidRequest('body', validationProblems(issues));

/**
 * For routes with `attachValidation` and rules across fields that a schema cannot state: when the schema
 * failed, throws one 400 listing its problems together with the cross-field ones, so every problem is
 * reported at once. (When the schema passed, the service checks the cross-field rules itself.)
 */
export function rejectInvalidBody<B>(request: FastifyRequest, crossFieldProblems: (body: B) => FieldProblem[]): void {
  const err = request.validationError as (Error & { validation?: AjvIssue[] }) | undefined;
  if (!err) return;
  if (!err.validation) throw err;
  throw invalidRequest('body', [...validationProblems(err.validation), ...crossFieldProblems(request.body as B)]);
}

/** Maps anything thrown during a request to a catalog kind. */
function classify(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = (err ?? {}) as FastifyError;
  if (e.validation) {
    const where = e.validationContext === 'querystring' ? 'query' : e.validationContext ?? 'body';
    return invalidRequest(where, validationProblems(e.validation as unknown as AjvIssue[]));
  }
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY': return new AppError('request/invalid-json', 'The body is not valid JSON');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return new AppError('request/invalid-json', 'The body is empty but Content-Type is application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return new AppError('request/body-too-large', 'The body is larger than 5 MiB');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return new AppError('request/unsupported-media-type', 'Bodies must be sent with Content-Type: application/json');
  }
  if (e.statusCode === 400) return new AppError('request/invalid-body', e.message);
  if (isForeignKeyViolation(err)) {
    return new AppError('data/conflict', 'A resource this request refers to was deleted while the request ran; nothing was changed');
  }
  return new AppError('internal', 'An internal error occurred; it has been logged with the request id');
}

export function envelope(requestId: string, err: AppError) {
  const { status, code } = ERROR_CATALOG[err.kind];
  return {
    meta: { requestId },
    error: {
      title: STATUS_TITLES[status] ?? 'Error',
      detail: err.message,
      status,
      type: errorTypeUri(err.kind),
      code,
      ...(err.errors ? { errors: err.errors } : {}),
    },
  };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, kind: ErrorKind, detail: string) {
  const err = new AppError(kind, detail);
  return reply.code(err.status).send(envelope(request.id, err));
}

/** The status and envelope answering anything thrown during a request; an internal failure is logged with the request id. */
export function errorResponse(err: unknown, requestId: string, url: string, log: FastifyBaseLogger | undefined) {
  const appErr = classify(err);
  if (appErr.kind === 'internal') log?.error({ err, requestId, url }, 'request failed');
  return { status: appErr.status, body: envelope(requestId, appErr) };
}

export function errorHandler(err: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) {
  const { status, body } = errorResponse(err, request.id, request.url, request.log);
  return reply.code(status).send(body);
}
