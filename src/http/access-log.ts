import type { FastifyBaseLogger } from 'fastify';

/** One answered request as the access log records it: never a header, a body or a query string. */
export interface AccessLine {
  requestId: string;
  method: string;
  /** The route's path pattern (`/v1/keys.getKey`), or `unknown` when no route took the request (as in /metrics). */
  route: string;
  status: number;
  /** Time to respond, in milliseconds (two decimals). */
  ms: number;
}

/** Writes one access line: what the server does after each request when the access log is on (KEYHOLD_ACCESS_LOG). */
export type AccessLog = (line: AccessLine) => void;

/**
 * The access log, or undefined when it is off (callers then skip it: nothing is built per request).
 * Lines are pino lines at `info` with the message `request`; the request's own path and query are left out
 * on purpose, so that nothing a client put in them (a key by mistake) reaches the logs.
 */
export function createAccessLog(logger: FastifyBaseLogger | undefined, enabled: boolean): AccessLog | undefined {
  if (!enabled || !logger) return undefined;
  return (line) => logger.info({ ...line, ms: Math.round(line.ms * 100) / 100 }, 'request');
}
