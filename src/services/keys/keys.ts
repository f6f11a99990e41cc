import { AppError, notFound } from '../../domain/errors.ts';
import { parseJson } from '../../domain/json.ts';
import { hashKey } from '../../crypto/keys.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db, Tx } from '../../store/store.ts';
import type { KeyRow } from '../../store/schema.ts';
import { recordAudit, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { attachPlaintexts, loadKeyViews, type KeyView } from './key-view.ts';
import { liveKeys, requireKey } from '../lookups.ts';
import { emitEvents } from '../webhooks/emit.ts';
import { transact, type ChangeSet } from '../changes.ts';

/** With `decrypt`, a recoverable key carries its `plaintext` (a 412 when there is no vault). */
export async function getKey(db: Db, caller: Caller, keyId: string, decrypt: boolean, vault?: Vault): Promise<KeyView> {
  const row = await requireKey(db, caller.workspaceId, keyId);
  requirePermissions(caller, `api.${row.api_id}.read_key`, ...(decrypt ? [`api.${row.api_id}.decrypt_key`] : []));
  const decryptor = decrypt ? requireVault(vault, 'decrypt=true') : undefined;
  const views = await loadKeyViews(db, [row]);
  if (decryptor) await attachPlaintexts(db, decryptor, caller.workspaceId, views);
  return views[0];
}

/** Soft delete by default (the row stays, marked deleted); `permanent` removes the row and everything attached to it. */
export async function deleteKey(db: Db, caller: Caller, keyId: string, permanent: boolean): Promise<void> {
  await transact(db, async (tx, changes) => {
    const row = await requireKey(tx, caller.workspaceId, keyId);
    requirePermissions(caller, `api.${row.api_id}.delete_key`);
    changes.key(keyId);
    // Only a live key is deleted: when a concurrent delete committed first (its row lock makes this one wait),
    // nothing is left to change and this call is a 404, not a second deletion with a second audit record.
    const deleted = await removeKeys(tx, caller, { keyId }, { permanent, changes });
    if (deleted.length === 0) throw notFound('key', keyId);
  });
}

/** The keys a deletion takes: one key, or every key of an API. */
export type KeySelection = { keyId: string } | { apiId: string };

/**
 * Deletes the selected keys inside `tx`, records one `key.delete` audit entry and one `key.deleted` event per
 * key deleted, and returns their ids. The caller has checked permissions and records the change for the
 * caches (`changes`: also told of the events' delivery jobs). Soft (the default) marks the live keys deleted;
 * `permanent` removes their rows and everything attached to them (roles, permissions, rate limits, encrypted
 * copies: foreign-key cascade), and with `alsoSoftDeleted` the rows of keys soft-deleted earlier too. A key
 * deleted meanwhile by a transaction that committed first is not matched any more (its row lock makes this
 * statement wait), so no key is deleted, audited or reported twice.
 */
export async function removeKeys(
  tx: Tx,
  caller: Caller,
  selection: KeySelection,
  opts: { permanent: boolean; alsoSoftDeleted?: boolean; changes?: ChangeSet },
): Promise<string[]> {
  const [column, value] = 'keyId' in selection ? (['id', selection.keyId] as const) : (['api_id', selection.apiId] as const);
  const now = Date.now();
  let rows: Array<{ id: string; api_id: string }>;
  if (opts.permanent) {
    const matched = tx.deleteFrom('keys').where(column, '=', value);
    rows = await (opts.alsoSoftDeleted ? matched : matched.where('deleted_at', 'is', null)).returning(['id', 'api_id']).execute();
  } else {
    rows = await tx
      .updateTable('keys')
      .set({ deleted_at: now, updated_at: now })
      .where(column, '=', value)
      .where('deleted_at', 'is', null)
      .returning(['id', 'api_id'])
      .execute();
  }
  const diff = { permanent: opts.permanent };
  await recordAudit(
    tx,
    rows.map((r) => callerAudit(caller, 'key.delete', { type: 'key', id: r.id }, { diff })),
    now,
  );
  await emitKeysDeleted(tx, caller.workspaceId, rows, opts.permanent, { now, changes: opts.changes });
  return rows.map((r) => r.id);
}

/** `key.deleted`, one event per deleted key (`{keyId, apiId, permanent}`), with the deletion's transaction. */
export async function emitKeysDeleted(
  tx: Tx,
  workspaceId: string,
  keys: ReadonlyArray<{ id: string; api_id: string }>,
  permanent: boolean,
  opts: { now?: number; changes?: ChangeSet },
): Promise<void> {
  const datas = keys.map((k) => ({ keyId: k.id, apiId: k.api_id, permanent }));
  await emitEvents(tx, workspaceId, 'key.deleted', datas, opts);
}

export interface WhoamiView {
  id: string;
  name?: string;
  remaining?: number;
  identity?: { id: string; externalId: string };
  meta?: Record<string, unknown>;
  createdAt: number;
  enabled: boolean;
  environment?: string;
}

/** The live key of the caller's workspace whose plaintext is `key` (404 otherwise), once `read_key` is checked. */
async function requireKeyByPlaintext(db: Db, caller: Caller, key: string): Promise<KeyRow> {
  const row = await liveKeys(db)
    .where('keys.hash', '=', hashKey(key))
    .where('keys.workspace_id', '=', caller.workspaceId)
    .executeTakeFirst();
  if (!row) throw new AppError('data/key-not-found', 'key not found');
  requirePermissions(caller, `api.${row.api_id}.read_key`);
  return row;
}

/**
 * keys.whoami of v2: the whole key (as getKey shows it, never its plaintext) whose plaintext is given. Like
 * v1's whoami, it neither verifies the key nor spends anything, and describes disabled and expired keys too.
 */
export async function whoamiKey(db: Db, caller: Caller, key: string): Promise<KeyView> {
  return (await loadKeyViews(db, [await requireKeyByPlaintext(db, caller, key)]))[0];
}

/** Describes the key whose plaintext is given, if it belongs to the caller's workspace. */
export async function whoami(db: Db, caller: Caller, key: string): Promise<WhoamiView> {
  const row = await requireKeyByPlaintext(db, caller, key);
  const identity = row.identity_id
    ? await db.selectFrom('identities').select(['id', 'external_id']).where('id', '=', row.identity_id).executeTakeFirst()
    : undefined;
  return {
    id: row.id,
    name: row.name ?? undefined,
    remaining: row.remaining ?? undefined,
    identity: identity ? { id: identity.id, externalId: identity.external_id } : undefined,
    meta: parseJson(row.meta) ?? undefined,
    createdAt: row.created_at,
    enabled: row.enabled === 1,
    environment: row.environment ?? undefined,
  };
}
