import { safeDecode } from '../config/shapes.ts';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { openRedis } from '../store/redis.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import { withDeadline } from '../store/deadline.ts';
import { SchemaTooNewError } from '../store/schema-version.ts';
import { makeDirectory } from '../store/make-directory.ts';
import { parseKeysDocument } from '../services/leaks/github-public-keys.ts';

/*
 * What the server checks before it bootstraps anything (src/server.ts): that it can listen where it was told to,
 * write its SQLite data directory, reach its database and Redis. Each failure is a StartError: one line that
 * names the setting and says how to fix it, never a stack trace and never a password.
 */

/** A start that cannot go on; `message` is the one line the operator reads. */
export class StartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartError';
  }
}

const codeOf = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

/** How long HOST may take to resolve: a name server that does not answer must not hold the start for long. */
const HOST_LOOKUP_TIMEOUT_MS = 3_000;

/** Binds HOST:PORT for a moment, so that a busy port or a wrong HOST stops the start before anything is created. */
export async function checkListenAddress(host: string, port: number): Promise<void> {
  const probe = createServer();
  try {
    await withDeadline(
      new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.listen({ host, port, exclusive: true }, resolve);
      }),
      HOST_LOOKUP_TIMEOUT_MS,
      () => Object.assign(new Error('lookup timed out'), { code: 'EAI_AGAIN' }),
    );
  } catch (err) {
    probe.close();
    throw new StartError(listenProblem(err, host, port));
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** One line for a failure to listen on HOST:PORT (the probe's, or the server's own listen). */
export function listenProblem(err: unknown, host: string, port: number): string {
  switch (codeOf(err)) {
    case 'EADDRINUSE':
      return `PORT ${port} on HOST ${host} is already in use: stop the process listening there, or set PORT (or HOST) to a free address`;
    case 'EADDRNOTAVAIL':
      return `HOST ${host} is not an address of this machine: set HOST to one of its addresses (127.0.0.1 for local clients only, 0.0.0.0 for all interfaces)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
    case 'EAI_FAIL':
      return `HOST "${host}" does not resolve to an address: set HOST to an IP address of this machine (127.0.0.1, or 0.0.0.0 for all interfaces)`;
    case 'EACCES':
    case 'EPERM':
      return `PORT ${port} on HOST ${host} needs privileges this process lacks (ports below 1024 usually do): set PORT to 1024 or above`;
    default:
      return `cannot listen on HOST ${host} PORT ${port} (${codeOf(err) ?? (err as Error)?.message}): check HOST and PORT`;
  }
}

/** Creates the SQLite data directory if needed and writes (then removes) a file in it, so that an unwritable one stops the start. */
export function checkDataDirectory(dir: string): void {
  const probe = join(dir, `.keyhold-write-check-${process.pid}`);
  try {
    makeDirectory(dir);
    writeFileSync(probe, '');
    rmSync(probe, { force: true });
  } catch (err) {
    throw new StartError(
      `DATABASE_URL: the SQLite data directory ${dir} cannot be created or written (${codeOf(err) ?? (err as Error).message}): make it writable by this user, or set DATABASE_URL=sqlite:<path> to a writable place`,
    );
  }
}

/** One line for a store that failed at start (its first statement or the schema migrations), naming DATABASE_URL without its password. */
export function storeProblem(err: unknown, databaseUrl: string): string {
  // Its message names both schema versions and the way out; it is no matter of DATABASE_URL.
  if (err instanceof SchemaTooNewError) return err.message;
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    const path = databaseUrl.replace(/^sqlite:/, '');
    return `DATABASE_URL: cannot use the SQLite database ${path} (${(err as Error)?.message ?? String(err)}): check the file and its directory, or set DATABASE_URL to another file`;
  }
  const url = new URL(databaseUrl);
  const where = `${url.hostname}:${url.port || 5432}`;
  const user = safeDecode(url.username) || '(default user)';
  const database = url.pathname.slice(1) || user;
  // Server messages never hold the password; a client-side one might quote the URL, so it is removed anyway.
  const password = safeDecode(url.password);
  const detail = String((err as Error)?.message ?? err);
  const message = password ? detail.replaceAll(password, '***') : detail;
  switch (codeOf(err)) {
    case '28000':
    case '28P01':
      return `DATABASE_URL: PostgreSQL at ${where} refused user "${user}" (${message}): fix the user or password in DATABASE_URL`;
    case '3D000':
      return `DATABASE_URL: database "${database}" does not exist on PostgreSQL at ${where}: create it (createdb ${database}) or fix the database name in DATABASE_URL`;
    case '42501':
      return `DATABASE_URL: user "${user}" may not create Keyhold's schema and tables in database "${database}" (${message}): grant it CREATE there, or use another user`;
  }
  if (isStoreUnavailable(err)) {
    return `DATABASE_URL: cannot reach PostgreSQL at ${where} (${codeOf(err) ?? message}): start it, or fix the host and port in DATABASE_URL`;
  }
  return `DATABASE_URL: PostgreSQL at ${where} failed at start (${message}): check DATABASE_URL and the database`;
}

/**
 * Connects to REDIS_URL once. Redis refusing the connection (a wrong password or database number) stops the
 * start: that never fixes itself. Redis not answering is an outage, which the server rides out (consistent
 * rate limits decide on the store, invalidation relies on the change feed, and it reconnects by itself): the
 * start goes on, and the returned line says so, for a warning.
 */
export async function checkRedis(redisUrl: string, timeoutMs = 2_000): Promise<string | undefined> {
  const url = new URL(redisUrl);
  const where = `${url.hostname}:${url.port || 6379}`;
  const redis = openRedis(redisUrl, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: timeoutMs });
  let failure: unknown;
  redis.on('error', (err: unknown) => {
    failure ??= err;
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    failure ??= err;
  } finally {
    redis.disconnect();
  }
  if (failure === undefined) return undefined;
  const message = (failure as Error)?.message ?? String(failure);
  if ((failure as Error)?.name === 'ReplyError') {
    throw new StartError(
      `REDIS_URL: Redis at ${where} refused the connection (${message}): fix the user, password or database number in REDIS_URL`,
    );
  }
  return `REDIS_URL: cannot reach Redis at ${where} (${codeOf(failure) ?? message}); starting without it until it answers: rate limits decide on the store and cache invalidation relies on the change feed`;
}

/**
 * An error nobody foresaw (a bug), as one line: its message's first line and where it was thrown, never the
 * stack trace. (server.ts removes the settings' secrets from every line it prints.)
 */
export function oneLine(err: unknown): string {
  const message = String((err as Error)?.message ?? err).split('\n')[0];
  const at = /\n\s+at (?:.*\()?(?:file:\/\/)?([^()\n]+?)\)?(?:\n|$)/.exec(String((err as Error)?.stack ?? ''))?.[1];
  return `unexpected error (please report it): ${(err as Error)?.name ?? 'Error'}: ${message}${at ? ` (at ${at})` : ''}`;
}

/** KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE must hold GitHub's keys document with at least one P-256 key. */
export function checkGithubKeysFile(file: string): void {
  let problem: string | undefined;
  try {
    if (parseKeysDocument(readFileSync(file, 'utf8')).size === 0) problem = 'it lists no P-256 public key';
  } catch (err) {
    problem = codeOf(err) ?? (err as Error).message;
  }
  if (problem) {
    throw new StartError(
      `KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE: cannot use ${file} (${problem}): save GitHub's secret scanning keys document there, or unset it to fetch the keys`,
    );
  }
}
