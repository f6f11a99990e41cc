import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { base58 } from '../domain/base58.ts';
import { KEY_BYTES } from './aead.ts';
import { MasterKeyFormatError, parseMasterKeys, type MasterKey } from '../config/master-keys.ts';
import { sqliteDataDirectory, type StoreConfig } from '../config/store.ts';
import { makeDirectory } from '../store/make-directory.ts';

/**
 * The vault's master keys (docs/secrets-at-rest.md): given in KEYHOLD_MASTER_KEYS (parsed in src/config/master-keys.ts),
 * or kept by the embedded default in a file in its data directory, in the same format. A master key never touches
 * the store, and no error here ever echoes key material.
 */

/** The file the embedded default keeps its master key in, inside the data directory. */
export const MASTER_KEY_FILE = 'master.key';

/** `<id>:<base64>`, the KEYHOLD_MASTER_KEYS form of one master key. */
export const formatMasterKey = (mk: MasterKey): string => `${mk.id}:${mk.key.toString('base64')}`;

/**
 * The embedded default's master keys: `<dataDir>/master.key` (one `<id>:<base64>` entry per line, newest
 * first, `#` comments; the KEYHOLD_MASTER_KEYS format). Created once, with mode 0600, when missing: `warn`
 * is called then (and when an existing file is readable by others), never with the key. Safe when several
 * processes start at once: the file is written aside and linked into place, so exactly one creation wins
 * and nobody reads a half-written file.
 */
export function loadOrCreateMasterKeyFile(dataDir: string, warn: (msg: string) => void): MasterKey[] {
  const path = join(dataDir, MASTER_KEY_FILE);
  let text = readIfExists(path);
  if (text === undefined) {
    makeDirectory(dataDir);
    const mk: MasterKey = { id: `mk_${base58(randomBytes(10), 14)}`, key: randomBytes(KEY_BYTES) };
    const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      writeFileSync(
        tmp,
        [
          `# Keyhold master key, generated ${new Date().toISOString()}. It encrypts the data keys of recoverable keys:`,
          '# keep it secret, back it up together with the database, and never change it in place.',
          '# Same format as KEYHOLD_MASTER_KEYS, one <id>:<base64> entry per line (newest first).',
          formatMasterKey(mk),
          '',
        ].join('\n'),
        { mode: 0o600, flag: 'wx' },
      );
      chmodSync(tmp, 0o600);
      linkSync(tmp, path);
      warn(
        `generated a new master key in ${path} (mode 0600): back it up with the database, since recoverable keys cannot be decrypted without it; set KEYHOLD_MASTER_KEYS to manage master keys yourself`,
      );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Another process created it first: use that one.
    } finally {
      rmSync(tmp, { force: true });
    }
    text = readFileSync(path, 'utf8');
  } else if (process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0) {
    warn(`${path} is readable by other users: restrict it with \`chmod 600 ${path}\``);
  }
  const value = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .join(',');
  try {
    return parseMasterKeys(value);
  } catch (err) {
    if (err instanceof MasterKeyFormatError) throw new MasterKeyFormatError(err.problems.map((p) => `${path}: ${p}`));
    throw err;
  }
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The master keys of the vault, the same for the server and the CLI: KEYHOLD_MASTER_KEYS when it is set; else,
 * on SQLite (the embedded default), the master key file next to the database file (`<data dir>/master.key`,
 * created with mode 0600 on first use; `warn` says so, never with the key); else (PostgreSQL without
 * KEYHOLD_MASTER_KEYS) none: a key generated on one node would leave every other node unable to decrypt, so
 * there is no vault and what needs one (recoverable keys, plaintext imports, decrypt) is refused with 412.
 */
export function masterKeysFromConfig(
  config: Pick<StoreConfig, 'databaseUrl' | 'masterKeys'>,
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

/** The master key file the embedded default relies on is unreadable or corrupt: `message` is one line, without key material. */
export class MasterKeyFileError extends Error {}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException)?.code ?? (err as Error)?.message ?? String(err);
