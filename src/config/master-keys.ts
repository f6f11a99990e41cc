/*
 * KEYHOLD_MASTER_KEYS (docs/secrets-at-rest.md): the vault's master keys, newest first. The same format is the
 * embedded default's master key file (src/crypto/master-keys.ts), read with the same parser. No problem ever
 * echoes key material.
 */

/** A master key is an AES-256 key (the vault's KEY_BYTES, src/crypto/aead.ts; test/config/config.test.ts checks they agree). */
export const MASTER_KEY_BYTES = 32;

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
    if (!canonical || key.length !== MASTER_KEY_BYTES) {
      problems.push(
        `${where}${MASTER_KEY_ID_RE.test(id) ? ` (id "${id}")` : ''}: the key must be standard base64 of exactly ${MASTER_KEY_BYTES} bytes (e.g. \`openssl rand -base64 32\`)`,
      );
      ok = false;
    }
    if (ok) keys.push({ id, key });
  });
  if (problems.length) throw new MasterKeyFormatError(problems);
  return keys;
}
