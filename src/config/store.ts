import { dirname, resolve } from 'node:path';
import { ConfigError, databaseUrlProblem, redisUrlProblem } from './shapes.ts';
import { MasterKeyFormatError, parseMasterKeys, type MasterKey } from './master-keys.ts';

/** Where data is kept: the database, Redis, and the master keys that encrypt recoverable keys in it. */
export interface StoreConfig {
  /** DATABASE_URL: `sqlite:<path>` or `postgres://…`. */
  databaseUrl: string;
  /** REDIS_URL: shared rate-limit counters and cache invalidation across servers; unset: none. */
  redisUrl?: string;
  /** KEYHOLD_MASTER_KEYS, parsed (newest first); unset: see masterKeysFromConfig (src/crypto/master-keys.ts). */
  masterKeys?: MasterKey[];
}

export const DEFAULT_DATABASE_URL = 'sqlite:./data/keyhold.db';

/** DATABASE_URL, REDIS_URL and KEYHOLD_MASTER_KEYS; each invalid one adds a line to `problems`. */
export function storeFrom(env: NodeJS.ProcessEnv, problems: string[]): StoreConfig {
  const databaseUrl = databaseUrlFrom(env, problems);
  const redisUrl = env.REDIS_URL || undefined;
  const redisProblem = redisUrl && redisUrlProblem(redisUrl);
  if (redisProblem) problems.push(redisProblem);
  return { databaseUrl, redisUrl, masterKeys: masterKeysFrom(env, problems) };
}

/** A SQLite DATABASE_URL's directory (`./data` for `:memory:`), where master.key and the bootstrap key file live. */
export function sqliteDataDirectory(databaseUrl: string): string | undefined {
  if (!databaseUrl.startsWith('sqlite:')) return undefined;
  const path = databaseUrl.slice('sqlite:'.length);
  return path === ':memory:' ? resolve('data') : dirname(resolve(path));
}

/** DATABASE_URL alone, for the CLI, which needs nothing else. */
export function loadDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  const problems: string[] = [];
  const url = databaseUrlFrom(env, problems);
  if (problems.length) throw new ConfigError(problems);
  return url;
}

/** What the vault needs, for the CLI (`keyhold vault rotate`): DATABASE_URL and KEYHOLD_MASTER_KEYS. */
export function loadVaultConfig(env: NodeJS.ProcessEnv = process.env): Pick<StoreConfig, 'databaseUrl' | 'masterKeys'> {
  const problems: string[] = [];
  const databaseUrl = databaseUrlFrom(env, problems);
  const masterKeys = masterKeysFrom(env, problems);
  if (problems.length) throw new ConfigError(problems);
  return { databaseUrl, masterKeys };
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
