import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { base58 } from '../domain/base58.ts';
import { AppError } from '../domain/errors.ts';
import type { Db, Executor } from '../store/store.ts';

/**
 * Envelope encryption of recoverable keys (SPEC §7).
 *
 * - A **master key** (32 bytes, from KEYHOLD_MASTER_KEYS or the embedded default's file) never touches the
 *   store. The first configured master key wraps new data keys; every configured one can unwrap.
 * - A **data key** (32 random bytes) belongs to one workspace. It is stored wrapped (AES-256-GCM under a
 *   master key) in `data_keys`, with the id of that master key. A workspace has one data key per master key
 *   it was created under: its id is derived from (workspace id, master key id), so concurrent first uses
 *   insert the same row and exactly one wins (`INSERT … ON CONFLICT DO NOTHING`, then read what won).
 *   The current data key of a workspace is the one created under the first master key.
 * - A **ciphertext** is AES-256-GCM under a data key. Both layers are `base64(nonce(12) | ciphertext | tag(16))`
 *   with a fresh random nonce, and bind their context as additional authenticated data: a wrapped data key
 *   to its workspace and id, a ciphertext to its workspace and data-key id, so a ciphertext (or a wrapped
 *   data key) copied to another workspace or row does not decrypt.
 * - `rotate` re-wraps every data key that is not under the first master key; ciphertexts are untouched.
 *
 * No plaintext, data key or master key ever appears in an error message: errors name ids only.
 */

/** A master key: `id` is stored next to every data key it wraps, so it must never be reused for other key material. */
export interface MasterKey { id: string; key: Buffer /* 32 bytes */ }
/** A sealed secret: the data key it is encrypted under, and `base64(nonce(12) | ciphertext | tag(16))`. */
export interface Sealed { dataKeyId: string; ciphertext: string }

export interface Vault {
  /**
   * Encrypts under the workspace's current data key, in the same order. Creates that data key on first use
   * (race-safe: concurrent first uses, in any process, end up with one data key) through `db`, which may be
   * a transaction: the data key then commits or rolls back with it.
   */
  encrypt(db: Executor, workspaceId: string, plaintexts: string[]): Promise<Sealed[]>;
  /** Decrypts, in the same order. Throws a VaultError when any item does not authenticate in this workspace. */
  decrypt(db: Executor, workspaceId: string, sealed: Sealed[]): Promise<string[]>;
  /** Re-wraps every data key that is not under the first master key (safe to run concurrently and to re-run). */
  rotate(db: Db): Promise<{ rewrapped: number }>;
}

/** A failure of the vault (unknown master key, ciphertext that does not authenticate, …). Its message names ids, never secrets. */
export class VaultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VaultError';
  }
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

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const MASTER_KEY_ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const BASE64_RE = /^[A-Za-z0-9+/]+={0,2}$/;
/** Unwrapped data keys kept in memory; least recently used ones are dropped beyond this. */
const CACHE_SIZE = 1024;

/** The file the embedded default keeps its master key in, inside the data directory. */
export const MASTER_KEY_FILE = 'master.key';

const wrapAad = (workspaceId: string, dataKeyId: string) => Buffer.from(`keyhold/v1/data-key\0${workspaceId}\0${dataKeyId}`);
const sealAad = (workspaceId: string, dataKeyId: string) => Buffer.from(`keyhold/v1/secret\0${workspaceId}\0${dataKeyId}`);

function seal(key: Buffer, plaintext: Buffer, aad: Buffer): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64');
}

/** The plaintext, or undefined when the input is malformed or does not authenticate under this key and context. */
function open(key: Buffer, sealed: string, aad: Buffer): Buffer | undefined {
  const buf = Buffer.from(sealed, 'base64');
  if (buf.length < NONCE_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(buf.subarray(buf.length - TAG_BYTES));
    return Buffer.concat([decipher.update(buf.subarray(NONCE_BYTES, buf.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return undefined;
  }
}

/** The id of the data key a workspace gets under a master key: deterministic, so concurrent creations collide on the primary key. */
function dataKeyIdFor(workspaceId: string, masterKeyId: string): string {
  const digest = createHash('sha256').update(`keyhold/v1/data-key-id\0${workspaceId}\0${masterKeyId}`).digest();
  return `dk_${base58(digest.subarray(0, 16), 22)}`;
}

interface DataKeyRecord { id: string; master_key_id: string; wrapped: string }

/** `masterKeys[0]` wraps new data keys (and is what `rotate` re-wraps under); any listed key unwraps. */
export function createVault(masterKeys: MasterKey[]): Vault {
  if (masterKeys.length === 0) throw new VaultError('the vault needs at least one master key');
  for (const mk of masterKeys) {
    if (mk.key.length !== KEY_BYTES) throw new VaultError(`master key "${mk.id}" must be ${KEY_BYTES} bytes`);
  }
  const primary = masterKeys[0];
  const byId = new Map(masterKeys.map((mk) => [mk.id, mk]));
  // Keyed by id and wrapped form: a data key row that was rolled back and re-created with other material,
  // or re-wrapped by a rotation, is a different entry, so the cache can never serve stale key material.
  const cache = new Map<string, Buffer>();

  const unwrap = (workspaceId: string, row: DataKeyRecord): Buffer => {
    const cacheKey = `${row.id}\0${row.wrapped}`;
    const hit = cache.get(cacheKey);
    if (hit) {
      cache.delete(cacheKey);
      cache.set(cacheKey, hit);
      return hit;
    }
    const mk = byId.get(row.master_key_id);
    if (!mk) {
      throw new VaultError(`data key ${row.id} is wrapped by master key "${row.master_key_id}", which is not configured (KEYHOLD_MASTER_KEYS)`);
    }
    const key = open(mk.key, row.wrapped, wrapAad(workspaceId, row.id));
    if (!key || key.length !== KEY_BYTES) {
      throw new VaultError(`data key ${row.id} does not unwrap with master key "${mk.id}" (another key under the same id, or a damaged row)`);
    }
    cache.set(cacheKey, key);
    if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
    return key;
  };

  const currentDataKey = async (db: Executor, workspaceId: string): Promise<DataKeyRecord> => {
    const id = dataKeyIdFor(workspaceId, primary.id);
    const find = () => db.selectFrom('data_keys').select(['id', 'master_key_id', 'wrapped'])
      .where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
    const existing = await find();
    if (existing) return existing;
    const wrapped = seal(primary.key, randomBytes(KEY_BYTES), wrapAad(workspaceId, id));
    // A concurrent first use may insert the same id first: its row wins (this insert waits for it to commit
    // on PostgreSQL, and is serialized by the write lock on SQLite), and this one reads it back.
    await db.insertInto('data_keys').values({ id, workspace_id: workspaceId, master_key_id: primary.id, wrapped, created_at: Date.now() })
      .onConflict((oc) => oc.column('id').doNothing()).execute();
    const row = await find();
    if (!row) throw new VaultError(`data key ${id} could not be created`);
    return row;
  };

  return {
    async encrypt(db, workspaceId, plaintexts) {
      if (plaintexts.length === 0) return [];
      const row = await currentDataKey(db, workspaceId);
      const key = unwrap(workspaceId, row);
      const aad = sealAad(workspaceId, row.id);
      return plaintexts.map((p) => ({ dataKeyId: row.id, ciphertext: seal(key, Buffer.from(p, 'utf8'), aad) }));
    },

    async decrypt(db, workspaceId, sealed) {
      if (sealed.length === 0) return [];
      const ids = [...new Set(sealed.map((s) => s.dataKeyId))];
      const rows = await db.selectFrom('data_keys').select(['id', 'master_key_id', 'wrapped'])
        .where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute();
      const keys = new Map(rows.map((r) => [r.id, unwrap(workspaceId, r)]));
      return sealed.map((s, i) => {
        const key = keys.get(s.dataKeyId);
        if (!key) throw new VaultError(`item ${i}: data key ${s.dataKeyId} does not exist in workspace ${workspaceId}`);
        const plain = open(key, s.ciphertext, sealAad(workspaceId, s.dataKeyId));
        if (!plain) throw new VaultError(`item ${i}: ciphertext under data key ${s.dataKeyId} does not authenticate in workspace ${workspaceId}`);
        return plain.toString('utf8');
      });
    },

    async rotate(db) {
      // Every master key that wraps a data key must be configured; check them all before changing anything.
      const under = await db.selectFrom('data_keys').select('master_key_id').distinct()
        .where('master_key_id', '!=', primary.id).execute();
      const missing = under.map((r) => r.master_key_id).filter((id) => !byId.has(id)).sort();
      if (missing.length) {
        throw new VaultError(`data keys are wrapped by master key(s) ${missing.map((m) => `"${m}"`).join(', ')}, which are not configured: add them to KEYHOLD_MASTER_KEYS (after "${primary.id}") and rotate again`);
      }
      let rewrapped = 0;
      let after = '';
      for (;;) {
        const batch = await db.selectFrom('data_keys').select(['id', 'workspace_id', 'master_key_id', 'wrapped'])
          .where('master_key_id', '!=', primary.id).where('id', '>', after).orderBy('id').limit(500).execute();
        if (batch.length === 0) break;
        for (const row of batch) {
          const key = unwrap(row.workspace_id, row);
          const wrapped = seal(primary.key, key, wrapAad(row.workspace_id, row.id));
          // Guarded by the old wrapped form: a concurrent rotation that got there first is not counted twice.
          const res = await db.updateTable('data_keys').set({ master_key_id: primary.id, wrapped })
            .where('id', '=', row.id).where('wrapped', '=', row.wrapped).executeTakeFirst();
          rewrapped += Number(res.numUpdatedRows);
        }
        after = batch[batch.length - 1].id;
      }
      return { rewrapped };
    },
  };
}

/**
 * Parses KEYHOLD_MASTER_KEYS: comma-separated `<id>:<key>` entries, newest first. `<id>` is 1..64 characters
 * of `A-Z a-z 0-9 _ . -` and unique; `<key>` is standard base64 of exactly 32 bytes (`openssl rand -base64 32`).
 * Whitespace around entries is ignored. Every problem is reported; key material is never echoed.
 */
export function parseMasterKeys(value: string): MasterKey[] {
  const problems: string[] = [];
  const keys: MasterKey[] = [];
  const entries = value.split(',').map((e) => e.trim());
  if (entries.length === 1 && entries[0] === '') throw new MasterKeyFormatError(['no master key given: expected <id>:<base64 of 32 bytes>[,<id>:<base64>…]']);
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    const where = `entry ${i + 1}`;
    if (entry === '') { problems.push(`${where} is empty`); return; }
    const colon = entry.indexOf(':');
    if (colon === -1) { problems.push(`${where} must be <id>:<base64 of 32 bytes>`); return; }
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
      problems.push(`${where}${MASTER_KEY_ID_RE.test(id) ? ` (id "${id}")` : ''}: the key must be standard base64 of exactly ${KEY_BYTES} bytes (e.g. \`openssl rand -base64 32\`)`);
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
    mkdirSync(dataDir, { recursive: true });
    const mk: MasterKey = { id: `mk_${base58(randomBytes(10), 14)}`, key: randomBytes(KEY_BYTES) };
    const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      writeFileSync(tmp, [
        `# Keyhold master key, generated ${new Date().toISOString()}. It encrypts the data keys of recoverable keys:`,
        '# keep it secret, back it up together with the database, and never change it in place.',
        '# Same format as KEYHOLD_MASTER_KEYS, one <id>:<base64> entry per line (newest first).',
        formatMasterKey(mk),
        '',
      ].join('\n'), { mode: 0o600, flag: 'wx' });
      chmodSync(tmp, 0o600);
      linkSync(tmp, path);
      warn(`generated a new master key in ${path} (mode 0600): back it up with the database, since recoverable keys cannot be decrypted without it; set KEYHOLD_MASTER_KEYS to manage master keys yourself`);
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
  const value = text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#')).join(',');
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

/** The vault, or a 412 for an operation that needs one on a server configured without master keys. */
export function requireVault(vault: Vault | undefined, what: string): Vault {
  if (!vault) throw new AppError('state/precondition-failed', `no vault configured: ${what} needs KEYHOLD_MASTER_KEYS to be set on the server`);
  return vault;
}
