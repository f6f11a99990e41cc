import { AppError, invalid, type FieldProblem, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { jsonSize, MAX_META_BYTES, parseJson } from '../../domain/json.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { IdentityRow } from '../../store/schema.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { recordAudit, callerAudit } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { cappedCount, ownedRows, splitPage } from '../pagination.ts';
import { transact } from '../changes.ts';
import { containsText } from '../search.ts';
import { ratelimitsOf, replaceRatelimits, type IdentityRatelimit, type IdentityRatelimitView } from './identity-ratelimits.ts';

/**
 * The id of the workspace's identity with this externalId, created (environment `default`, no meta)
 * when missing. Safe under concurrency: the insert is `ON CONFLICT DO NOTHING` on (workspace, externalId).
 */
export async function ensureIdentity(
  db: Executor,
  workspaceId: string,
  externalId: string,
  now = Date.now(),
): Promise<{ id: string; created: boolean }> {
  const existing = await db
    .selectFrom('identities')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('external_id', '=', externalId)
    .executeTakeFirst();
  if (existing) return { id: existing.id, created: false };
  const id = newId('id');
  await db
    .insertInto('identities')
    .values({
      id,
      workspace_id: workspaceId,
      external_id: externalId,
      environment: 'default',
      meta: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(['workspace_id', 'external_id']).doNothing())
    .execute();
  const row = await db
    .selectFrom('identities')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('external_id', '=', externalId)
    .executeTakeFirstOrThrow();
  return { id: row.id, created: row.id === id };
}

export interface IdentityView {
  id: string;
  externalId: string;
  environment: string;
  meta: Record<string, unknown>;
  ratelimits: IdentityRatelimitView[];
}

function identityProblems(input: { meta?: Record<string, unknown>; ratelimits?: IdentityRatelimit[] }): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (input.meta !== undefined && jsonSize(input.meta) > MAX_META_BYTES)
    problems.push({ path: '/meta', message: `must be at most ${MAX_META_BYTES} bytes as JSON` });
  const seen = new Set<string>();
  (input.ratelimits ?? []).forEach((r, i) => {
    if (seen.has(r.name)) problems.push({ path: `/ratelimits/${i}/name`, message: `ratelimit "${r.name}" is listed twice` });
    seen.add(r.name);
  });
  return problems;
}

const view = (row: IdentityRow, limits: Map<string, IdentityRatelimitView[]>): IdentityView => ({
  id: row.id,
  externalId: row.external_id,
  environment: row.environment,
  meta: parseJson(row.meta) ?? {},
  ratelimits: limits.get(row.id) ?? [],
});

export interface CreateIdentityInput {
  externalId: string;
  environment?: string;
  meta?: Record<string, unknown>;
  ratelimits?: IdentityRatelimit[];
}

export async function createIdentity(db: Db, caller: Caller, input: CreateIdentityInput): Promise<{ identityId: string }> {
  const problems = identityProblems(input);
  if (problems.length) throw invalid(problems);
  requirePermissions(caller, 'identity.*.create_identity');
  const identityId = newId('id');
  const now = Date.now();
  try {
    await db.transaction().execute(async (tx) => {
      const existing = await tx
        .selectFrom('identities')
        .select('id')
        .where('workspace_id', '=', caller.workspaceId)
        .where('external_id', '=', input.externalId)
        .executeTakeFirst();
      if (existing) throw conflict(input.externalId);
      await tx
        .insertInto('identities')
        .values({
          id: identityId,
          workspace_id: caller.workspaceId,
          external_id: input.externalId,
          environment: input.environment ?? 'default',
          meta: input.meta !== undefined ? JSON.stringify(input.meta) : null,
          created_at: now,
          updated_at: now,
        })
        .execute();
      await replaceRatelimits(tx, caller.workspaceId, identityId, input.ratelimits ?? [], now);
      await recordAudit(
        tx,
        [
          callerAudit(
            caller,
            'identity.create',
            { type: 'identity', id: identityId },
            { diff: { externalId: input.externalId, ratelimits: input.ratelimits ?? [] } },
          ),
        ],
        now,
      );
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(input.externalId);
    throw err;
  }
  return { identityId };
}

const conflict = (externalId: string) =>
  new AppError('data/conflict', `Identity with externalId "${externalId}" already exists in this workspace`);

/**
 * How a request names an identity: `identityId` (wins) or `externalId` (v1), or `identity` holding either
 * (v2; when one identity's id is another's externalId, the id wins).
 */
export interface IdentityLookup {
  identityId?: string;
  externalId?: string;
  identity?: string;
}

/** An identity of the caller's workspace, or 404. */
async function findIdentity(db: Executor, workspaceId: string, by: IdentityLookup): Promise<IdentityRow> {
  const named = by.identityId ?? by.externalId ?? by.identity;
  if (named === undefined) throw invalid([{ path: '/identityId', message: 'provide identityId or externalId' }]);
  const q = db.selectFrom('identities').selectAll().where('workspace_id', '=', workspaceId);
  const rows =
    by.identityId !== undefined
      ? await q.where('id', '=', by.identityId).execute()
      : by.externalId !== undefined
        ? await q.where('external_id', '=', by.externalId).execute()
        : await q.where((eb) => eb.or([eb('id', '=', named), eb('external_id', '=', named)])).execute();
  const row = rows.find((r) => r.id === named) ?? rows[0];
  if (!row) throw notFound('identity', named);
  return row;
}

export async function getIdentity(db: Db, caller: Caller, by: IdentityLookup): Promise<IdentityView> {
  const row = await findIdentity(db, caller.workspaceId, by);
  requirePermissions(caller, `identity.${row.id}.read_identity`);
  return view(row, await ratelimitsOf(db, [row.id]));
}

export interface ListIdentitiesQuery {
  limit: number;
  cursor?: string;
  /** Only this environment's identities (v1 always names one); every environment when absent (v2). */
  environment?: string;
  /** Only identities whose id or externalId contains it, ignoring case (v2). */
  search?: string;
  /** Count the matching identities, up to TOTAL_CAP + 1 (v1's `total`); v2 has no total, so it skips the count. */
  withTotal?: boolean;
}

export async function listIdentities(
  db: Db,
  caller: Caller,
  q: ListIdentitiesQuery,
): Promise<{ identities: IdentityView[]; total?: number; cursor?: string }> {
  requirePermissions(caller, 'identity.*.read_identity');
  let base = db.selectFrom('identities');
  if (q.search) base = base.where(containsText(['id', 'external_id'], q.search));
  // identities_environment (workspace_id, environment, id) for one environment, identities_workspace otherwise.
  const owned = (after?: string) =>
    q.environment === undefined
      ? ownedRows(base, 'workspace_id', caller.workspaceId, { after })
      : ownedRows(base.where('workspace_id', '=', caller.workspaceId), 'environment', q.environment, { after });
  const [rows, total] = await Promise.all([
    owned(q.cursor)
      .selectAll()
      .limit(q.limit + 1)
      .execute(),
    q.withTotal === false ? undefined : cappedCount(db, owned()),
  ]);
  const { page, cursor } = splitPage(rows, q.limit);
  const limits = await ratelimitsOf(
    db,
    page.map((r) => r.id),
  );
  return { identities: page.map((r) => view(r, limits)), ...(total === undefined ? {} : { total }), cursor };
}

export interface UpdateIdentityInput extends IdentityLookup {
  meta?: Record<string, unknown>;
  ratelimits?: IdentityRatelimit[];
}

/** Sets meta when given (`{}` clears it) and replaces the whole set of rate limits when `ratelimits` is given. */
export async function updateIdentity(db: Db, caller: Caller, input: UpdateIdentityInput): Promise<IdentityView> {
  const problems = identityProblems(input);
  if (problems.length) throw invalid(problems);
  return transact(db, async (tx, changes) => {
    const row = await findIdentity(tx, caller.workspaceId, input);
    requirePermissions(caller, `identity.${row.id}.update_identity`);
    changes.identity(row.id);
    const now = Date.now();
    await tx
      .updateTable('identities')
      .set({
        updated_at: now,
        ...(input.meta !== undefined ? { meta: JSON.stringify(input.meta) } : {}),
      })
      .where('id', '=', row.id)
      .execute();
    if (input.ratelimits !== undefined) await replaceRatelimits(tx, caller.workspaceId, row.id, input.ratelimits, now);
    await recordAudit(
      tx,
      [
        callerAudit(
          caller,
          'identity.update',
          { type: 'identity', id: row.id },
          {
            diff: {
              ...(input.meta !== undefined ? { meta: input.meta } : {}),
              ...(input.ratelimits !== undefined ? { ratelimits: input.ratelimits } : {}),
            },
          },
        ),
      ],
      now,
    );
    const updated = await tx.selectFrom('identities').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
    return view(updated, await ratelimitsOf(tx, [row.id]));
  });
}

/** Deletes the identity (named by id, or as IdentityLookup says) and its rate limits; its keys stay and lose the link. */
export async function deleteIdentity(db: Db, caller: Caller, by: string | IdentityLookup): Promise<void> {
  await transact(db, async (tx, changes) => {
    const row = await findIdentity(tx, caller.workspaceId, typeof by === 'string' ? { identityId: by } : by);
    requirePermissions(caller, `identity.${row.id}.delete_identity`);
    changes.identity(row.id);
    const now = Date.now();
    await tx.deleteFrom('identities').where('id', '=', row.id).execute();
    await recordAudit(
      tx,
      [callerAudit(caller, 'identity.delete', { type: 'identity', id: row.id }, { diff: { externalId: row.external_id } })],
      now,
    );
  });
}
