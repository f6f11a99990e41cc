import { join, resolve } from 'node:path';
import { isWellFormedRootKey } from '../domain/root-key-format.ts';
import { sqliteDataDirectory } from './store.ts';

/** The first start on an empty database: its `*` root key, and where a generated one is handed over. */
export interface BootstrapConfig {
  /** KEYHOLD_BOOTSTRAP_ROOT_KEY: the first workspace's root key; unset: one is generated (src/start/bootstrap-key.ts). */
  bootstrapRootKey?: string;
  /** KEYHOLD_BOOTSTRAP_KEY_FILE: where a generated bootstrap root key is written when stdout is not a terminal. */
  bootstrapKeyFile: string;
}

/** KEYHOLD_BOOTSTRAP_ROOT_KEY and KEYHOLD_BOOTSTRAP_KEY_FILE (default: beside a SQLite database, else ./data). */
export function bootstrapFrom(env: NodeJS.ProcessEnv, databaseUrl: string, problems: string[]): BootstrapConfig {
  const bootstrapRootKey = env.KEYHOLD_BOOTSTRAP_ROOT_KEY || undefined;
  // Never echo the value: it is a secret.
  if (bootstrapRootKey !== undefined && !isWellFormedRootKey(bootstrapRootKey)) {
    problems.push('KEYHOLD_BOOTSTRAP_ROOT_KEY must be kh_root_ followed by 22 to 64 base58 characters');
  }
  const bootstrapKeyFile = resolve(
    env.KEYHOLD_BOOTSTRAP_KEY_FILE || join(sqliteDataDirectory(databaseUrl) ?? 'data', 'bootstrap-root-key'),
  );
  return { bootstrapRootKey, bootstrapKeyFile };
}
