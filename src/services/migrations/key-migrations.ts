import { sql } from 'kysely';
import { isObject } from '../../domain/json.ts';
import { invalid, type FieldProblem, quoted, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { hashKey } from '../../crypto/keys.ts';
import { requireVault, type Sealed, type Vault } from '../../crypto/vault.ts';
import { announceJobs, enqueue, type TaskDefinition, type TaskRegistry } from '../../jobs/queue.ts';
import type { Db, Executor, Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record-audit.ts';
import { actorOf, requirePermissions, type Actor, type Caller } from '../caller.ts';
import { importKeys } from './import-keys.ts';
import { importedStart, importItemProblems, type ImportKeyItem } from './import-item.ts';
import { requireApi, requireWorkspace } from '../lookups.ts';

/*
 * Key migrations (migrations.enqueueKeys; README: Key migrations): an operator creates a migration for a workspace; the
 * workspace enqueues batches of ≤ 100 keys into it; workers import them. Every enqueued item is a row of
 * `key_migration_items` from the moment the 202 is sent, and ends exactly once as `migrated` (with its
 * key id) or `failed` (with a reason).
 *
 * Exactly once: each request is one job holding its items. The job's transaction imports the keys of the
 * items still `pending`, marks every one of them `migrated` or `failed`, and deletes the job, all together
 * (see jobs/queue.ts for the fencing): a crash anywhere leaves either all of it or none of it, and a
 * retried job skips items that already have an outcome.
 */

export const MAX_ENQUEUE_ITEMS = 100;
/** getMigration lists at most this many failures (the first by item index). */
export const MAX_REPORTED_FAILURES = 100;

/** An item of a migrations.enqueueKeys request: a createKeys item without apiId and externalId, rate limit `{type, limit, duration}`. */
export type EnqueueKeyItem = Omit<ImportKeyItem, 'apiId' | 'externalId' | 'encrypted'>;

export interface EnqueueKeysInput {
  migrationId: string;
  apiId: string;
  keys: EnqueueKeyItem[];
}

/** One item as the import job carries it: the key's hash, and its plaintext only as the vault sealed it. */
export type MigrationItemSpec = Omit<EnqueueKeyItem, 'plaintext' | 'hash'> & { index: number; hash: string; encrypted?: Sealed };

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

export type MigrationStatus = 'pending' | 'running' | 'completed' | 'completed_with_failures';

export interface MigrationView {
  migrationId: string;
  workspaceId: string;
  status: MigrationStatus;
  counts: { enqueued: number; pending: number; migrated: number; failed: number };
  failures: Array<{ index: number; hash: string; reason: string }>;
  updatedAt: number;
}

/**
 * The primary key of an item. Statements on a batch's items name them by it: a query on `(migration_id,
 * item_index IN …, status)` may be planned on the `(migration_id, status)` index, which reads every pending
 * item of the migration (100,000s) instead of the batch's 100.
 */
const itemId = (migrationId: string, index: number): string => `${migrationId}:${index}`;

/**
 * Rules of enqueueKeys items that a schema cannot state (those of createKeys items: exactly one of
 * hash/plaintext, hash format, refill/remaining, meta size, prefix/start against the plaintext), with paths
 * `/keys/<i>/…`. Safe on a body that failed schema validation.
 */
export function enqueueItemProblems(body: unknown): FieldProblem[] {
  if (!isObject(body) || !Array.isArray(body.keys)) return [];
  return body.keys.flatMap((item, i) =>
    importItemProblems(item, `/keys/${i}`)
      // The duration form is required by the schema; the createKeys wording (refillInterval) does not apply here.
      .filter((p) => !p.path.endsWith('/ratelimit/refillInterval')),
  );
}

/** `mig_…`: created by the operator (CLI), for one workspace. */
export async function createMigration(
  db: Db,
  workspaceId: string,
  name: string | undefined,
  actor: Actor,
): Promise<{ migrationId: string }> {
  await requireWorkspace(db, workspaceId);
  const id = newId('mig');
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('key_migrations')
      .values({ id, workspace_id: workspaceId, name: name ?? null, created_at: now, updated_at: now })
      .execute();
    await recordAudit(
      tx,
      [{ workspaceId, event: 'migration.create', actor, target: { type: 'migration', id }, diff: { name: name ?? null } }],
      now,
    );
  });
  return { migrationId: id };
}

async function requireMigration(
  db: Executor,
  migrationId: string,
  workspaceId: string | null,
): Promise<{ id: string; workspace_id: string; updated_at: number }> {
  const row = await db
    .selectFrom('key_migrations')
    .select(['id', 'workspace_id', 'updated_at'])
    .where('id', '=', migrationId)
    .$if(workspaceId !== null, (q) => q.where('workspace_id', '=', workspaceId!))
    .executeTakeFirst();
  if (!row) throw notFound('migration', migrationId);
  return row;
}

/**
 * Status, counts and the first failures of a migration. `workspaceId` null: any workspace (the operator).
 * Status: `pending` while no item has an outcome (also with no items yet), `running` once some have and
 * some are pending, else `completed` or, when any failed, `completed_with_failures`. `updatedAt`: the last
 * enqueue or item outcome.
 */
export async function getMigration(db: Db, workspaceId: string | null, migrationId: string): Promise<MigrationView> {
  const migration = await requireMigration(db, migrationId, workspaceId);
  const [groups, failures] = await Promise.all([
    db
      .selectFrom('key_migration_items')
      .select((eb) => ['status', eb.fn.countAll<number>().as('n'), eb.fn.max('updated_at').as('last')])
      .where('migration_id', '=', migrationId)
      .groupBy('status')
      .execute(),
    db
      .selectFrom('key_migration_items')
      .select(['item_index', 'hash', 'reason'])
      .where('migration_id', '=', migrationId)
      .where('status', '=', 'failed')
      .orderBy('item_index')
      .limit(MAX_REPORTED_FAILURES)
      .execute(),
  ]);
  const counts = { enqueued: 0, pending: 0, migrated: 0, failed: 0 };
  let updatedAt = Number(migration.updated_at);
  for (const g of groups) {
    const n = Number(g.n);
    counts.enqueued += n;
    if (g.status === 'pending' || g.status === 'migrated' || g.status === 'failed') counts[g.status] += n;
    updatedAt = Math.max(updatedAt, Number(g.last));
  }
  const done = counts.migrated + counts.failed;
  const status: MigrationStatus =
    counts.pending > 0 || counts.enqueued === 0
      ? done > 0
        ? 'running'
        : 'pending'
      : counts.failed > 0
        ? 'completed_with_failures'
        : 'completed';
  return {
    migrationId: migration.id,
    workspaceId: migration.workspace_id,
    status,
    counts,
    failures: failures.map((f) => ({ index: Number(f.item_index), hash: f.hash, reason: f.reason ?? 'failed' })),
    updatedAt,
  };
}

/** migrations.getMigration: needs `api.*.read_key` (a migration may span APIs); another workspace's migration is a 404. */
export async function readMigration(db: Db, caller: Caller, migrationId: string): Promise<MigrationView> {
  requirePermissions(caller, 'api.*.read_key');
  return getMigration(db, caller.workspaceId, migrationId);
}

/**
 * migrations.enqueueKeys. Checks, in order: item rules (400, every problem) → migration of the caller's
 * workspace (404) → live API of the workspace (404) → `api.<api>.create_key`, plus `api.<api>.encrypt_key`
 * when an item has a plaintext (403) → a vault for plaintexts (412). Then ONE transaction: the items (indexes
 * continuing the migration's), the import job and the audit record. Plaintexts are sealed by the vault
 * before they are written: the job holds only hashes and ciphertexts.
 */
export async function enqueueKeys(
  db: Db,
  caller: Caller,
  input: EnqueueKeysInput,
  vault?: Vault,
): Promise<{ migrationId: string; enqueued: number }> {
  const problems = enqueueItemProblems(input);
  if (input.keys.length === 0 || input.keys.length > MAX_ENQUEUE_ITEMS)
    problems.push({ path: '/keys', message: `must hold 1..${MAX_ENQUEUE_ITEMS} items` });
  if (problems.length) throw invalid(problems);
  const { workspaceId } = caller;
  await requireMigration(db, input.migrationId, workspaceId);
  const api = await requireApi(db, workspaceId, input.apiId);
  const plaintexts = input.keys.filter((k) => k.plaintext !== undefined).map((k) => k.plaintext!);
  requirePermissions(caller, `api.${api.id}.create_key`, ...(plaintexts.length ? [`api.${api.id}.encrypt_key`] : []));
  const encryptor = plaintexts.length
    ? requireVault(vault, 'enqueueing plaintext keys (they are stored encrypted; enqueue their hashes instead)')
    : undefined;

  const now = Date.now();
  const n = input.keys.length;
  await db.transaction().execute(async (tx) => {
    // Serializes enqueues into one migration (the row lock on PostgreSQL, the single writer on SQLite), so
    // each request's indexes continue exactly where the previous one's ended.
    const touched = await tx
      .updateTable('key_migrations')
      .set({ updated_at: now })
      .where('id', '=', input.migrationId)
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    if (Number(touched.numUpdatedRows) !== 1) throw notFound('migration', input.migrationId);
    const last = await tx
      .selectFrom('key_migration_items')
      .select((eb) => eb.fn.max('item_index').as('last'))
      .where('migration_id', '=', input.migrationId)
      .executeTakeFirst();
    const first = last?.last === null || last?.last === undefined ? 0 : Number(last.last) + 1;

    const sealed = encryptor ? await encryptor.encrypt(tx, workspaceId, plaintexts) : [];
    let s = 0;
    const items: MigrationItemSpec[] = input.keys.map((key, i) => {
      const { plaintext, hash, ...rest } = key;
      const spec: MigrationItemSpec = { ...rest, index: first + i, hash: plaintext !== undefined ? hashKey(plaintext) : hash!.value };
      if (plaintext !== undefined) {
        spec.start = importedStart(key);
        spec.encrypted = sealed[s++];
      }
      return spec;
    });
    await tx
      .insertInto('key_migration_items')
      .values(
        items.map((item) => ({
          id: itemId(input.migrationId, item.index),
          migration_id: input.migrationId,
          item_index: item.index,
          hash: item.hash,
          status: 'pending',
          key_id: null,
          reason: null,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
    const jobId = await enqueue(
      tx,
      'migration.import',
      {
        migrationId: input.migrationId,
        workspaceId,
        apiId: api.id,
        actor: actorOf(caller),
        requestId: caller.requestId,
        items,
      },
      { now },
    );
    await recordAudit(
      tx,
      [
        {
          workspaceId,
          event: 'migration.enqueue',
          actor: actorOf(caller),
          target: { type: 'migration', id: input.migrationId },
          requestId: caller.requestId,
          diff: { apiId: api.id, enqueued: n, firstIndex: first, lastIndex: first + n - 1, jobId },
        },
      ],
      now,
    );
  });
  announceJobs();
  return { migrationId: input.migrationId, enqueued: n };
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
  const todo = payload.items.filter((i) => pending.has(i.index));
  const failed = new Map<number, string>();
  const migrated = new Map<number, string>();
  if (todo.length === 0) return { migrated: 0, failed: 0 };

  const api = await tx
    .selectFrom('apis')
    .select('id')
    .where('id', '=', apiId)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!api) {
    for (const item of todo) failed.set(item.index, `api ${apiId} was deleted before the key could be imported`);
  } else {
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
        .where('hash', 'in', [...new Set(todo.map((i) => i.hash))])
        .execute(),
    ]);
    const haveRoles = new Set(roles.map((r) => r.name));
    const havePermissions = new Set(permissions.map((p) => p.slug));
    const taken = new Set(existing.map((k) => k.hash));
    const firstOfHash = new Map<string, number>();
    for (const item of todo) {
      const missingRoles = [...new Set(item.roles ?? [])].filter((r) => !haveRoles.has(r));
      const missingPermissions = [...new Set(item.permissions ?? [])].filter((p) => !havePermissions.has(p));
      const reasons: string[] = [];
      if (taken.has(item.hash)) reasons.push('duplicate hash: a key with this hash already exists');
      else if (firstOfHash.has(item.hash)) reasons.push(`duplicate hash: item ${firstOfHash.get(item.hash)} has the same hash`);
      if (missingRoles.length) reasons.push(`missing ${missingRoles.length > 1 ? 'roles' : 'role'} ${quoted(missingRoles)}`);
      if (missingPermissions.length)
        reasons.push(`missing ${missingPermissions.length > 1 ? 'permissions' : 'permission'} ${quoted(missingPermissions)}`);
      if (reasons.length) failed.set(item.index, reasons.join('; '));
      else firstOfHash.set(item.hash, item.index);
    }
    const valid = todo.filter((i) => !failed.has(i.index));
    const keyIds = await importKeys(
      tx,
      workspaceId,
      valid.map(
        ({ index: _index, hash, ...rest }): ImportKeyItem => ({
          ...rest,
          apiId,
          hash: { value: hash, variant: 'sha256_base64' },
        }),
      ),
      { actor: payload.actor, requestId: payload.requestId, migrationId, now },
    );
    valid.forEach((item, i) => {
      migrated.set(item.index, keyIds[i]);
    });
  }
  await settle(tx, migrationId, 'migrated', migrated, now);
  await settle(tx, migrationId, 'failed', failed, now);
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
}

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
