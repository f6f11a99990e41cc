import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import fastJsonStringify from 'fast-json-stringify';
import type { ValidateFunction } from 'ajv';
import type { FastifyBaseLogger, FastifyBodyParser, FastifyRequest } from 'fastify';
import { newId } from '../domain/ids.ts';
import type { Verifier, VerifyRequest } from '../services/verification/verifier.ts';
import { errorResponse } from './errors.ts';
import { invalid } from '../domain/errors.ts';
import { validationProblems } from './validation.ts';
import type { Metrics } from './metrics.ts';
import { ErrorEnvelope } from './schemas/common.ts';
import { VerifyKeyResult } from './schemas/keys.ts';
import { answerVerifyKey, VERIFY_PATH } from './v1/routes/keys.verify-key.ts';

/** Larger bodies are no verification anyone sends; Fastify's route takes them (up to BODY_LIMIT). */
export const LANE_MAX_BODY = 64 * 1024;

export interface VerifyLaneDeps {
  verifier: Verifier;
  /** The route's body schema, compiled by the Ajv that validates every body. */
  validate: ValidateFunction;
  /** Fastify's own application/json parser (`app.getDefaultJsonParser` with the app's poisoning settings): same rules, same errors. */
  parseJson: FastifyBodyParser<string>;
  metrics: Metrics;
  logger?: FastifyBaseLogger;
}

export interface VerifyLane {
  /** Answers the request and returns true, or returns false and leaves it untouched for Fastify. */
  take(req: IncomingMessage, res: ServerResponse): boolean;
  /** From now on every request goes to Fastify (which answers 503 while the server closes). */
  close(): void;
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
 * LANE_MAX_BODY, and every request once the server is closing.
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
  };
}

/** Answers one body the lane read, as the route would: parse, validate, verify, serialize, count in the metrics. */
function createAnswer({ verifier, validate, parseJson, metrics, logger }: VerifyLaneDeps) {
  const serializeResult = fastJsonStringify(VerifyKeyResult);
  const serializeError = fastJsonStringify(ErrorEnvelope);
  const parse = (text: string): unknown => {
    let failure: Error | null = null;
    let body: unknown;
    // The parser calls back synchronously and never looks at its request argument.
    parseJson(undefined as unknown as FastifyRequest, text, (err, parsed) => {
      failure = err;
      body = parsed;
    });
    if (failure) throw failure;
    return body;
  };

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
      if (!validate(body)) throw invalid(validationProblems(validate.errors ?? []));
      payload = serializeResult(await answerVerifyKey(verifier, body as VerifyRequest, requestId));
    } catch (err) {
      const failed = errorResponse(err, requestId, VERIFY_PATH, logger);
      status = failed.status;
      payload = serializeError(failed.body);
    }
    headers['content-length'] = Buffer.byteLength(payload);
    res.writeHead(status, headers);
    res.end(payload);
    metrics.observe(VERIFY_PATH, status, (performance.now() - started) / 1000);
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
    if (!lane()?.take(req, res)) fastify(req, res);
  });
  if (timeouts.requestTimeout !== undefined) server.requestTimeout = timeouts.requestTimeout;
  if (timeouts.keepAliveTimeout !== undefined) server.keepAliveTimeout = timeouts.keepAliveTimeout;
  if (timeouts.connectionTimeout !== undefined) server.setTimeout(timeouts.connectionTimeout);
  return server;
}
