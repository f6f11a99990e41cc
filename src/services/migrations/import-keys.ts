import { AppError, invalid, quoted, type FieldProblem } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { hashKey } from '../../crypto/keys.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db, Executor } from '../../store/store.ts';
import { insertAll, insertRows, selectIn } from '../../store/bulk-statements.ts';
import type { AuditLogRow, EncryptedKeyRow, IdentityRow, KeyPermissionRow, KeyRoleRow, KeyRow, RatelimitRow } from '../../store/schema.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { actorOf, requirePermissions, type Actor, type Caller } from '../caller.ts';
import { importedStart, importProblems, type ImportKeyItem } from './import-item.ts';

export interface ImportOptions {
  /** Who imports: recorded in every audit record. */
  actor: Actor;
  requestId?: string;
  /** Encrypts `plaintext` items; without it such items fail with 412. */
  vault?: Vault;
  /** Stored in `keys.migration_id` and the audit records. */
  migrationId?: string;
  /**
   * Called once the APIs are known to exist (so 404 api comes before 403), before anything else is read:
   * `apis` are the distinct apiIds in request order, `plaintext` whether any item for that API has a plaintext.
   * Throw to refuse.
   */
  authorize?(apis: Array<{ apiId: string; plaintext: boolean }>): void;
  now?: number;
}

/**
 * Imports `items` into the workspace inside `tx`, the caller's transaction, and returns the new key ids in
 * item order. All or nothing only together with that transaction: when this throws, the caller must roll
 * it back (on PostgreSQL a failed statement has aborted it anyway).
 *
 * Checks, in order, each reporting every offender at once: item rules (400) → unknown or deleted APIs of
 * another workspace or none (404 data/api-not-found) → `authorize` (403) → plaintexts without a vault
 * (412) → unknown role names / permission slugs (404, never created here) → hashes that exist already or
 * twice in `items` (409, naming the item indexes). Then: identities for new externalIds (created on first
 * use), the encrypted plaintexts, keys, their `default` rate limits, role and permission links, one
 * `key.create` audit record per key.
 *
 * Cost: a fixed number of statements whatever the number of items (one `IN` lookup per kind of reference,
 * chunked inserts) and one SHA-256 per plaintext.
 */
export async function importKeys(
  tx: Executor,
  workspaceId: string,
  items: readonly ImportKeyItem[],
  opts: ImportOptions,
): Promise<string[]> {
  const problems = importProblems(items);
  if (problems.length) throw invalid(problems);
  if (items.length === 0) return [];
  const apiIds = await requireLiveApis(tx, workspaceId, items);
  const withPlaintext = new Set(items.filter((i) => i.plaintext !== undefined).map((i) => i.apiId));
  opts.authorize?.(apiIds.map((apiId) => ({ apiId, plaintext: withPlaintext.has(apiId) })));
  const toEncrypt = items.flatMap((item, i) => (item.plaintext !== undefined && !item.encrypted ? [i] : []));
  const vault = toEncrypt.length
    ? requireVault(opts.vault, 'importing plaintext keys (they are stored encrypted; import their hashes instead)')
    : undefined;
  const links = await requireRolesAndPermissions(tx, workspaceId, items);
  const hashes = await requireNewHashes(tx, items);

  const now = opts.now ?? Date.now();
  const externalIds = items.map((i) => i.externalId ?? i.ownerId);
  const identityIds = await ensureIdentities(tx, workspaceId, [...new Set(externalIds.filter((x): x is string => x !== undefined))], now);
  const rows = importRows(items, { workspaceId, hashes, externalIds, identityIds, links, opts, now });
  if (vault) {
    const encrypted = await vault.encrypt(
      tx,
      workspaceId,
      toEncrypt.map((i) => items[i].plaintext!),
    );
    toEncrypt.forEach((itemIndex, j) => {
      rows.secrets.push({ key_id: rows.keyIds[itemIndex], workspace_id: workspaceId, ...sealed(encrypted[j]), created_at: now });
    });
  }
  await insertImportRows(tx, rows);
  return rows.keyIds;
}

/** 404 unless every API the items name is a live API of the workspace; the distinct apiIds, in item order. */
async function requireLiveApis(tx: Executor, workspaceId: string, items: readonly ImportKeyItem[]): Promise<string[]> {
  const apiIds = [...new Set(items.map((i) => i.apiId))];
  const liveApis = new Set(
    (
      await selectIn(apiIds, (ids) =>
        tx
          .selectFrom('apis')
          .select('id')
          .where('workspace_id', '=', workspaceId)
          .where('id', 'in', ids)
          .where('deleted_at', 'is', null)
          .execute(),
      )
    ).map((r) => r.id),
  );
  const unknownApis = apiIds.filter((id) => !liveApis.has(id));
  if (unknownApis.length)
    throw new AppError('data/api-not-found', `${unknownApis.length > 1 ? 'apis' : 'api'} ${unknownApis.join(', ')} not found`);
  return apiIds;
}

interface LinkIds {
  roleIds: Map<string, string>;
  permissionIds: Map<string, string>;
}

/** 404 naming every role (by name) and permission (by slug) the items use that does not exist; an import never creates them. */
async function requireRolesAndPermissions(tx: Executor, workspaceId: string, items: readonly ImportKeyItem[]): Promise<LinkIds> {
  const roleNames = [...new Set(items.flatMap((i) => i.roles ?? []))];
  const permissionSlugs = [...new Set(items.flatMap((i) => i.permissions ?? []))];
  const [roleRows, permissionRows] = await Promise.all([
    selectIn(roleNames, (names) =>
      tx.selectFrom('roles').select(['id', 'name']).where('workspace_id', '=', workspaceId).where('name', 'in', names).execute(),
    ),
    selectIn(permissionSlugs, (slugs) =>
      tx.selectFrom('permissions').select(['id', 'slug']).where('workspace_id', '=', workspaceId).where('slug', 'in', slugs).execute(),
    ),
  ]);
  const roleIds = new Map(roleRows.map((r) => [r.name, r.id]));
  const permissionIds = new Map(permissionRows.map((p) => [p.slug, p.id]));
  const missingRoles = roleNames.filter((n) => !roleIds.has(n));
  const missingPermissions = permissionSlugs.filter((s) => !permissionIds.has(s));
  if (missingRoles.length || missingPermissions.length) {
    const parts = [
      ...(missingRoles.length ? [`${missingRoles.length > 1 ? 'roles' : 'role'} ${quoted(missingRoles)}`] : []),
      ...(missingPermissions.length
        ? [`${missingPermissions.length > 1 ? 'permissions' : 'permission'} ${quoted(missingPermissions)}`]
        : []),
    ];
    throw new AppError(
      missingRoles.length ? 'data/role-not-found' : 'data/permission-not-found',
      `${parts.join(' and ')} ${missingRoles.length + missingPermissions.length > 1 ? 'do' : 'does'} not exist in this workspace; create them first`,
    );
  }
  return { roleIds, permissionIds };
}

const listIndexes = (xs: number[]): string => xs.join(', ');

/** 409 naming every item whose hash is stored already (a hash may be stored once in the whole service) or repeats an earlier item's; the hashes, in item order. */
async function requireNewHashes(tx: Executor, items: readonly ImportKeyItem[]): Promise<string[]> {
  const hashes = items.map((item) => (item.plaintext !== undefined ? hashKey(item.plaintext) : item.hash!.value));
  const firstIndex = new Map<string, number>();
  const conflicts: FieldProblem[] = [];
  const repeated: number[] = [];
  hashes.forEach((h, i) => {
    const first = firstIndex.get(h);
    if (first === undefined) firstIndex.set(h, i);
    else {
      repeated.push(i);
      conflicts.push({ path: `/${i}`, message: `has the same hash as item ${first}` });
    }
  });
  const existing = new Set(
    (await selectIn([...firstIndex.keys()], (hs) => tx.selectFrom('keys').select('hash').where('hash', 'in', hs).execute())).map(
      (r) => r.hash,
    ),
  );
  const taken = existing.size ? [...firstIndex].filter(([h]) => existing.has(h)).map(([, i]) => i) : [];
  if (repeated.length || taken.length) {
    for (const i of taken) conflicts.push({ path: `/${i}`, message: 'a key with this hash already exists' });
    conflicts.sort((a, b) => Number(a.path.slice(1)) - Number(b.path.slice(1)));
    const detail = [
      ...(taken.length ? [`a key with the hash of item${taken.length > 1 ? 's' : ''} ${listIndexes(taken)} already exists`] : []),
      ...(repeated.length
        ? [
            `item${repeated.length > 1 ? 's' : ''} ${listIndexes(repeated)} repeat${repeated.length > 1 ? '' : 's'} the hash of an earlier item`,
          ]
        : []),
    ].join('; ');
    throw new AppError('data/conflict', detail, conflicts);
  }
  return hashes;
}

interface ImportRows {
  keyIds: string[];
  keys: KeyRow[];
  ratelimits: RatelimitRow[];
  keyRoles: KeyRoleRow[];
  keyPermissions: KeyPermissionRow[];
  secrets: EncryptedKeyRow[];
  audit: AuditLogRow[];
}

interface RowContext {
  workspaceId: string;
  hashes: string[];
  externalIds: Array<string | undefined>;
  identityIds: Map<string, string>;
  links: LinkIds;
  opts: ImportOptions;
  now: number;
}

const sealed = (e: { dataKeyId: string; ciphertext: string }) => ({ data_key_id: e.dataKeyId, ciphertext: e.ciphertext });

/** Every row the items become (keys, rate limits, links, already encrypted plaintexts, audit records), without writing. */
function importRows(items: readonly ImportKeyItem[], ctx: RowContext): ImportRows {
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
      rows.ratelimits.push({
        id: newId('rl'),
        workspace_id: workspaceId,
        key_id: id,
        identity_id: null,
        name: 'default',
        type: rl.type ?? (rl.async ? 'fast' : 'consistent'),
        limit: rl.limit,
        duration: (rl.duration ?? rl.refillInterval)!,
        auto_apply: 1,
        created_at: now,
        updated_at: now,
      });
    }
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
    hash: ctx.hashes[index],
    start: importedStart(item),
    name: item.name ?? null,
    identity_id: externalId !== undefined ? ctx.identityIds.get(externalId)! : null,
    meta: item.meta !== undefined ? JSON.stringify(item.meta) : null,
    enabled: item.enabled === false ? 0 : 1,
    environment: item.environment ?? null,
    expires_at: item.expires ?? null,
    remaining: item.remaining ?? null,
    refill_interval: item.refill?.interval ?? null,
    refill_amount: item.refill?.amount ?? null,
    refill_day: item.refill?.interval === 'monthly' ? (item.refill.refillDay ?? 1) : null,
    last_refill_at: item.refill ? now : null,
    migration_id: ctx.opts.migrationId ?? null,
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
async function insertImportRows(tx: Executor, rows: ImportRows): Promise<void> {
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

/**
 * The id of the workspace's identity for each externalId, creating the missing ones (environment
 * `default`, no meta) with `ON CONFLICT DO NOTHING`, so concurrent creators converge on one row.
 */
async function ensureIdentities(tx: Executor, workspaceId: string, externalIds: string[], now: number): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  if (externalIds.length === 0) return ids;
  const read = (xs: string[]) =>
    selectIn(xs, (part) =>
      tx
        .selectFrom('identities')
        .select(['id', 'external_id'])
        .where('workspace_id', '=', workspaceId)
        .where('external_id', 'in', part)
        .execute(),
    );
  for (const r of await read(externalIds)) ids.set(r.external_id, r.id);
  // Sorted: concurrent importers insert shared externalIds in one order and wait on each other instead of deadlocking.
  const missing = externalIds.filter((x) => !ids.has(x)).sort();
  if (missing.length === 0) return ids;
  const rows: IdentityRow[] = missing.map((external_id) => ({
    id: newId('id'),
    workspace_id: workspaceId,
    external_id,
    environment: 'default',
    meta: null,
    created_at: now,
    updated_at: now,
  }));
  await insertAll(rows, (part) =>
    tx
      .insertInto('identities')
      .values(part)
      .onConflict((oc) => oc.columns(['workspace_id', 'external_id']).doNothing())
      .execute(),
  );
  for (const r of await read(missing)) ids.set(r.external_id, r.id);
  return ids;
}

/**
 * migrations.createKeys: imports `items` for the caller, all or nothing, in one transaction.
 * Needs, for every distinct apiId, `api.<apiId>.create_key`, plus `api.<apiId>.encrypt_key` when an item
 * for that API has a plaintext (every missing permission is named in the 403).
 */
export async function createKeysByMigration(
  db: Db,
  caller: Caller,
  items: readonly ImportKeyItem[],
  vault?: Vault,
): Promise<{ keyIds: string[] }> {
  const authorize = (apis: Array<{ apiId: string; plaintext: boolean }>) =>
    requirePermissions(
      caller,
      ...apis.flatMap(({ apiId, plaintext }) => [`api.${apiId}.create_key`, ...(plaintext ? [`api.${apiId}.encrypt_key`] : [])]),
    );
  try {
    const keyIds = await db.transaction().execute((tx) =>
      importKeys(tx, caller.workspaceId, items, {
        actor: actorOf(caller),
        requestId: caller.requestId,
        vault,
        authorize,
      }),
    );
    return { keyIds };
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('data/conflict', 'a key with one of these hashes was created concurrently');
    throw err;
  }
}
