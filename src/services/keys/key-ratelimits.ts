import type { Executor } from '../../store/store.ts';
import { namedRatelimitRow, type NamedRatelimitInput } from './key-attributes.ts';

type LimitAudit = { name: string; limit: number; duration: number; autoApply: boolean };

/**
 * Unkey v2's keys.updateKey `ratelimits`: the key's own limits become exactly the listed ones, matched by
 * name — a listed name the key has is updated in place (its id and, for a v1 limit, its type stay), a new name
 * is added, a name not listed is removed (`default`, v1's `ratelimit`, included; `[]` removes them all).
 * Runs inside the caller's transaction once the key row is locked; returns `{from, to}` for the audit record.
 */
export async function replaceKeyRatelimits(
  tx: Executor,
  workspaceId: string,
  keyId: string,
  wanted: NamedRatelimitInput[],
  now: number,
): Promise<{ from: LimitAudit[]; to: LimitAudit[] }> {
  const current = await tx
    .selectFrom('ratelimits')
    .select(['id', 'name', 'limit', 'duration', 'auto_apply'])
    .where('key_id', '=', keyId)
    .orderBy('name')
    .execute();
  const byName = new Map(current.map((r) => [r.name, r]));
  const listed = new Set(wanted.map((r) => r.name));
  const removed = current.filter((r) => !listed.has(r.name)).map((r) => r.id);
  if (removed.length) await tx.deleteFrom('ratelimits').where('id', 'in', removed).execute();
  const added = wanted.filter((r) => !byName.has(r.name));
  if (added.length) {
    await tx
      .insertInto('ratelimits')
      .values(added.map((r) => namedRatelimitRow(workspaceId, keyId, r, now)))
      .execute();
  }
  for (const r of wanted) {
    const row = byName.get(r.name);
    if (!row) continue;
    await tx
      .updateTable('ratelimits')
      .set({ limit: r.limit, duration: r.duration, auto_apply: r.autoApply ? 1 : 0, updated_at: now })
      .where('id', '=', row.id)
      .execute();
  }
  return {
    from: current.map((r) => ({ name: r.name, limit: r.limit, duration: r.duration, autoApply: r.auto_apply === 1 })),
    to: [...wanted]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map(({ name, limit, duration, autoApply }) => ({ name, limit, duration, autoApply })),
  };
}
