import { isWellFormedRootKey } from './crypto/keys.ts';

/** The only reader of process.env: every setting, validated and typed, failing fast with a clear message. */
export interface Config {
  host: string;
  port: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `sqlite:<path>` or `postgres://…`. */
  databaseUrl: string;
  redisUrl?: string;
  bootstrapRootKey?: string;
}

export const DEFAULT_DATABASE_URL = 'sqlite:./data/keyhold.db';
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const port = Number(env.PORT || 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push(`PORT must be an integer 0..65535, got "${env.PORT}"`);
  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel'];
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  const databaseUrl = databaseUrlFrom(env, problems);
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) problems.push('REDIS_URL must start with redis:// or rediss://');
  const bootstrapRootKey = env.KEYHOLD_BOOTSTRAP_ROOT_KEY || undefined;
  // Never echo the value: it is a secret.
  if (bootstrapRootKey !== undefined && !isWellFormedRootKey(bootstrapRootKey)) {
    problems.push('KEYHOLD_BOOTSTRAP_ROOT_KEY must be kh_root_ followed by 22 to 64 base58 characters');
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n- ${problems.join('\n- ')}`);
  return {
    host: env.HOST || '127.0.0.1',
    port,
    logLevel,
    databaseUrl,
    redisUrl,
    bootstrapRootKey,
  };
}

/** DATABASE_URL alone, for the CLI, which needs nothing else. */
export function loadDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  const problems: string[] = [];
  const url = databaseUrlFrom(env, problems);
  if (problems.length) throw new ConfigError(`Invalid configuration:\n- ${problems.join('\n- ')}`);
  return url;
}

function databaseUrlFrom(env: NodeJS.ProcessEnv, problems: string[]): string {
  const url = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(url)) problems.push('DATABASE_URL must be sqlite:<path> or postgres://…');
  return url;
}
