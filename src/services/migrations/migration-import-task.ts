import { sql } from 'kysely';
import { quoted } from '../../domain/errors.ts';
import type { Sealed } from '../../crypto/vault.ts';
import type { TaskDefinition, TaskRegistry } from '../../jobs/queue.ts';
import type { Tx } from '../../store/store.ts';
import { writeChangeFeed } from '../changes.ts';
import type { Actor } from '../caller.ts';
import type { EnqueueKeyItem } from './enqueue-keys.ts';
import { importKeys } from './import-keys.ts';
import { importedHash, type ImportKeyItem } from './import-item.ts';
import type { HashVariant } from './hash-algorithms.ts';
import { emitImportEvents } from './migration-events.ts';
import { itemId } from './migration-records.ts';

/*
 * The `migration.import` task: a worker imports the keys of one enqueueKeys request (enqueue-keys.ts).
 *
 * Exactly once: each request is one job holding its items. The job's transaction imports the keys of the
 * items still `pending`, marks every one of them `migrated` or `failed`, and deletes the job, all together
 * (see jobs/queue.ts for the fencing): a crash anywhere leaves either all of it or none of it, and a
 * retried job skips items that already have an outcome.
 */

/**
 * One item as the import job carries it: the key's hash as stored (`variant` its algorithm's, absent for
 * Keyhold's own `sha256_base64`, as in jobs enqueued before there were others), and its plaintext only as
 * the vault sealed it.
 */
export type MigrationItemSpec = Omit<EnqueueKeyItem, 'plaintext' | 'hash'> & {
  index: number;
  hash: string;
  variant?: HashVariant;
  encrypted?: Sealed;
};

/** The item's hash as an import item states it. */
const hashOfSpec = (item: MigrationItemSpec) => ({ value: item.hash, variant: item.variant ?? ('sha256_base64' as const) });
/** Every stored hash naming the same key as the item's. */
const sameKeyOfSpec = (item: MigrationItemSpec): string[] => importedHash({ hash: hashOfSpec(item) }, true).sameKey;

/** The payload of a `migration.import` job: one enqueueKeys request. */
export interface MigrationImportPayload {
  migrationId: string;
  workspaceId: string;
  apiId: string;
  /** Who enqueued: the actor of the `key.create` audit records. */
  actor: Actor;
  requestId?: string;
  items: MigrationItemSpec[];
}

declare module '../../jobs/queue.ts' {
  interface TaskPayloads {
    'migration.import': MigrationImportPayload;
  }
}

/** The roles, permissions and key hashes that the store already has, of those a batch's items name. */
interface ExistingReferences {
  haveRoles: Set<string>;
  havePermissions: Set<string>;
  taken: Set<string>;
}

/**
 * Sets the outcome of items that are still pending, in one statement per outcome. Throws when any of them
 * is no longer pending (another run of the job got there first), which rolls the whole job back.
 */
async function settle(
  tx: Tx,
  migrationId: string,
  outcome: 'migrated' | 'failed',
  values: Map<number, string>,
  now: number,
): Promise<void> {
  if (values.size === 0) return;
  const ids = [...values.keys()].map((index) => itemId(migrationId, index));
  const byIndex = sql<string>`case item_index ${sql.join(
    [...values].map(([index, value]) => sql`when ${index} then ${value}`),
    sql` `,
  )} end`;
  const r = await tx
    .updateTable('key_migration_items')
    .set(
      outcome === 'migrated'
        ? { status: 'migrated', key_id: byIndex, updated_at: now }
        : { status: 'failed', reason: byIndex, updated_at: now },
    )
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== ids.length)
    throw new Error(`migration ${migrationId}: ${ids.length - Number(r.numUpdatedRows)} item(s) changed by another run`);
}

/** The payload's items that are still `pending` (a retried job skips those that already have an outcome). */
async function pendingItems(tx: Tx, payload: MigrationImportPayload): Promise<MigrationItemSpec[]> {
  const { migrationId } = payload;
  const pending = new Set(
    (
      await tx
        .selectFrom('key_migration_items')
        .select(['item_index', 'status'])
        .where(
          'id',
          'in',
          payload.items.map((i) => itemId(migrationId, i.index)),
        )
        .execute()
    )
      .filter((r) => r.status === 'pending')
      .map((r) => Number(r.item_index)),
  );
  return payload.items.filter((i) => pending.has(i.index));
}

/** Whether the API still exists, undeleted, in the workspace. */
async function apiIsLive(tx: Tx, workspaceId: string, apiId: string): Promise<boolean> {
  const api = await tx
    .selectFrom('apis')
    .select('id')
    .where('id', '=', apiId)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return api !== undefined;
}

/** Which of the roles, permissions and hashes the batch names exist (three lookups, run at once). */
async function existingReferences(tx: Tx, workspaceId: string, todo: MigrationItemSpec[]): Promise<ExistingReferences> {
  const roleNames = [...new Set(todo.flatMap((i) => i.roles ?? []))];
  const slugs = [...new Set(todo.flatMap((i) => i.permissions ?? []))];
  const [roles, permissions, existing] = await Promise.all([
    roleNames.length
      ? tx.selectFrom('roles').select('name').where('workspace_id', '=', workspaceId).where('name', 'in', roleNames).execute()
      : [],
    slugs.length
      ? tx.selectFrom('permissions').select('slug').where('workspace_id', '=', workspaceId).where('slug', 'in', slugs).execute()
      : [],
    tx
      .selectFrom('keys')
      .select('hash')
      .where('hash', 'in', [...new Set(todo.flatMap(sameKeyOfSpec))])
      .execute(),
  ]);
  return {
    haveRoles: new Set(roles.map((r) => r.name)),
    havePermissions: new Set(permissions.map((p) => p.slug)),
    taken: new Set(existing.map((k) => k.hash)),
  };
}

/** Records in `failed` why items cannot be imported: their hash is taken (or an earlier item's), roles or permissions are missing. */
function findItemFailures(
  todo: MigrationItemSpec[],
  { haveRoles, havePermissions, taken }: ExistingReferences,
  failed: Map<number, string>,
): void {
  const firstOfHash = new Map<string, number>();
  for (const item of todo) {
    const missingRoles = [...new Set(item.roles ?? [])].filter((r) => !haveRoles.has(r));
    const missingPermissions = [...new Set(item.permissions ?? [])].filter((p) => !havePermissions.has(p));
    const reasons: string[] = [];
    if (sameKeyOfSpec(item).some((h) => taken.has(h))) reasons.push('duplicate hash: a key with this hash already exists');
    else if (firstOfHash.has(item.hash)) reasons.push(`duplicate hash: item ${firstOfHash.get(item.hash)} has the same hash`);
    if (missingRoles.length) reasons.push(`missing ${missingRoles.length > 1 ? 'roles' : 'role'} ${quoted(missingRoles)}`);
    if (missingPermissions.length)
      reasons.push(`missing ${missingPermissions.length > 1 ? 'permissions' : 'permission'} ${quoted(missingPermissions)}`);
    if (reasons.length) failed.set(item.index, reasons.join('; '));
    else firstOfHash.set(item.hash, item.index);
  }
}

/** Imports the keys of `valid` and records each one's key id in `migrated`. */
async function importItems(
  tx: Tx,
  payload: MigrationImportPayload,
  valid: MigrationItemSpec[],
  migrated: Map<number, string>,
  now: number,
): Promise<void> {
  const { migrationId, workspaceId, apiId } = payload;
  const keyIds = await importKeys(
    tx,
    workspaceId,
    valid.map((item): ImportKeyItem => {
      const { index: _index, hash: _hash, variant: _variant, ...rest } = item;
      return { ...rest, apiId, hash: hashOfSpec(item) };
    }),
    { actor: payload.actor, requestId: payload.requestId, migrationId, now },
  );
  valid.forEach((item, i) => {
    migrated.set(item.index, keyIds[i]);
  });
  if (keyIds.length) await writeChangeFeed(tx, [{ kind: 'keys-added', id: workspaceId }]);
}

/**
 * Imports one enqueueKeys request, inside the job's transaction. Deterministic failures are outcomes of
 * single items, never retries: the API is gone, a role or permission does not exist, the hash exists (or
 * an earlier item of the batch has it). Anything else throws: the transaction rolls back and the job is
 * retried with backoff, skipping items that already have an outcome.
 */
export async function importMigrationBatch(
  tx: Tx,
  payload: MigrationImportPayload,
  now = Date.now(),
): Promise<{ migrated: number; failed: number }> {
  const { migrationId, workspaceId, apiId } = payload;
  const todo = await pendingItems(tx, payload);
  const failed = new Map<number, string>();
  const migrated = new Map<number, string>();
  if (todo.length === 0) return { migrated: 0, failed: 0 };

  if (!(await apiIsLive(tx, workspaceId, apiId))) {
    for (const item of todo) failed.set(item.index, `api ${apiId} was deleted before the key could be imported`);
  } else {
    findItemFailures(todo, await existingReferences(tx, workspaceId, todo), failed);
    await importItems(
      tx,
      payload,
      todo.filter((i) => !failed.has(i.index)),
      migrated,
      now,
    );
  }
  await settle(tx, migrationId, 'migrated', migrated, now);
  await settle(tx, migrationId, 'failed', failed, now);
  await emitImportEvents(tx, workspaceId, { apiId, count: migrated.size, migrationId }, { now });
  return { migrated: migrated.size, failed: failed.size };
}

/** When a job has used up its attempts: its items still pending fail, so that each one still ends exactly once. */
export async function giveUpMigrationBatch(tx: Tx, payload: MigrationImportPayload, attempts: number, now = Date.now()): Promise<void> {
  const reason = `could not be imported (an internal error, ${attempts} attempt${attempts === 1 ? '' : 's'}; the operator's logs have the details)`;
  await tx
    .updateTable('key_migration_items')
    .set({ status: 'failed', reason, updated_at: now })
    .where(
      'id',
      'in',
      payload.items.map((i) => itemId(payload.migrationId, i.index)),
    )
    .where('status', '=', 'pending')
    .execute();
  await emitImportEvents(tx, payload.workspaceId, { apiId: payload.apiId, count: 0, migrationId: payload.migrationId }, { now });
}

/** The `migration.import` task: runs importMigrationBatch; when the job gives up, fails the items still pending. */
export const migrationImportTask: TaskDefinition<MigrationImportPayload> = {
  async run(tx, payload) {
    await importMigrationBatch(tx, payload);
  },
  async giveUp(tx, payload, _reason, job) {
    await giveUpMigrationBatch(tx, payload, job.attempts);
  },
};

/** The tasks a Keyhold worker runs (the server's and `keyhold worker`). */
export const WORKER_TASKS: TaskRegistry = { 'migration.import': migrationImportTask };
