import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import fastJsonStringify from 'fast-json-stringify';
import type { FastifyBaseLogger, FastifyBodyParser } from 'fastify';
import { newId } from '../domain/ids.ts';
import type { Verifier, VerifyRequest } from '../services/verification/verifier.ts';
import { errorResponse } from './errors.ts';
import { answerShuttingDown } from './connection-errors.ts';
import { invalid } from '../domain/errors.ts';
import { validationProblems } from './validation.ts';
import { parseWith, type Validate } from './input-guards.ts';
import type { Metrics } from './metrics.ts';
import type { AccessLog } from './access-log.ts';
import { ErrorEnvelope } from './schemas/common.ts';
import { VerifyKeyResult } from './schemas/keys.ts';
import { answerVerifyKey, VERIFY_BODY_LIMIT, VERIFY_PATH } from './v1/routes/keys.verify-key.ts';

/** The lane takes bodies up to the operation's limit; Fastify's route answers larger ones with a 413. */
export const LANE_MAX_BODY = VERIFY_BODY_LIMIT;

export interface VerifyLaneDeps {
  verifier: Verifier;
  /** The route's body schema, compiled as every body's is (http/input-guards.ts). */
  validate: Validate;
  /** The app's application/json parser (Fastify's own, guarded as in http/input-guards.ts): same rules, same errors. */
  parseJson: FastifyBodyParser<string>;
  metrics: Metrics;
  logger?: FastifyBaseLogger;
  /** The access log, when it is on: one line per answered request, as the Fastify routes' (hooks.ts). */
  accessLog?: AccessLog;
}

export interface VerifyLane {
  /** Answers the request and returns true, or returns false and leaves it untouched for Fastify. */
  take(req: IncomingMessage, res: ServerResponse): boolean;
  /** From now on the server answers every request with a 503 in the envelope (the server is closing). */
  close(): void;
  /** Whether close() was called. */
  readonly closing: boolean;
}

/**
 * keys.verifyKey answered straight from Node's HTTP server: the hot path (DESIGN "Hot path").
 *
 * Verifying a cached key takes about a microsecond; Fastify's per-request machinery around it (request
 * and reply objects, the hook chain, the content-type parser, the reply pipeline) cost the server many
 * times that. This lane is the same operation built from the same parts: Fastify's JSON parser, the
 * route's body schema compiled by the same Ajv, the same Verifier and answer, serializers compiled from
 * the route's response schemas (nothing undeclared leaves), the one error envelope, a fresh request id in
 * X-Request-Id and the same metrics. Requests it does not take go to Fastify, whose route answers them:
 * any other method or path (a query string included), a Content-Type other than `application/json`
 * (optionally with `charset=utf-8`), a body without Content-Length (chunked) or larger than
 * LANE_MAX_BODY. Once the server is closing, every request gets the 503 of connection-errors.ts.
 *
 * A request is answered in the event loop's check phase (setImmediate), after every request that arrived
 * in the same poll phase has been read: under load the responses then leave in bursts, and the server and
 * its clients are woken once per burst instead of once per response. It costs a single request no
 * measurable latency and cut the server's CPU per cached verification from 43 to 27 µs
 * (`npm run bench`, verifyKey cached, no credits, SQLite).
 */
export function createVerifyLane(deps: VerifyLaneDeps): VerifyLane {
  const { logger } = deps;
  const answer = createAnswer(deps);
  let closing = false;
  return {
    take(req, res) {
      if (closing || req.method !== 'POST' || req.url !== VERIFY_PATH) return false;
      const { headers } = req;
      const length = Number(headers['content-length'] ?? NaN);
      if (!(length <= LANE_MAX_BODY) || headers['transfer-encoding'] !== undefined || !isJson(headers['content-type'])) return false;
      const started = performance.now();
      const requestId = newId('req');
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () =>
        setImmediate(() => {
          const text = chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8');
          answer(res, requestId, started, text).catch((err: unknown) => {
            logger?.error({ err, requestId, url: VERIFY_PATH }, 'request failed');
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

/** Answers one body the lane read, as the route would: parse, validate, verify, serialize, count in the metrics. */
function createAnswer({ verifier, validate, parseJson, metrics, logger, accessLog }: VerifyLaneDeps) {
  const serializeResult = fastJsonStringify(VerifyKeyResult);
  const serializeError = fastJsonStringify(ErrorEnvelope);
  const parse = (text: string): unknown => parseWith(parseJson, text);

  return async function answer(res: ServerResponse, requestId: string, started: number, text: string): Promise<void> {
    let status = 200;
    let payload: string;
    const headers: Record<string, string | number> = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId };
    try {
      let body: unknown;
      try {
        body = parse(text);
      } catch (err) {
        headers.connection = 'close'; // as Fastify does after a body it could not parse
        throw err;
      }
      const checked = validate(body);
      if (checked !== true) throw invalid(validationProblems(checked.error));
      payload = serializeResult(await answerVerifyKey(verifier, body as VerifyRequest, requestId));
    } catch (err) {
      const failed = errorResponse(err, requestId, VERIFY_PATH, logger);
      status = failed.status;
      payload = serializeError(failed.body);
    }
    headers['content-length'] = Buffer.byteLength(payload);
    res.writeHead(status, headers);
    res.end(payload);
    const ms = performance.now() - started;
    metrics.observe(VERIFY_PATH, status, ms / 1000);
    accessLog?.({ requestId, method: 'POST', route: VERIFY_PATH, status, ms });
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
 * The HTTP server: the verification lane first, Fastify for every request it does not take. Fastify hands
 * its options to a server factory and leaves the server's timeouts to it: they are set here as Fastify sets
 * them on its own server.
 */
export function createLaneServer(
  fastify: (req: IncomingMessage, res: ServerResponse) => void,
  lane: () => VerifyLane | undefined,
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
