import { newId } from '../../domain/ids.ts';
import type { Executor } from '../../store/store.ts';

/** A rate limit an identity's keys share, as a request gives it; `autoApply` (v2) defaults to false. */
export interface IdentityRatelimit {
  name: string;
  limit: number;
  duration: number;
  /** Applied to every verification of the identity's keys, not only those naming it. */
  autoApply?: boolean;
}

/** A stored identity rate limit: its id stays the same while its name does (updates change it in place). */
export interface IdentityRatelimitView {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

/** The rate limits of each identity, by name. */
export async function ratelimitsOf(db: Executor, identityIds: string[]): Promise<Map<string, IdentityRatelimitView[]>> {
  const rows = identityIds.length
    ? await db
        .selectFrom('ratelimits')
        .select(['id', 'identity_id', 'name', 'limit', 'duration', 'auto_apply'])
        .where('identity_id', 'in', identityIds)
        .orderBy('name')
        .execute()
    : [];
  const byId = new Map<string, IdentityRatelimitView[]>();
  for (const r of rows) {
    const view = { id: r.id, name: r.name, limit: r.limit, duration: r.duration, autoApply: Boolean(r.auto_apply) };
    byId.set(r.identity_id!, [...(byId.get(r.identity_id!) ?? []), view]);
  }
  return byId;
}

/**
 * Makes the identity's rate limits exactly `limits`, by name: other names are deleted, listed ones updated in
 * place (keeping their id, as v2 shows it) or inserted. Names are unique per identity (checked by the callers).
 */
export async function replaceRatelimits(
  db: Executor,
  workspaceId: string,
  identityId: string,
  limits: IdentityRatelimit[],
  now: number,
): Promise<void> {
  let stale = db.deleteFrom('ratelimits').where('identity_id', '=', identityId);
  if (limits.length)
    stale = stale.where(
      'name',
      'not in',
      limits.map((r) => r.name),
    );
  await stale.execute();
  if (limits.length === 0) return;
  await db
    .insertInto('ratelimits')
    .values(
      limits.map((r) => ({
        id: newId('rl'),
        workspace_id: workspaceId,
        key_id: null,
        identity_id: identityId,
        name: r.name,
        type: 'consistent',
        limit: r.limit,
        duration: r.duration,
        auto_apply: r.autoApply ? 1 : 0,
        created_at: now,
        updated_at: now,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['identity_id', 'name']).doUpdateSet((eb) => ({
        limit: eb.ref('excluded.limit'),
        duration: eb.ref('excluded.duration'),
        auto_apply: eb.ref('excluded.auto_apply'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}
