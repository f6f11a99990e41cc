import { isObject } from '../../domain/json.ts';
import { invalid, type FieldProblem, notFound } from '../../domain/errors.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import { announceJobs, enqueue } from '../../jobs/queue.ts';
import type { Db, Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record-audit.ts';
import { actorOf, requirePermissions, type Caller } from '../caller.ts';
import { importedHash, importedStart, importItemProblems, type ImportKeyItem } from './import-item.ts';
import { algorithmOfVariant, variantOfAlgorithm, type MigrationAlgorithm } from './hash-algorithms.ts';
import type { MigrationItemSpec } from './migration-import-task.ts';
import { itemId, requireMigration } from './migration-records.ts';
import { requireApi } from '../lookups.ts';

/*
 * Enqueueing keys into a migration (migrations.enqueueKeys): the items' rows, the import job that carries
 * them (run by migration-import-task.ts) and the audit record, in one transaction.
 */

export const MAX_ENQUEUE_ITEMS = 100;

/** An item of a migrations.enqueueKeys request: a createKeys item without apiId and externalId, rate limit `{type, limit, duration}`. */
export type EnqueueKeyItem = Omit<ImportKeyItem, 'apiId' | 'externalId' | 'encrypted'>;

/** The body of a migrations.enqueueKeys request. */
export interface EnqueueKeysInput {
  migrationId: string;
  apiId: string;
  keys: EnqueueKeyItem[];
}

/**
 * Rules of enqueueKeys items that a schema cannot state (those of createKeys items: exactly one of
 * hash/plaintext, hash format, refill/remaining, meta size, prefix/start against the plaintext), with paths
 * `/keys/<i>/…`. Safe on a body that failed schema validation.
 */
export function enqueueItemProblems(body: unknown): FieldProblem[] {
  if (!isObject(body) || !Array.isArray(body.keys)) return [];
  return body.keys.flatMap((item, i) =>
    importItemProblems(item, `/keys/${i}`, true)
      // The duration form is required by the schema; the createKeys wording (refillInterval) does not apply here.
      .filter((p) => !p.path.endsWith('/ratelimit/refillInterval')),
  );
}

/** What the checks of an enqueue found: the API, the request's plaintexts, and the vault that seals them (when any). */
interface CheckedEnqueue {
  apiId: string;
  plaintexts: string[];
  encryptor: Vault | undefined;
}

/** The checks of enqueueKeys before anything is written, in their order (see enqueueKeys). */
async function checkEnqueue(db: Db, caller: Caller, input: EnqueueKeysInput, vault: Vault | undefined): Promise<CheckedEnqueue> {
  const problems = enqueueItemProblems(input);
  if (input.keys.length === 0 || input.keys.length > MAX_ENQUEUE_ITEMS)
    problems.push({ path: '/keys', message: `must hold 1..${MAX_ENQUEUE_ITEMS} items` });
  if (problems.length) throw invalid(problems);
  const { workspaceId } = caller;
  const migration = await requireMigration(db, input.migrationId, workspaceId);
  const variants = variantProblems(input.keys, migration.algorithm);
  if (variants.length) throw invalid(variants);
  const api = await requireApi(db, workspaceId, input.apiId);
  const plaintexts = input.keys.filter((k) => k.plaintext !== undefined).map((k) => k.plaintext!);
  requirePermissions(caller, `api.${api.id}.create_key`, ...(plaintexts.length ? [`api.${api.id}.encrypt_key`] : []));
  const encryptor = plaintexts.length
    ? requireVault(vault, 'enqueueing plaintext keys (they are stored encrypted; enqueue their hashes instead)')
    : undefined;
  return { apiId: api.id, plaintexts, encryptor };
}

/**
 * A hash in Keyhold's form (`sha256_base64`) fits any migration; another algorithm's only a migration of
 * that algorithm, the one a verification naming it rewrites with (400 at each other item's variant).
 */
function variantProblems(keys: EnqueueKeyItem[], algorithm: MigrationAlgorithm): FieldProblem[] {
  return keys.flatMap((key, i) =>
    key.hash && key.hash.variant !== 'sha256_base64' && algorithmOfVariant(key.hash.variant) !== algorithm
      ? [
          {
            path: `/keys/${i}/hash/variant`,
            message: `this migration's keys are hashed with ${algorithm}: must be ${variantOfAlgorithm(algorithm)}${algorithm === 'sha256' ? '' : ' or sha256_base64'}`,
          },
        ]
      : [],
  );
}

/** Touches the migration (404 when it is gone) and returns the index its next item gets. */
export async function nextItemIndex(tx: Tx, migrationId: string, workspaceId: string, now: number): Promise<number> {
  // Serializes enqueues into one migration (the row lock on PostgreSQL, the single writer on SQLite), so
  // each request's indexes continue exactly where the previous one's ended.
  const touched = await tx
    .updateTable('key_migrations')
    .set({ updated_at: now })
    .where('id', '=', migrationId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (Number(touched.numUpdatedRows) !== 1) throw notFound('migration', migrationId);
  const last = await tx
    .selectFrom('key_migration_items')
    .select((eb) => eb.fn.max('item_index').as('last'))
    .where('migration_id', '=', migrationId)
    .executeTakeFirst();
  return last?.last === null || last?.last === undefined ? 0 : Number(last.last) + 1;
}

/** The job's items, indexed from `first`: each key's hash, and its plaintext only as the vault sealed it. */
async function sealItems(
  tx: Tx,
  workspaceId: string,
  keys: EnqueueKeyItem[],
  first: number,
  { plaintexts, encryptor }: CheckedEnqueue,
): Promise<MigrationItemSpec[]> {
  const sealed = encryptor ? await encryptor.encrypt(tx, workspaceId, plaintexts) : [];
  let s = 0;
  return keys.map((key, i) => {
    const { plaintext, hash, ...rest } = key;
    const spec: MigrationItemSpec = { ...rest, index: first + i, hash: importedHash(key, true).hash };
    if (hash && hash.variant !== 'sha256_base64') spec.variant = hash.variant;
    if (plaintext !== undefined) {
      spec.start = importedStart(key);
      spec.encrypted = sealed[s++];
    }
    return spec;
  });
}

/** One `pending` row of `key_migration_items` per item. */
async function insertItems(tx: Tx, migrationId: string, items: MigrationItemSpec[], now: number): Promise<void> {
  await tx
    .insertInto('key_migration_items')
    .values(
      items.map((item) => ({
        id: itemId(migrationId, item.index),
        migration_id: migrationId,
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
}

/** The `migration.import` job holding the items, then the `migration.enqueue` audit record naming it. */
async function writeJobAndAudit(
  tx: Tx,
  caller: Caller,
  { migrationId, apiId, first, items }: { migrationId: string; apiId: string; first: number; items: MigrationItemSpec[] },
  now: number,
): Promise<void> {
  const { workspaceId } = caller;
  const n = items.length;
  const jobId = await enqueue(
    tx,
    'migration.import',
    { migrationId, workspaceId, apiId, actor: actorOf(caller), requestId: caller.requestId, items },
    { now },
  );
  await recordAudit(
    tx,
    [
      {
        workspaceId,
        event: 'migration.enqueue',
        actor: actorOf(caller),
        target: { type: 'migration', id: migrationId },
        requestId: caller.requestId,
        diff: { apiId, enqueued: n, firstIndex: first, lastIndex: first + n - 1, jobId },
      },
    ],
    now,
  );
}

/**
 * migrations.enqueueKeys. Checks, in order: item rules (400, every problem) → migration of the caller's
 * workspace (404) → hash variants that the migration's algorithm cannot rewrite (400) → live API of the
 * workspace (404) → `api.<api>.create_key`, plus `api.<api>.encrypt_key`
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
  const checked = await checkEnqueue(db, caller, input, vault);
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    const first = await nextItemIndex(tx, input.migrationId, caller.workspaceId, now);
    const items = await sealItems(tx, caller.workspaceId, input.keys, first, checked);
    await insertItems(tx, input.migrationId, items, now);
    await writeJobAndAudit(tx, caller, { migrationId: input.migrationId, apiId: checked.apiId, first, items }, now);
  });
  announceJobs();
  return { migrationId: input.migrationId, enqueued: input.keys.length };
}
