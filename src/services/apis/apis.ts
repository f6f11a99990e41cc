import { sql } from 'kysely';
import { AppError, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import type { Db } from '../../store/store.ts';
import { recordAudit, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { attachPlaintexts, loadKeyViews, type KeyView } from '../keys/key-view.ts';
import { emitKeysDeleted, removeKeys } from '../keys/keys.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import { requireApi } from '../lookups.ts';
import { cappedCount, ownedRows, splitPage, TOTAL_CAP } from '../pagination.ts';
import { transact } from '../changes.ts';

export async function createApi(db: Db, caller: Caller, input: { name: string }): Promise<{ apiId: string; name: string }> {
  requirePermissions(caller, 'api.*.create_api');
  const apiId = newId('api');
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('apis')
      .values({
        id: apiId,
        workspace_id: caller.workspaceId,
        name: input.name,
        default_prefix: null,
        default_bytes: null,
        delete_protection: 0,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      })
      .execute();
    await recordAudit(tx, [callerAudit(caller, 'api.create', { type: 'api', id: apiId }, { diff: { name: input.name } })], now);
  });
  return { apiId, name: input.name };
}

export async function getApi(db: Db, caller: Caller, apiId: string): Promise<{ id: string; name: string; workspaceId: string }> {
  const api = await requireApi(db, caller.workspaceId, apiId);
  requirePermissions(caller, `api.${apiId}.read_api`);
  return { id: api.id, name: api.name, workspaceId: api.workspace_id };
}

export interface ApiSummary {
  id: string;
  name: string;
  createdAt: number;
  /** Live keys of the API, counted up to TOTAL_CAP + 1 (more than TOTAL_CAP). */
  keys: number;
}

/** The workspace's live APIs, oldest first, `limit` at a time (the dashboard); needs `api.*.read_api`. */
export async function listApis(
  db: Db,
  caller: Caller,
  q: { limit: number; cursor?: string },
): Promise<{ apis: ApiSummary[]; cursor?: string }> {
  requirePermissions(caller, 'api.*.read_api');
  let query = db
    .selectFrom('apis')
    .select(['id', 'name', 'created_at'])
    .where('workspace_id', '=', caller.workspaceId)
    .where('deleted_at', 'is', null);
  if (q.cursor) query = query.where('id', '>', q.cursor);
  const { page, cursor } = splitPage(
    await query
      .orderBy('id')
      .limit(q.limit + 1)
      .execute(),
    q.limit,
  );
  const keys = await keyCounts(
    db,
    page.map((r) => r.id),
  );
  return { apis: page.map((r, i) => ({ id: r.id, name: r.name, createdAt: r.created_at, keys: keys[i] })), cursor };
}

/**
 * Each API's live keys, counted as a list's total is (up to TOTAL_CAP + 1: a page of APIs costs the same whatever
 * they hold), in one statement. Each count names its API's id as a parameter rather than correlating with the page's
 * rows: the planner then reads each API's own statistics (a correlated count was estimated alike for every API and
 * walked the primary key, or sorted a big API's every key).
 */
async function keyCounts(db: Db, apiIds: string[]): Promise<number[]> {
  if (apiIds.length === 0) return [];
  const live = db.selectFrom('keys').select(sql<number>`1`.as('one')).where('deleted_at', 'is', null);
  const row = await db
    .selectNoFrom((eb) =>
      apiIds.map((id, i) =>
        eb
          .selectFrom(
            ownedRows(live, 'api_id', id)
              .limit(TOTAL_CAP + 1)
              .as('counted'),
          )
          .select((k) => k.fn.countAll<number>().as('n'))
          .as(`k${i}`),
      ),
    )
    .executeTakeFirstOrThrow();
  return apiIds.map((_, i) => Number((row as Record<string, unknown>)[`k${i}`] ?? 0));
}

/** Soft-deletes the API and every live key of it in one transaction (key.deleted for each key). */
export async function deleteApi(db: Db, caller: Caller, apiId: string): Promise<void> {
  await transact(db, async (tx, changes) => {
    const api = await requireApi(tx, caller.workspaceId, apiId);
    requirePermissions(caller, `api.${apiId}.delete_api`);
    changes.api(apiId);
    if (api.delete_protection === 1) throw new AppError('state/delete-protected', `api ${apiId} is protected from deletions`);
    const now = Date.now();
    // Only a live API is deleted: a concurrent delete that committed first (its row lock makes this one wait)
    // leaves nothing to update, and this one is then a 404, not a second deletion with a second audit record.
    const deleted = await tx
      .updateTable('apis')
      .set({ deleted_at: now, updated_at: now })
      .where('id', '=', apiId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (Number(deleted.numUpdatedRows) === 0) throw notFound('api', apiId);
    const keys = await tx
      .updateTable('keys')
      .set({ deleted_at: now, updated_at: now })
      .where('api_id', '=', apiId)
      .where('deleted_at', 'is', null)
      .returning(['id', 'api_id'])
      .execute();
    await emitKeysDeleted(tx, caller.workspaceId, keys, false, { now, changes });
    await recordAudit(
      tx,
      [callerAudit(caller, 'api.delete', { type: 'api', id: apiId }, { diff: { name: api.name, deletedKeys: keys.length } })],
      now,
    );
  });
}

/**
 * apis.deleteKeys: deletes every key of the API in one transaction, with one `key.delete` audit record per key
 * (as keys.deleteKey writes) and one change that drops the API's keys from every cache. Soft (the default)
 * marks the live keys deleted; `permanent` removes every key row of the API, those soft-deleted earlier
 * included. `deletedKeys` counts the keys this call deleted: the live keys when soft, the rows removed when
 * permanent. Needs `api.<apiId>.delete_key`.
 */
export async function deleteKeys(db: Db, caller: Caller, apiId: string, permanent: boolean): Promise<{ deletedKeys: number }> {
  return transact(db, async (tx, changes) => {
    await requireApi(tx, caller.workspaceId, apiId);
    requirePermissions(caller, `api.${apiId}.delete_key`);
    const deleted = await removeKeys(tx, caller, { apiId }, { permanent, alsoSoftDeleted: permanent, changes });
    if (deleted.length > 0) changes.api(apiId);
    return { deletedKeys: deleted.length };
  });
}

export interface ListKeysQuery {
  apiId: string;
  limit: number;
  cursor?: string;
  externalId?: string;
  ownerId?: string;
  decrypt?: boolean;
  /** Count the matching keys (v1's `total`, the dashboard's); v2 has no total, so it skips the count. */
  withTotal?: boolean;
}
export interface KeyPage {
  keys: KeyView[];
  /** Live keys matching the filter, counted up to TOTAL_CAP + 1 ("more than TOTAL_CAP"); absent when not asked for. */
  total?: number;
  cursor?: string;
}

/**
 * The dashboard's key search in one API: `query` is a key's id (that key, when it is a live key of this API) or an
 * identity's externalId (its live keys of this API, a page at a time, as listKeys filters them). Both are one index
 * read whatever the API holds: the primary key, then keys_identity_live. Not the key itself: a search is a GET,
 * and its address would carry the secret into logs and the browser's history.
 */
export async function searchKeys(
  db: Db,
  caller: Caller,
  q: { apiId: string; query: string; limit: number; cursor?: string },
): Promise<KeyPage> {
  const query = q.query.trim();
  await authorizeKeyList(db, caller, q.apiId);
  if (q.cursor === undefined) {
    const byId = await db
      .selectFrom('keys')
      .selectAll()
      .where('id', '=', query)
      .where('api_id', '=', q.apiId)
      .where('deleted_at', 'is', null)
      .execute();
    if (byId.length > 0) return { keys: await loadKeyViews(db, byId), total: 1 };
  }
  return keyPage(db, caller, { apiId: q.apiId, limit: q.limit, cursor: q.cursor, externalId: query });
}

/** What listing an API's keys needs (listKeys, searchKeys): the API in the caller's workspace (a 404), then `read_api` and `read_key` on it (and `decrypt_key` to decrypt). */
async function authorizeKeyList(db: Db, caller: Caller, apiId: string, decrypt = false): Promise<void> {
  await requireApi(db, caller.workspaceId, apiId);
  requirePermissions(caller, `api.${apiId}.read_api`, `api.${apiId}.read_key`, ...(decrypt ? [`api.${apiId}.decrypt_key`] : []));
}

/**
 * Live keys of an API ordered by id, `limit` at a time. `cursor` is returned only when another page
 * exists; pass it back to get that page. `total` is the number of live keys matching the filter, exact up to
 * TOTAL_CAP and TOTAL_CAP + 1 beyond it. Each read is one range of an index: keys_api_live (api_id, id) for the
 * API, keys_identity_live (identity_id, api_id, id) for one identity's keys.
 */
export async function listKeys(db: Db, caller: Caller, q: ListKeysQuery, vault?: Vault): Promise<KeyPage> {
  await authorizeKeyList(db, caller, q.apiId, q.decrypt);
  return keyPage(db, caller, q, q.decrypt ? requireVault(vault, 'decrypt=true') : undefined);
}

/** listKeys' page, the caller authorized already. */
async function keyPage(db: Db, caller: Caller, q: ListKeysQuery, decryptor?: Vault): Promise<KeyPage> {
  const withTotal = q.withTotal !== false;
  const externalId = q.externalId ?? q.ownerId;
  let identityId: string | undefined;
  if (externalId !== undefined) {
    const identity = await db
      .selectFrom('identities')
      .select('id')
      .where('workspace_id', '=', caller.workspaceId)
      .where('external_id', '=', externalId)
      .executeTakeFirst();
    if (!identity) return { keys: [], ...(withTotal ? { total: 0 } : {}) };
    identityId = identity.id;
  }
  let live = db.selectFrom('keys').where('deleted_at', 'is', null);
  if (identityId !== undefined) live = live.where('identity_id', '=', identityId);
  const pageQuery = ownedRows(live, 'api_id', q.apiId, { after: q.cursor })
    .selectAll()
    .limit(q.limit + 1);
  const counted = ownedRows(live, 'api_id', q.apiId);
  const [rows, total] = await Promise.all([pageQuery.execute(), withTotal ? cappedCount(db, counted) : undefined]);
  const { page, cursor } = splitPage(rows, q.limit);
  const keys = await loadKeyViews(db, page);
  if (decryptor) await attachPlaintexts(db, decryptor, caller.workspaceId, keys);
  return { keys, ...(total === undefined ? {} : { total }), cursor };
}
