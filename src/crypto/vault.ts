import { createHash, randomBytes } from 'node:crypto';
import { base58 } from '../domain/base58.ts';
import { AppError } from '../domain/errors.ts';
import type { Db, Executor } from '../store/store.ts';
import { KEY_BYTES, open, seal, sealAad, wrapAad } from './aead.ts';
import type { MasterKey } from '../config/master-keys.ts';

/**
 * Envelope encryption of recoverable keys (docs/secrets-at-rest.md).
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

/** A sealed secret: the data key it is encrypted under, and `base64(nonce(12) | ciphertext | tag(16))`. */
export interface Sealed {
  dataKeyId: string;
  ciphertext: string;
}

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
  /**
   * Throws a VaultError unless these master keys can unwrap the store's data keys: each master key that wraps
   * one is configured and unwraps one of its data keys (other material under the same id does not).
   */
  check(db: Db): Promise<void>;
}

/** A failure of the vault (unknown master key, ciphertext that does not authenticate, …). Its message names ids, never secrets. */
export class VaultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VaultError';
  }
}

/** Unwrapped data keys kept in memory; least recently used ones are dropped beyond this. */
const CACHE_SIZE = 1024;
/** Data keys re-wrapped per read by `rotate`. */
const ROTATE_BATCH = 500;

/** The id of the data key a workspace gets under a master key: deterministic, so concurrent creations collide on the primary key. */
function dataKeyIdFor(workspaceId: string, masterKeyId: string): string {
  const digest = createHash('sha256').update(`keyhold/v1/data-key-id\0${workspaceId}\0${masterKeyId}`).digest();
  return `dk_${base58(digest.subarray(0, 16), 22)}`;
}

interface DataKeyRecord {
  id: string;
  master_key_id: string;
  wrapped: string;
}

/** `masterKeys[0]` wraps new data keys (and is what `rotate` re-wraps under); any listed key unwraps. */
export function createVault(masterKeys: MasterKey[]): Vault {
  if (masterKeys.length === 0) throw new VaultError('the vault needs at least one master key');
  for (const mk of masterKeys) {
    if (mk.key.length !== KEY_BYTES) throw new VaultError(`master key "${mk.id}" must be ${KEY_BYTES} bytes`);
  }
  return new EnvelopeVault(masterKeys);
}

/** The Vault over validated master keys, with an LRU cache of unwrapped data keys. */
class EnvelopeVault implements Vault {
  readonly #primary: MasterKey;
  readonly #byId: Map<string, MasterKey>;
  // Keyed by id and wrapped form: a data key row that was rolled back and re-created with other material,
  // or re-wrapped by a rotation, is a different entry, so the cache can never serve stale key material.
  readonly #cache = new Map<string, Buffer>();

  constructor(masterKeys: MasterKey[]) {
    this.#primary = masterKeys[0];
    this.#byId = new Map(masterKeys.map((mk) => [mk.id, mk]));
  }

  async encrypt(db: Executor, workspaceId: string, plaintexts: string[]): Promise<Sealed[]> {
    if (plaintexts.length === 0) return [];
    const row = await this.#currentDataKey(db, workspaceId);
    const key = this.#unwrap(workspaceId, row);
    const aad = sealAad(workspaceId, row.id);
    return plaintexts.map((p) => ({ dataKeyId: row.id, ciphertext: seal(key, Buffer.from(p, 'utf8'), aad) }));
  }

  async decrypt(db: Executor, workspaceId: string, sealed: Sealed[]): Promise<string[]> {
    if (sealed.length === 0) return [];
    const ids = [...new Set(sealed.map((s) => s.dataKeyId))];
    const rows = await db
      .selectFrom('data_keys')
      .select(['id', 'master_key_id', 'wrapped'])
      .where('workspace_id', '=', workspaceId)
      .where('id', 'in', ids)
      .execute();
    const keys = new Map(rows.map((r) => [r.id, this.#unwrap(workspaceId, r)]));
    return sealed.map((s, i) => {
      const key = keys.get(s.dataKeyId);
      if (!key) throw new VaultError(`item ${i}: data key ${s.dataKeyId} does not exist in workspace ${workspaceId}`);
      const plain = open(key, s.ciphertext, sealAad(workspaceId, s.dataKeyId));
      if (!plain)
        throw new VaultError(`item ${i}: ciphertext under data key ${s.dataKeyId} does not authenticate in workspace ${workspaceId}`);
      return plain.toString('utf8');
    });
  }

  async rotate(db: Db): Promise<{ rewrapped: number }> {
    await this.#assertUnwrappable(db);
    let rewrapped = 0;
    let after = '';
    for (;;) {
      const batch = await db
        .selectFrom('data_keys')
        .select(['id', 'workspace_id', 'master_key_id', 'wrapped'])
        .where('master_key_id', '!=', this.#primary.id)
        .where('id', '>', after)
        .orderBy('id')
        .limit(ROTATE_BATCH)
        .execute();
      if (batch.length === 0) break;
      for (const row of batch) rewrapped += await this.#rewrap(db, row);
      after = batch[batch.length - 1].id;
    }
    return { rewrapped };
  }

  async check(db: Db): Promise<void> {
    const firsts = await db
      .selectFrom('data_keys')
      .select((eb) => eb.fn.min('id').as('id'))
      .groupBy('master_key_id')
      .execute();
    for (const { id } of firsts) {
      const row = await db
        .selectFrom('data_keys')
        .select(['id', 'workspace_id', 'master_key_id', 'wrapped'])
        .where('id', '=', id)
        .executeTakeFirst();
      if (row) this.#unwrap(row.workspace_id, row);
    }
  }

  /** Every master key that wraps a data key must be configured; `rotate` checks them all before changing anything. */
  async #assertUnwrappable(db: Db): Promise<void> {
    const under = await db
      .selectFrom('data_keys')
      .select('master_key_id')
      .distinct()
      .where('master_key_id', '!=', this.#primary.id)
      .execute();
    const missing = under
      .map((r) => r.master_key_id)
      .filter((id) => !this.#byId.has(id))
      .sort();
    if (missing.length) {
      throw new VaultError(
        `data keys are wrapped by master key(s) ${missing.map((m) => `"${m}"`).join(', ')}, which are not configured: add them to KEYHOLD_MASTER_KEYS (after "${this.#primary.id}") and rotate again`,
      );
    }
  }

  /** Re-wraps one data key under the first master key; 1 if this call did it, 0 if a concurrent rotation did. */
  async #rewrap(db: Db, row: DataKeyRecord & { workspace_id: string }): Promise<number> {
    const key = this.#unwrap(row.workspace_id, row);
    const wrapped = seal(this.#primary.key, key, wrapAad(row.workspace_id, row.id));
    // Guarded by the old wrapped form: a concurrent rotation that got there first is not counted twice.
    const res = await db
      .updateTable('data_keys')
      .set({ master_key_id: this.#primary.id, wrapped })
      .where('id', '=', row.id)
      .where('wrapped', '=', row.wrapped)
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  #unwrap(workspaceId: string, row: DataKeyRecord): Buffer {
    const cacheKey = `${row.id}\0${row.wrapped}`;
    const hit = this.#cache.get(cacheKey);
    if (hit) {
      this.#cache.delete(cacheKey);
      this.#cache.set(cacheKey, hit);
      return hit;
    }
    const mk = this.#byId.get(row.master_key_id);
    if (!mk) {
      throw new VaultError(
        `data key ${row.id} is wrapped by master key "${row.master_key_id}", which is not configured (KEYHOLD_MASTER_KEYS)`,
      );
    }
    const key = open(mk.key, row.wrapped, wrapAad(workspaceId, row.id));
    if (!key || key.length !== KEY_BYTES) {
      throw new VaultError(
        `data key ${row.id} does not unwrap with master key "${mk.id}" (another key under the same id, or a damaged row)`,
      );
    }
    this.#cache.set(cacheKey, key);
    if (this.#cache.size > CACHE_SIZE) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    return key;
  }

  async #currentDataKey(db: Executor, workspaceId: string): Promise<DataKeyRecord> {
    const primary = this.#primary;
    const id = dataKeyIdFor(workspaceId, primary.id);
    const find = () =>
      db
        .selectFrom('data_keys')
        .select(['id', 'master_key_id', 'wrapped'])
        .where('id', '=', id)
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst();
    const existing = await find();
    if (existing) return existing;
    const wrapped = seal(primary.key, randomBytes(KEY_BYTES), wrapAad(workspaceId, id));
    // A concurrent first use may insert the same id first: its row wins (this insert waits for it to commit
    // on PostgreSQL, and is serialized by the write lock on SQLite), and this one reads it back.
    await db
      .insertInto('data_keys')
      .values({ id, workspace_id: workspaceId, master_key_id: primary.id, wrapped, created_at: Date.now() })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    const row = await find();
    if (!row) throw new VaultError(`data key ${id} could not be created`);
    return row;
  }
}

/** The vault, or a 412 for an operation that needs one on a server configured without master keys. */
export function requireVault(vault: Vault | undefined, what: string): Vault {
  if (!vault)
    throw new AppError('state/precondition-failed', `no vault configured: ${what} needs KEYHOLD_MASTER_KEYS to be set on the server`);
  return vault;
}
