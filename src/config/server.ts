import { booleanFrom, hostProblem, publicUrlProblem, wholeNumberFrom } from './shapes.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The server process: where it listens and is reached, what it logs, what it keeps in memory, what runs beside HTTP. */
export interface ServerConfig {
  /** HOST and PORT: where the server listens. */
  host: string;
  port: number;
  /** LOG_LEVEL. */
  logLevel: LogLevel;
  /** KEYHOLD_WORKERS: background jobs (key migrations) this server runs at once; 0: none (run `keyhold worker`). */
  workers: number;
  /** KEYHOLD_ACCESS_LOG: one log line per request; unset, on when LOG_LEVEL is debug or trace. */
  accessLog: boolean;
  /** KEYHOLD_AUTH_FAILURE_LIMIT: failed root-key authentications per client address and minute before 429; 0: no limit. */
  authFailureLimit: number;
  /** KEYHOLD_KEY_CACHE_SIZE: keys the verification cache holds at most (least recently used dropped first). */
  keyCacheSize: number;
  /** KEYHOLD_PUBLIC_URL: the address users reach this server at (dashboard sign-in links); default `http://HOST:PORT`. */
  publicUrl: string;
  /** Whether KEYHOLD_PUBLIC_URL is set (else publicUrl is the listen address). */
  publicUrlSet: boolean;
}

/** HOST, PORT, LOG_LEVEL and the KEYHOLD_* settings of the server process; each invalid one adds a line to `problems`. */
export function serverFrom(env: NodeJS.ProcessEnv, problems: string[]): ServerConfig {
  const host = env.HOST || '127.0.0.1';
  const badHost = hostProblem(host);
  if (badHost) problems.push(badHost);
  const port = Number(env.PORT || 8080);
  if (!/^\d{1,5}$/.test(env.PORT || '8080') || port > 65535) problems.push(`PORT must be a whole number 0..65535, got "${env.PORT}"`);
  const logLevel = (env.LOG_LEVEL || 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  return {
    host,
    port,
    logLevel,
    workers: workersFrom(env, problems),
    accessLog: booleanFrom(env, 'KEYHOLD_ACCESS_LOG', logLevel === 'debug' || logLevel === 'trace', problems),
    authFailureLimit: authFailureLimitFrom(env, problems),
    keyCacheSize: keyCacheSizeFrom(env, problems),
    publicUrl: publicUrlFrom(env, problems),
    publicUrlSet: publicUrlSet(env),
  };
}

/** Whether KEYHOLD_PUBLIC_URL is set. */
export const publicUrlSet = (env: NodeJS.ProcessEnv): boolean => (env.KEYHOLD_PUBLIC_URL ?? '').trim() !== '';

/**
 * KEYHOLD_PUBLIC_URL: an http(s) origin, without path, query or fragment (a trailing slash is dropped); unset,
 * `http://HOST:PORT` (with HOST 127.0.0.1 and PORT 8080 when those are unset, as the server listens).
 */
export function publicUrlFrom(env: NodeJS.ProcessEnv, problems: string[]): string {
  const value = (env.KEYHOLD_PUBLIC_URL ?? '').trim();
  if (value === '') return `http://${env.HOST || '127.0.0.1'}:${env.PORT || 8080}`;
  const problem = publicUrlProblem(value);
  if (problem) problems.push(problem);
  return problem ? value : value.replace(/\/+$/, '');
}

/**
 * About 450 bytes of heap per cached key (measured with 100,000 keys, sharing their API, roles and
 * permissions), so the default keeps a server with 100,000 cached keys well under 250 MB of RSS.
 */
export const DEFAULT_KEY_CACHE_SIZE = 100_000;
const MAX_KEY_CACHE_SIZE = 10_000_000;

function keyCacheSizeFrom(env: NodeJS.ProcessEnv, problems: string[]): number {
  const range = { min: 1, max: MAX_KEY_CACHE_SIZE };
  return wholeNumberFrom(
    env,
    'KEYHOLD_KEY_CACHE_SIZE',
    DEFAULT_KEY_CACHE_SIZE,
    range,
    'the number of keys the verification cache holds',
    problems,
  );
}

export const DEFAULT_AUTH_FAILURE_LIMIT = 100;

function authFailureLimitFrom(env: NodeJS.ProcessEnv, problems: string[]): number {
  const what = 'the failed authentications allowed per client address and minute (0: no limit)';
  return wholeNumberFrom(env, 'KEYHOLD_AUTH_FAILURE_LIMIT', DEFAULT_AUTH_FAILURE_LIMIT, { min: 0, max: 999_999_999 }, what, problems);
}

export const DEFAULT_WORKERS = 4;

/** KEYHOLD_WORKERS: unset or `true` → DEFAULT_WORKERS; `0` or `false` → no worker in the server; `N` (1..64) → N jobs at once. */
function workersFrom(env: NodeJS.ProcessEnv, problems: string[]): number {
  const value = (env.KEYHOLD_WORKERS ?? '').trim().toLowerCase();
  if (value === '' || value === 'true') return DEFAULT_WORKERS;
  if (value === 'false') return 0;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 64) {
    problems.push(`KEYHOLD_WORKERS must be true, false or the number of jobs run at once (0..64), got "${env.KEYHOLD_WORKERS}"`);
    return 0;
  }
  return n;
}
