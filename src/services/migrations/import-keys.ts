import { AppError, invalid, quoted, type FieldProblem } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db, Executor } from '../../store/store.ts';
import { insertAll, selectIn } from '../../store/bulk-statements.ts';
import type { IdentityRow } from '../../store/schema.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { actorOf, requirePermissions, type Actor, type Caller } from '../caller.ts';
import { transact } from '../changes.ts';
import { importedHash, importProblems, type ImportedHash, type ImportKeyItem } from './import-item.ts';
import { emitImportEvents } from './migration-events.ts';
import { importRows, insertImportRows, sealed, type LinkIds } from './import-rows.ts';

export interface ImportOptions {
  /** Who imports: recorded in every audit record. */
  actor: Actor;
  requestId?: string;
  /** Encrypts `plaintext` items; without it such items fail with 412. */
  vault?: Vault;
  /**
   * The migration imported into: stored in `keys.migration_id` and the audit records, and in
   * `keys.pending_migration_id` of keys imported with its algorithm's hash (without one, such hashes of the
   * whole key are converted to Keyhold's form and seam's are refused).
   */
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
  const problems = importProblems(items, opts.migrationId !== undefined);
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
  const hashes = await requireNewHashes(tx, items, opts.migrationId !== undefined);

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

/** The stored hashes among `hashes` (in any workspace, deleted keys included). */
export async function storedHashes(tx: Executor, hashes: Iterable<string>): Promise<Set<string>> {
  const rows = await selectIn([...new Set(hashes)], (hs) => tx.selectFrom('keys').select('hash').where('hash', 'in', hs).execute());
  return new Set(rows.map((r) => r.hash));
}

/**
 * 409 naming every item whose key is stored already (a key may be stored once in the whole service, under
 * any form of its hash) or repeats an earlier item's; the items' hashes, in item order.
 */
async function requireNewHashes(tx: Executor, items: readonly ImportKeyItem[], migrated: boolean): Promise<ImportedHash[]> {
  const hashes = items.map((item) => importedHash(item, migrated));
  const firstIndex = new Map<string, number>();
  const conflicts: FieldProblem[] = [];
  const repeated: number[] = [];
  hashes.forEach(({ hash: h }, i) => {
    const first = firstIndex.get(h);
    if (first === undefined) firstIndex.set(h, i);
    else {
      repeated.push(i);
      conflicts.push({ path: `/${i}`, message: `has the same hash as item ${first}` });
    }
  });
  const existing = await storedHashes(
    tx,
    [...firstIndex.values()].flatMap((i) => hashes[i].sameKey),
  );
  const taken = existing.size ? [...firstIndex.values()].filter((i) => hashes[i].sameKey.some((h) => existing.has(h))) : [];
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
    const keyIds = await transact(db, async (tx, changes) => {
      const ids = await importKeys(tx, caller.workspaceId, items, {
        actor: actorOf(caller),
        requestId: caller.requestId,
        vault,
        authorize,
      });
      changes.keysAdded(caller.workspaceId);
      const perApi = new Map<string, number>();
      for (const item of items) perApi.set(item.apiId, (perApi.get(item.apiId) ?? 0) + 1);
      for (const [apiId, count] of perApi) await emitImportEvents(tx, caller.workspaceId, { apiId, count }, { now: Date.now(), changes });
      return ids;
    });
    return { keyIds };
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('data/conflict', 'a key with one of these hashes was created concurrently');
    throw err;
  }
}
