import { dirname, join, resolve } from 'node:path';
import { databaseUrlProblem, hostProblem, publicUrlProblem, redisUrlProblem, secretsIn, wholeNumberFrom } from './config-shapes.ts';
import { isWellFormedRootKey } from './crypto/keys.ts';
import { leakConfigFrom, type LeakConfig } from './config-leaks.ts';
import { webhooksFrom } from './config-webhooks.ts';
import { retentionFrom, type RetentionConfig } from './config-retention.ts';
import { analyticsFrom, type AnalyticsConfig } from './config-analytics.ts';
import { oidcFrom, oidcSecrets, type OidcConfig } from './config-oidc.ts';
import { loadOrCreateMasterKeyFile, MASTER_KEY_FILE, MasterKeyFormatError, parseMasterKeys, type MasterKey } from './crypto/master-keys.ts';

export type { RetentionConfig } from './config-retention.ts';

/** The only reader of process.env: every setting, validated and typed, failing fast with a clear message. */
export interface Config {
  host: string;
  port: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `sqlite:<path>` or `postgres://…`. */
  databaseUrl: string;
  redisUrl?: string;
  bootstrapRootKey?: string;
  /** KEYHOLD_MASTER_KEYS, parsed (newest first); unset: see masterKeysFromConfig. */
  masterKeys?: MasterKey[];
  /** KEYHOLD_WORKERS: background jobs (key migrations) this server runs at once; 0: none (run `keyhold worker`). */
  workers: number;
  /** KEYHOLD_ACCESS_LOG: one log line per request; unset, on when LOG_LEVEL is debug or trace. */
  accessLog: boolean;
  /** KEYHOLD_AUTH_FAILURE_LIMIT: failed root-key authentications per client address and minute before 429; 0: no limit. */
  authFailureLimit: number;
  /** KEYHOLD_BOOTSTRAP_KEY_FILE: where a generated bootstrap root key is written when stdout is not a terminal. */
  bootstrapKeyFile: string;
  /** KEYHOLD_KEY_CACHE_SIZE: keys the verification cache holds at most (least recently used dropped first). */
  keyCacheSize: number;
  /** KEYHOLD_PUBLIC_URL: the address users reach this server at (dashboard sign-in links); default `http://HOST:PORT`. */
  publicUrl: string;
  /** How long data that grows with traffic or time is kept, and how often the background pass prunes it. */
  retention: RetentionConfig;
  /** KEYHOLD_ANALYTICS and KEYHOLD_REGION (config-analytics.ts). */
  analytics: AnalyticsConfig;
  leaks: LeakConfig; // KEYHOLD_LEAKED_KEY_ACTION and GitHub secret scanning (config-leaks.ts)
  webhooks: ReturnType<typeof webhooksFrom>;
  /** Single sign-on to the dashboard (KEYHOLD_OIDC_*, in config-oidc.ts); off when KEYHOLD_OIDC_ISSUER is unset. */
  oidc?: OidcConfig;
}

export const DEFAULT_DATABASE_URL = 'sqlite:./data/keyhold.db';
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Settings that are invalid: `problems` holds one line per problem, each naming its setting and the fix. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string | string[]) {
    const list = typeof problems === 'string' ? [problems] : problems;
    super(list.join('\n'));
    this.problems = list;
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const host = env.HOST || '127.0.0.1';
  const badHost = hostProblem(host);
  if (badHost) problems.push(badHost);
  const port = Number(env.PORT || 8080);
  if (!/^\d{1,5}$/.test(env.PORT || '8080') || port > 65535) problems.push(`PORT must be a whole number 0..65535, got "${env.PORT}"`);
  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel'];
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  const databaseUrl = databaseUrlFrom(env, problems);
  const redisUrl = env.REDIS_URL || undefined;
  const redisProblem = redisUrl && redisUrlProblem(redisUrl);
  if (redisProblem) problems.push(redisProblem);
  const bootstrapRootKey = env.KEYHOLD_BOOTSTRAP_ROOT_KEY || undefined;
  // Never echo the value: it is a secret.
  if (bootstrapRootKey !== undefined && !isWellFormedRootKey(bootstrapRootKey)) {
    problems.push('KEYHOLD_BOOTSTRAP_ROOT_KEY must be kh_root_ followed by 22 to 64 base58 characters');
  }
  const masterKeys = masterKeysFrom(env, problems);
  const workers = workersFrom(env, problems);
  const accessLog = booleanFrom(env, 'KEYHOLD_ACCESS_LOG', logLevel === 'debug' || logLevel === 'trace', problems);
  const authFailureLimit = authFailureLimitFrom(env, problems);
  const keyCacheSize = keyCacheSizeFrom(env, problems);
  const publicUrl = publicUrlFrom(env, problems);
  const [retention, leaks, webhooks] = [retentionFrom(env, problems), leakConfigFrom(env, problems), webhooksFrom(env, problems)];
  const oidc = oidcFrom(env, problems);
  const analytics = analyticsFrom(env, problems);
  if (problems.length) throw new ConfigError(problems);
  return {
    host,
    port,
    logLevel,
    databaseUrl,
    redisUrl,
    bootstrapRootKey,
    masterKeys,
    workers,
    accessLog,
    authFailureLimit,
    bootstrapKeyFile: resolve(env.KEYHOLD_BOOTSTRAP_KEY_FILE || join(sqliteDataDirectory(databaseUrl) ?? 'data', 'bootstrap-root-key')),
    keyCacheSize,
    publicUrl,
    retention,
    analytics,
    leaks,
    webhooks,
    oidc,
  };
}

/** The retention settings alone, for the CLI (`keyhold maintenance prune`). */
export function loadRetentionConfig(env: NodeJS.ProcessEnv = process.env): RetentionConfig {
  const problems: string[] = [];
  const retention = retentionFrom(env, problems);
  if (problems.length) throw new ConfigError(problems);
  return retention;
}

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

/** `true`/`false` (any case, also `1`/`0`); unset or empty: `fallback`. */
function booleanFrom(env: NodeJS.ProcessEnv, name: string, fallback: boolean, problems: string[]): boolean {
  const value = (env[name] ?? '').trim().toLowerCase();
  if (value === '') return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  problems.push(`${name} must be true or false, got "${env[name]}"`);
  return fallback;
}

export const DEFAULT_AUTH_FAILURE_LIMIT = 100;

function authFailureLimitFrom(env: NodeJS.ProcessEnv, problems: string[]): number {
  const what = 'the failed authentications allowed per client address and minute (0: no limit)';
  return wholeNumberFrom(env, 'KEYHOLD_AUTH_FAILURE_LIMIT', DEFAULT_AUTH_FAILURE_LIMIT, { min: 0, max: 999_999_999 }, what, problems);
}

/** A SQLite DATABASE_URL's directory (`./data` for `:memory:`), where master.key and the bootstrap key file live. */
export function sqliteDataDirectory(databaseUrl: string): string | undefined {
  if (!databaseUrl.startsWith('sqlite:')) return undefined;
  const path = databaseUrl.slice('sqlite:'.length);
  return path === ':memory:' ? resolve('data') : dirname(resolve(path));
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

/** What the vault needs, for the CLI (`keyhold vault rotate`): DATABASE_URL and KEYHOLD_MASTER_KEYS. */
export function loadVaultConfig(env: NodeJS.ProcessEnv = process.env): Pick<Config, 'databaseUrl' | 'masterKeys'> {
  const problems: string[] = [];
  const databaseUrl = databaseUrlFrom(env, problems);
  const masterKeys = masterKeysFrom(env, problems);
  if (problems.length) throw new ConfigError(problems);
  return { databaseUrl, masterKeys };
}

/**
 * The master keys of the vault, the same for the server and the CLI: KEYHOLD_MASTER_KEYS when it is set; else,
 * on SQLite (the embedded default), the master key file next to the database file (`<data dir>/master.key`,
 * created with mode 0600 on first use; `warn` says so, never with the key); else (PostgreSQL without
 * KEYHOLD_MASTER_KEYS) none: a key generated on one node would leave every other node unable to decrypt, so
 * there is no vault and what needs one (recoverable keys, plaintext imports, decrypt) is refused with 412.
 */
export function masterKeysFromConfig(
  config: Pick<Config, 'databaseUrl' | 'masterKeys'>,
  warn: (msg: string) => void,
): MasterKey[] | undefined {
  if (config.masterKeys) return config.masterKeys;
  const dataDir = sqliteDataDirectory(config.databaseUrl);
  if (!dataDir) return undefined;
  try {
    return loadOrCreateMasterKeyFile(dataDir, warn);
  } catch (err) {
    // Valid settings (none) but an unusable file: the server's exit 1, never an echo of the file's content.
    const why = err instanceof MasterKeyFormatError ? err.problems.join('; ') : `${join(dataDir, MASTER_KEY_FILE)}: ${codeOf(err)}`;
    throw new MasterKeyFileError(
      `KEYHOLD_MASTER_KEYS is unset and the master key file cannot be used (${why}): restore the file from the backup taken with the database, or set KEYHOLD_MASTER_KEYS`,
    );
  }
}

/** The secrets among the settings (URL passwords, master keys, bootstrap root key, OIDC client secret), never to be printed. */
export const settingSecrets = (env: NodeJS.ProcessEnv = process.env): string[] => [
  ...secretsIn({ urls: [env.DATABASE_URL, env.REDIS_URL], masterKeys: env.KEYHOLD_MASTER_KEYS, rootKey: env.KEYHOLD_BOOTSTRAP_ROOT_KEY }),
  ...oidcSecrets(env),
];

/** The master key file the embedded default relies on is unreadable or corrupt: `message` is one line, without key material. */
export class MasterKeyFileError extends Error {}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException)?.code ?? (err as Error)?.message ?? String(err);

/** DATABASE_URL alone, for the CLI, which needs nothing else. */
export function loadDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  const problems: string[] = [];
  const url = databaseUrlFrom(env, problems);
  if (problems.length) throw new ConfigError(problems);
  return url;
}

function masterKeysFrom(env: NodeJS.ProcessEnv, problems: string[]): MasterKey[] | undefined {
  const value = env.KEYHOLD_MASTER_KEYS;
  if (!value) return undefined;
  try {
    return parseMasterKeys(value);
  } catch (err) {
    // The problems name entries and ids, never key material.
    if (err instanceof MasterKeyFormatError) {
      problems.push(...err.problems.map((p) => `KEYHOLD_MASTER_KEYS: ${p}`));
      return undefined;
    }
    throw err;
  }
}

function databaseUrlFrom(env: NodeJS.ProcessEnv, problems: string[]): string {
  const url = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const problem = databaseUrlProblem(url);
  if (problem) problems.push(problem);
  return url;
}
