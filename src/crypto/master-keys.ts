import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { base58 } from '../domain/base58.ts';
import { KEY_BYTES } from './aead.ts';
import { makeDirectory } from '../store/make-directory.ts';

/**
 * the vault's master keys (docs/secrets-at-rest.md): parsed from KEYHOLD_MASTER_KEYS, or kept by the embedded default in a
 * file in its data directory. A master key never touches the store, and no error here ever echoes key
 * material.
 */

/** A master key: `id` is stored next to every data key it wraps, so it must never be reused for other key material. */
export interface MasterKey {
  id: string;
  key: Buffer /* 32 bytes */;
}

/** A KEYHOLD_MASTER_KEYS value (or master key file) that cannot be used; `problems` lists each one. */
export class MasterKeyFormatError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('; '));
    this.name = 'MasterKeyFormatError';
    this.problems = problems;
  }
}

const MASTER_KEY_ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const BASE64_RE = /^[A-Za-z0-9+/]+={0,2}$/;

/** The file the embedded default keeps its master key in, inside the data directory. */
export const MASTER_KEY_FILE = 'master.key';

/**
 * Parses KEYHOLD_MASTER_KEYS: comma-separated `<id>:<key>` entries, newest first. `<id>` is 1..64 characters
 * of `A-Z a-z 0-9 _ . -` and unique; `<key>` is standard base64 of exactly 32 bytes (`openssl rand -base64 32`).
 * Whitespace around entries is ignored. Every problem is reported; key material is never echoed.
 */
export function parseMasterKeys(value: string): MasterKey[] {
  const problems: string[] = [];
  const keys: MasterKey[] = [];
  const entries = value.split(',').map((e) => e.trim());
  if (entries.length === 1 && entries[0] === '')
    throw new MasterKeyFormatError(['no master key given: expected <id>:<base64 of 32 bytes>[,<id>:<base64>…]']);
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    const where = `entry ${i + 1}`;
    if (entry === '') {
      problems.push(`${where} is empty`);
      return;
    }
    const colon = entry.indexOf(':');
    if (colon === -1) {
      problems.push(`${where} must be <id>:<base64 of 32 bytes>`);
      return;
    }
    const id = entry.slice(0, colon).trim();
    const material = entry.slice(colon + 1).trim();
    let ok = true;
    if (!MASTER_KEY_ID_RE.test(id)) {
      problems.push(`${where}: the id must be 1..64 characters of A-Z a-z 0-9 _ . -`);
      ok = false;
    } else if (seen.has(id)) {
      problems.push(`${where}: id "${id}" is listed more than once`);
      ok = false;
    }
    seen.add(id);
    const key = Buffer.from(material, 'base64');
    const canonical = BASE64_RE.test(material) && key.toString('base64').replace(/=+$/, '') === material.replace(/=+$/, '');
    if (!canonical || key.length !== KEY_BYTES) {
      problems.push(
        `${where}${MASTER_KEY_ID_RE.test(id) ? ` (id "${id}")` : ''}: the key must be standard base64 of exactly ${KEY_BYTES} bytes (e.g. \`openssl rand -base64 32\`)`,
      );
      ok = false;
    }
    if (ok) keys.push({ id, key });
  });
  if (problems.length) throw new MasterKeyFormatError(problems);
  return keys;
}

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
