import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import fastJsonStringify from 'fast-json-stringify';
import type { FastifyBaseLogger, FastifyBodyParser } from 'fastify';
import { newId } from '../domain/ids.ts';
import { invalid } from '../domain/errors.ts';
import type { Caller } from '../services/caller.ts';
import { errorResponse } from './errors.ts';
import { isV2Path } from './v2/errors.ts';
import { V2ErrorEnvelope } from './v2/envelope.ts';
import { answerShuttingDown } from './connection-errors.ts';
import { validationProblems } from './validation.ts';
import { parseWith, type Validate } from './input-guards.ts';
import type { Metrics } from './metrics.ts';
import type { AccessLog } from './access-log.ts';
import type { RequestSpan, RequestTracing } from './request-tracing.ts';
import { ErrorEnvelope } from './schemas/common.ts';

/** Headers of one lane answer, in the order they are written (Content-Type first, then X-Request-Id). */
export type LaneHeaders = Record<string, string | number>;

/** One operation the lane answers: a POST path, built from its route's parts (lane-operations.ts). */
export interface LaneOperation {
  path: string;
  /** The largest body the lane takes for it: never more than its route's bodyLimit (larger ones go to Fastify). */
  maxBody: number;
  /** The route's body schema, compiled as every body's is (http/input-guards.ts). */
  validate: Validate;
  /** The route's 200 serializer (compiled from its response schema: nothing undeclared leaves). */
  serialize(result: unknown): string;
  /**
   * Before the body is parsed or validated, as the hooks authenticate (hooks.ts): the caller, or throws the
   * error to answer; headers it adds to that error's answer (Retry-After) go into `headers`. Absent: public.
   */
  authenticate?(req: IncomingMessage, requestId: string, headers: LaneHeaders): Promise<Caller>;
  /** The route's handler: the same service call with the valid body. */
  run(body: unknown, caller: Caller | undefined, requestId: string): Promise<unknown>;
}

export interface LaneDeps {
  operations: LaneOperation[];
  /** The app's application/json parser (Fastify's own, guarded as in http/input-guards.ts): same rules, same errors. */
  parseJson: FastifyBodyParser<string>;
  metrics: Metrics;
  logger?: FastifyBaseLogger;
  /** The access log, when it is on: one line per answered request, as the Fastify routes' (hooks.ts). */
  accessLog?: AccessLog;
  /** Request spans, when tracing is on: one per answered request, as the Fastify routes' (request-tracing.ts). */
  tracing?: RequestTracing;
}

export interface Lane {
  /** Answers the request and returns true, or returns false and leaves it untouched for Fastify. */
  take(req: IncomingMessage, res: ServerResponse): boolean;
  /** From now on the server answers every request with a 503 in the envelope (the server is closing). */
  close(): void;
  /** Whether close() was called. */
  readonly closing: boolean;
}

/**
 * The hot operations answered straight from Node's HTTP server (DESIGN "Hot path"): keys.verifyKey and
 * ratelimits.limit (lane-operations.ts).
 *
 * Their own work takes microseconds; Fastify's per-request machinery around it (request and reply objects,
 * the hook chain, the content-type parser, the reply pipeline) costs the server many times that. The lane
 * answers an operation from the same parts as its route: root-key authentication by the hooks' RootKeyGuard
 * before the body is parsed (the lane has read it: at most maxBody bytes), Fastify's JSON parser, the
 * route's body schema compiled by the same Ajv, the same service call, serializers compiled from the route's response schemas, the one error envelope, a fresh
 * request id in X-Request-Id, the same metrics and access log. Requests it does not take go to Fastify,
 * whose routes answer them: any other method or path (a query string included), a Content-Type other than
 * `application/json` (optionally with `charset=utf-8`), a body without Content-Length (chunked) or larger
 * than the operation's maxBody. Once the server is closing, every request gets the 503 of connection-errors.ts.
 *
 * A request is answered in the event loop's check phase (setImmediate), after every request that arrived
 * in the same poll phase has been read: under load the responses then leave in bursts, and the server and
 * its clients are woken once per burst instead of once per response. It costs a single request no
 * measurable latency and cut the server's CPU per cached verification from 43 to 27 µs
 * (`npm run bench`, verifyKey cached, no credits, SQLite).
 */
export function createLane(deps: LaneDeps): Lane {
  const { logger } = deps;
  const byPath = new Map(deps.operations.map((op) => [op.path, { op, answer: createAnswer(op, deps) }]));
  let closing = false;
  return {
    take(req, res) {
      if (closing || req.method !== 'POST') return false;
      const entry = byPath.get(req.url ?? '');
      if (entry === undefined) return false;
      const { headers } = req;
      const length = Number(headers['content-length'] ?? NaN);
      if (!(length <= entry.op.maxBody) || headers['transfer-encoding'] !== undefined || !isJson(headers['content-type'])) return false;
      const started = performance.now();
      const requestId = newId('req');
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () =>
        setImmediate(() => {
          const text = chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8');
          entry.answer(req, res, requestId, started, text).catch((err: unknown) => {
            logger?.error({ err, requestId, url: entry.op.path }, 'request failed');
            if (!res.headersSent) res.destroy();
          });
        }),
      );
      // A client that goes away mid-body gets no answer; Node closes the socket.
      req.on('error', () => {});
      return true;
    },
    close() {
      closing = true;
    },
    get closing() {
      return closing;
    },
  };
}

/** Answers one body the lane read, as the route would: authenticate, parse, validate, run, serialize, count in the metrics. */
function createAnswer(op: LaneOperation, { parseJson, metrics, logger, accessLog, tracing }: LaneDeps) {
  const { path } = op;
  // Errors take the envelope of the path's API version (http/errors.ts renders them so).
  const serializeError = fastJsonStringify(isV2Path(path) ? V2ErrorEnvelope : ErrorEnvelope);

  async function answer(req: IncomingMessage, res: ServerResponse, requestId: string, started: number, text: string, span?: RequestSpan) {
    let status = 200;
    let payload: string;
    let caller: Caller | undefined;
    const headers: LaneHeaders = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId };
    try {
      caller = op.authenticate ? await op.authenticate(req, requestId, headers) : undefined;
      let body: unknown;
      try {
        body = parseWith(parseJson, text);
      } catch (err) {
        headers.connection = 'close'; // as Fastify does after a body it could not parse
        throw err;
      }
      const checked = op.validate(body);
      if (checked !== true) throw invalid(validationProblems(checked.error));
      payload = op.serialize(await op.run(body, caller, requestId));
    } catch (err) {
      const failed = errorResponse(err, requestId, path, logger);
      status = failed.status;
      payload = serializeError(failed.body);
    }
    headers['content-length'] = Buffer.byteLength(payload);
    res.writeHead(status, headers);
    res.end(payload);
    const ms = performance.now() - started;
    metrics.observe(path, status, ms / 1000);
    accessLog?.({ requestId, method: 'POST', route: path, status, ms });
    span?.end(path, status, caller?.workspaceId);
  }

  if (!tracing) return answer;
  // Traced: the request's span is active while it is answered (its store statements are children of it).
  return (req: IncomingMessage, res: ServerResponse, requestId: string, started: number, text: string) => {
    const span = tracing.start('POST', req.headers, performance.timeOrigin + started);
    return span.activate(() => answer(req, res, requestId, started, text, span));
  };
}

function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const value = contentType.toLowerCase();
  return value === 'application/json' || value === 'application/json; charset=utf-8';
}

export interface ServerTimeouts {
  requestTimeout?: number;
  connectionTimeout?: number;
  keepAliveTimeout?: number;
}

/**
 * The HTTP server: the lane first, Fastify for every request it does not take. Fastify hands its options to
 * a server factory and leaves the server's timeouts to it: they are set here as Fastify sets them on its own
 * server.
 */
export function createLaneServer(
  fastify: (req: IncomingMessage, res: ServerResponse) => void,
  lane: () => Lane | undefined,
  timeouts: ServerTimeouts,
): Server {
  const server = createServer((req, res) => {
    const current = lane();
    if (current?.closing) answerShuttingDown(res);
    else if (!current?.take(req, res)) fastify(req, res);
  });
  if (timeouts.requestTimeout !== undefined) server.requestTimeout = timeouts.requestTimeout;
  if (timeouts.keepAliveTimeout !== undefined) server.keepAliveTimeout = timeouts.keepAliveTimeout;
  if (timeouts.connectionTimeout !== undefined) server.setTimeout(timeouts.connectionTimeout);
  return server;
}
