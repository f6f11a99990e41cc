import type { Socket } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, type ErrorKind } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { envelope } from './errors.ts';

// Answers given outside Fastify's request cycle, in the same envelope with a request id: to a connection
// that never became a request (headers too large, not HTTP, too slow), and to requests that arrive while the
// server closes.

const CLIENT_ERRORS: Record<string, [ErrorKind, string]> = {
  HPE_HEADER_OVERFLOW: ['request/headers-too-large', 'The request line and headers are larger than 16 KiB (a long query string?)'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request/timeout', 'The request did not arrive completely in time'],
  ERR_HTTP_HEADERS_TIMEOUT: ['request/timeout', 'The request headers did not arrive completely in time'],
};

/** Node's `clientError`: answers in the envelope (431, 408 or 400) and closes the connection, as HTTP asks. */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [kind, detail] = CLIENT_ERRORS[err.code ?? ''] ?? ['request/malformed', 'The request is not valid HTTP/1.1'];
  const requestId = newId('req');
  const error = new AppError(kind, detail);
  const answer = envelope(requestId, error);
  const body = JSON.stringify(answer);
  const head = [
    `HTTP/1.1 ${error.status} ${answer.error.title}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}

/** The 503 for a request that arrives while the server closes (the connection is closed after it). */
export function answerShuttingDown(res: ServerResponse): void {
  const requestId = newId('req');
  const body = JSON.stringify(
    envelope(requestId, new AppError('server/shutting-down', 'This server is shutting down; send the request again')),
  );
  res.writeHead(503, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': requestId,
    connection: 'close',
  });
  res.end(body);
}

/** How much of a refused body is read to let its sender finish, and for how long, before the connection is cut. */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024;
const DISCARD_MAX_MS = 10_000;

/** Reads what is left of a request body and drops it; resolves at its end, or at the byte or time bound. */
export function discardRequestBody(raw: IncomingMessage): Promise<void> {
  if (raw.complete || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let read = 0;
    const done = () => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', done);
      raw.off('error', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > DISCARD_MAX_BYTES) done();
    };
    const timer = setTimeout(done, DISCARD_MAX_MS);
    raw.on('data', onData);
    raw.on('end', done);
    raw.on('error', done);
    raw.resume();
  });
}
