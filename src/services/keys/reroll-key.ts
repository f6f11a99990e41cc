import { invalid, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { generateKey, hashKey } from '../../crypto/keys.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { KeyRow } from '../../store/schema.ts';
import { insertOf, insertTogether } from '../../store/insert-together.ts';
import { auditRows, callerAudit, type AuditEntry } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { emitEvent } from '../webhooks/emit.ts';
import { findApi, requireKey } from '../lookups.ts';

/** The longest grace period a reroll takes (ms), as Unkey v2 bounds `expiration`. */
export const MAX_REROLL_EXPIRATION = 4_102_444_800_000;

export interface RerollKeyInput {
  keyId: string;
  /** Milliseconds from now after which the old key stops verifying; 0: at once. */
  expiration: number;
}

/**
 * keys.rerollKey, in one transaction (all or nothing): a new key with a new secret and everything the old
 * key has — name, meta, identity, enabled, environment, expiry, credits with their refill schedule, every
 * key-level rate limit, its direct roles and permissions, and (when the old key is recoverable) an encrypted
 * copy of the new secret — and the old key set to expire exactly `now + expiration`, never later than it
 * already did (a reroll retires a key; it never prolongs one). Audited as `key.reroll` (the old key) and
 * `key.create` with its connect records (the new key). Verification caches drop the old key on every node,
 * so its new expiry applies at once everywhere.
 *
 * Order: 400 (expiration) → 404 (key unknown, deleted or of another workspace) → 403 naming every missing
 * permission (`api.<apiId>.create_key`, plus `api.<apiId>.encrypt_key` for a recoverable key) → 412 (a
 * recoverable key without a vault). `now` is the reroll's time (tests fix it).
 */
export async function rerollKey(
  db: Db,
  caller: Caller,
  input: RerollKeyInput,
  vault?: Vault,
  now?: number,
): Promise<{ keyId: string; key: string }> {
  const { keyId, expiration } = input;
  if (!Number.isSafeInteger(expiration) || expiration < 0 || expiration > MAX_REROLL_EXPIRATION) {
    throw invalid([{ path: '/expiration', message: `must be an integer from 0 to ${MAX_REROLL_EXPIRATION} (milliseconds)` }]);
  }
  return transact(db, async (tx, changes) => {
    const found = await requireKey(tx, caller.workspaceId, keyId);
    const sealedOld = await tx.selectFrom('encrypted_keys').select('key_id').where('key_id', '=', keyId).executeTakeFirst();
    requirePermissions(caller, `api.${found.api_id}.create_key`, ...(sealedOld ? [`api.${found.api_id}.encrypt_key`] : []));
    const encryptor = sealedOld ? requireVault(vault, 'rerolling a recoverable key') : undefined;
    const at = now ?? Date.now();
    const old = await lockKey(tx, keyId, at);
    changes.key(keyId);

    const api = await findApi(tx, caller.workspaceId, old.api_id);
    if (!api) throw notFound('key', keyId);
    const { key, start } = generateKey(prefixOf(old.start) ?? (api.default_prefix || undefined), api.default_bytes ?? 16);
    const fresh: KeyRow = { ...copiedColumns(old), id: newId('key'), hash: hashKey(key), start, created_at: at, updated_at: at };
    const sealed = encryptor ? (await encryptor.encrypt(tx, caller.workspaceId, [key]))[0] : undefined;
    const links = await linksOf(tx, old);

    const expires = old.expires_at === null ? at + expiration : Math.min(old.expires_at, at + expiration);
    await tx.updateTable('keys').set({ expires_at: expires }).where('id', '=', keyId).execute();

    const linked = { key_id: fresh.id, workspace_id: caller.workspaceId, created_at: at };
    await insertTogether(tx, [
      insertOf('keys', [fresh]),
      insertOf('encrypted_keys', sealed ? [{ ...linked, data_key_id: sealed.dataKeyId, ciphertext: sealed.ciphertext }] : []),
      insertOf(
        'ratelimits',
        links.ratelimits.map((r) => ({ ...r, id: newId('rl'), key_id: fresh.id, created_at: at, updated_at: at })),
      ),
      insertOf(
        'keys_roles',
        links.roles.map((r) => ({ ...linked, role_id: r.id })),
      ),
      insertOf(
        'keys_permissions',
        links.permissions.map((p) => ({ ...linked, permission_id: p.id })),
      ),
      insertOf('audit_logs', auditRows(rerollAudit(caller, old, fresh, { expires, links, recoverable: !!sealed }), at)),
    ]);
    await emitEvent(
      tx,
      caller.workspaceId,
      'key.created',
      { keyId: fresh.id, apiId: old.api_id, rerolledFrom: keyId },
      { now: at, changes },
    );
    return { keyId: fresh.id, key };
  });
}

/**
 * Takes the old key's lock (row lock on PostgreSQL, the write lock on SQLite) by writing it first, and returns
 * it as it is now that no one else can change it: concurrent updates, link changes and rerolls of one key are
 * serialized, so the copy is of one state of the key. A key deleted meanwhile is a 404.
 */
async function lockKey(tx: Executor, keyId: string, at: number): Promise<KeyRow> {
  const row = await tx
    .updateTable('keys')
    .set({ updated_at: at })
    .where('id', '=', keyId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('key', keyId);
  return row;
}

/**
 * The prefix of the key whose `start` this is: everything before its last `_` (a key's random part is
 * base58, which has none), so a prefix that itself contains `_` is kept whole; undefined without one.
 */
export function prefixOf(start: string): string | undefined {
  const at = start.lastIndexOf('_');
  return at > 0 ? start.slice(0, at) : undefined;
}

/**
 * The columns the new key takes from the old one. Named one by one (not spread): a column added to keys
 * must be decided here — the type check asks — rather than copied by accident (a migrated key's foreign
 * hash state, say). The refill schedule continues where the old key's was (its `last_refill_at`), since the
 * new key starts with the old key's credits.
 */
function copiedColumns(old: KeyRow): Omit<KeyRow, 'id' | 'hash' | 'start' | 'created_at' | 'updated_at'> {
  return {
    workspace_id: old.workspace_id,
    api_id: old.api_id,
    name: old.name,
    identity_id: old.identity_id,
    meta: old.meta,
    enabled: old.enabled,
    environment: old.environment,
    expires_at: old.expires_at,
    remaining: old.remaining,
    refill_interval: old.refill_interval,
    refill_amount: old.refill_amount,
    refill_day: old.refill_day,
    last_refill_at: old.last_refill_at,
    // The new key's hash is Keyhold's own, never an imported one waiting to be rewritten.
    migration_id: null,
    pending_migration_id: null,
    last_used_at: null,
    deleted_at: null,
  };
}

type Links = Awaited<ReturnType<typeof linksOf>>;

/** The old key's own rate limits (every name), direct roles, direct permissions (`name` = slug) and externalId. */
async function linksOf(tx: Executor, old: KeyRow) {
  const keyId = old.id;
  const [ratelimits, roles, permissions, identity] = await Promise.all([
    tx.selectFrom('ratelimits').selectAll().where('key_id', '=', keyId).orderBy('name').execute(),
    tx
      .selectFrom('keys_roles')
      .innerJoin('roles', 'roles.id', 'keys_roles.role_id')
      .select(['roles.id', 'roles.name'])
      .where('keys_roles.key_id', '=', keyId)
      .orderBy('roles.name')
      .execute(),
    tx
      .selectFrom('keys_permissions')
      .innerJoin('permissions', 'permissions.id', 'keys_permissions.permission_id')
      .select(['permissions.id', 'permissions.slug as name'])
      .where('keys_permissions.key_id', '=', keyId)
      .orderBy('permissions.slug')
      .execute(),
    old.identity_id === null
      ? undefined
      : tx.selectFrom('identities').select('external_id').where('id', '=', old.identity_id).executeTakeFirst(),
  ]);
  return { ratelimits, roles, permissions, externalId: identity?.external_id ?? null };
}

/** `key.reroll` on the old key, then `key.create` and one connect record per role and permission on the new one. */
function rerollAudit(
  caller: Caller,
  old: KeyRow,
  fresh: KeyRow,
  parts: { expires: number; links: Links; recoverable: boolean },
): AuditEntry[] {
  const { links } = parts;
  const onNew = (event: string, diff: Record<string, unknown>): AuditEntry =>
    callerAudit(caller, event, { type: 'key', id: fresh.id }, { diff });
  return [
    callerAudit(
      caller,
      'key.reroll',
      { type: 'key', id: old.id },
      { diff: { newKeyId: fresh.id, expires: { from: old.expires_at, to: parts.expires } } },
    ),
    onNew('key.create', {
      apiId: fresh.api_id,
      start: fresh.start,
      name: fresh.name,
      externalId: links.externalId,
      enabled: fresh.enabled === 1,
      rerolledFrom: old.id,
      ...(parts.recoverable ? { recoverable: true } : {}),
    }),
    ...links.roles.map((r) => onNew('authorization.connect_role_and_key', { roleId: r.id, role: r.name })),
    ...links.permissions.map((p) => onNew('authorization.connect_permission_and_key', { permissionId: p.id, permission: p.name })),
  ];
}
