import { AppError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import type { Executor } from '../../store/store.ts';
import { insertRows } from '../../store/bulk-statements.ts';
import type { AuditLogRow, EncryptedKeyRow, KeyPermissionRow, KeyRoleRow, KeyRow, RatelimitRow } from '../../store/schema.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { defaultRatelimitRow, namedRatelimitRow, refillColumns } from '../keys/key-attributes.ts';
import { importedStart, type ImportedHash, type ImportKeyItem } from './import-item.ts';
import type { ImportOptions } from './import-keys.ts';
import { algorithmOfVariant } from './hash-algorithms.ts';

// The rows an import writes, built without writing, then written in a deadlock-free order.

/** The ids of the roles (by name) and permissions (by slug) the items link to. */
export interface LinkIds {
  roleIds: Map<string, string>;
  permissionIds: Map<string, string>;
}

export interface ImportRows {
  keyIds: string[];
  keys: KeyRow[];
  ratelimits: RatelimitRow[];
  keyRoles: KeyRoleRow[];
  keyPermissions: KeyPermissionRow[];
  secrets: EncryptedKeyRow[];
  audit: AuditLogRow[];
}

export interface RowContext {
  workspaceId: string;
  hashes: ImportedHash[];
  externalIds: Array<string | undefined>;
  identityIds: Map<string, string>;
  links: LinkIds;
  opts: ImportOptions;
  now: number;
}

export const sealed = (e: { dataKeyId: string; ciphertext: string }) => ({ data_key_id: e.dataKeyId, ciphertext: e.ciphertext });

/** Every row the items become (keys, rate limits, links, already encrypted plaintexts, audit records), without writing. */
export function importRows(items: readonly ImportKeyItem[], ctx: RowContext): ImportRows {
  const { workspaceId, links, now } = ctx;
  const rows: ImportRows = {
    keyIds: items.map(() => newId('key')),
    keys: [],
    ratelimits: [],
    keyRoles: [],
    keyPermissions: [],
    secrets: [],
    audit: [],
  };
  items.forEach((item, i) => {
    const id = rows.keyIds[i];
    const key = keyRow(item, id, i, ctx);
    rows.keys.push(key);
    const rl = item.ratelimit;
    if (rl) {
      rows.ratelimits.push(defaultRatelimitRow(workspaceId, id, rl, now));
    }
    for (const named of item.ratelimits ?? []) rows.ratelimits.push(namedRatelimitRow(workspaceId, id, named, now));
    for (const name of new Set(item.roles))
      rows.keyRoles.push({ key_id: id, role_id: links.roleIds.get(name)!, workspace_id: workspaceId, created_at: now });
    for (const slug of new Set(item.permissions))
      rows.keyPermissions.push({ key_id: id, permission_id: links.permissionIds.get(slug)!, workspace_id: workspaceId, created_at: now });
    if (item.encrypted) rows.secrets.push({ key_id: id, workspace_id: workspaceId, ...sealed(item.encrypted), created_at: now });
    rows.audit.push(auditRow(item, key, ctx));
  });
  return rows;
}

function keyRow(item: ImportKeyItem, id: string, index: number, ctx: RowContext): KeyRow {
  const externalId = ctx.externalIds[index];
  const { now } = ctx;
  return {
    id,
    workspace_id: ctx.workspaceId,
    api_id: item.apiId,
    hash: ctx.hashes[index].hash,
    start: importedStart(item),
    name: item.name ?? null,
    identity_id: externalId !== undefined ? ctx.identityIds.get(externalId)! : null,
    meta: item.meta !== undefined ? JSON.stringify(item.meta) : null,
    enabled: item.enabled === false ? 0 : 1,
    environment: item.environment ?? null,
    expires_at: item.expires ?? null,
    remaining: item.remaining ?? null,
    ...refillColumns(item.refill, now),
    migration_id: ctx.opts.migrationId ?? null,
    pending_migration_id: ctx.hashes[index].pending ? ctx.opts.migrationId! : null,
    created_at: now,
    updated_at: now,
    last_used_at: null,
    deleted_at: null,
  };
}

/** The `key.create` audit record of an imported key. */
function auditRow(item: ImportKeyItem, key: KeyRow, ctx: RowContext): AuditLogRow {
  const { opts } = ctx;
  const diff: Record<string, unknown> = {
    apiId: item.apiId,
    start: key.start,
    name: item.name ?? null,
    externalId: item.externalId ?? item.ownerId ?? null,
    enabled: item.enabled !== false,
    source: 'migration',
  };
  if (opts.migrationId) diff.migrationId = opts.migrationId;
  // The key's hash is the migration's algorithm's until its first verification naming the migration.
  if (key.pending_migration_id && item.hash) diff.hashAlgorithm = algorithmOfVariant(item.hash.variant);
  if (item.roles?.length) diff.roles = [...new Set(item.roles)];
  if (item.permissions?.length) diff.permissions = [...new Set(item.permissions)];
  return {
    id: newId('log'),
    workspace_id: ctx.workspaceId,
    event: 'key.create',
    actor_type: opts.actor.type,
    actor_id: opts.actor.id,
    target_type: 'key',
    target_id: key.id,
    request_id: opts.requestId ?? null,
    description: null,
    diff: JSON.stringify(diff),
    created_at: ctx.now,
  };
}

/** Writes the rows; keys first, in hash order, so concurrent imports that share hashes wait on each other (the later one gets its 409) instead of deadlocking on the unique index. */
export async function insertImportRows(tx: Executor, rows: ImportRows): Promise<void> {
  const keys = [...rows.keys].sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  try {
    await insertRows(tx, 'keys', keys);
  } catch (err) {
    // A concurrent import or createKey stored one of these hashes after the check above.
    if (isUniqueViolation(err)) throw new AppError('data/conflict', 'a key with one of these hashes was created concurrently');
    throw err;
  }
  await insertRows(tx, 'encrypted_keys', rows.secrets);
  await insertRows(tx, 'ratelimits', rows.ratelimits);
  await insertRows(tx, 'keys_roles', rows.keyRoles);
  await insertRows(tx, 'keys_permissions', rows.keyPermissions);
  await insertRows(tx, 'audit_logs', rows.audit);
}
