import { AppError, invalid, type FieldProblem } from '../../domain/errors.ts';
import type { Db } from '../../store/store.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { requireKey } from '../lookups.ts';
import { DAY_MS, fold, sumHourly, widen } from './hourly-sums.ts';

export interface KeyVerificationsQuery {
  keyId?: string;
  ownerId?: string;
  start?: number;
  end?: number;
  granularity?: 'hour' | 'day';
}
export interface KeyVerificationBucket {
  time: number;
  success: number;
  rateLimited: number;
  usageExceeded: number;
  forbidden: number;
  disabled: number;
  insufficientPermissions: number;
  expired: number;
  total: number;
}

/**
 * Verifications of one key (`keyId`), or summed over every live key of an identity (`ownerId`, its
 * externalId; `keyId` wins when both are given), per hour or UTC day, ascending. Only buckets with at
 * least one verification are listed. `end` defaults to now, `start` to 24 h before `end`.
 * Requires `api.<apiId>.read_analytics` for the API of every key involved.
 */
export async function getKeyVerifications(
  db: Db,
  caller: Caller,
  q: KeyVerificationsQuery,
  now = Date.now(),
): Promise<{ verifications: KeyVerificationBucket[] }> {
  const end = q.end ?? now;
  const start = q.start ?? end - DAY_MS;
  const problems: FieldProblem[] = [];
  if (q.keyId === undefined && q.ownerId === undefined) problems.push({ path: '/keyId', message: 'keyId or ownerId must be provided' });
  if (start >= end) problems.push({ path: '/start', message: 'must be less than end' });
  if (problems.length) throw invalid(problems);

  let keys: Array<{ id: string; api_id: string }>;
  if (q.keyId !== undefined) {
    keys = [await requireKey(db, caller.workspaceId, q.keyId)];
  } else {
    keys = await db
      .selectFrom('keys')
      .innerJoin('identities', 'identities.id', 'keys.identity_id')
      .innerJoin('apis', 'apis.id', 'keys.api_id')
      .select(['keys.id', 'keys.api_id'])
      .where('keys.workspace_id', '=', caller.workspaceId)
      .where('identities.external_id', '=', q.ownerId!)
      .where('keys.deleted_at', 'is', null)
      .where('apis.deleted_at', 'is', null)
      .orderBy('keys.id')
      .execute();
    if (keys.length === 0) throw new AppError('data/key-not-found', `no keys found for ownerId ${q.ownerId}`);
  }
  requirePermissions(caller, ...[...new Set(keys.map((k) => k.api_id))].sort().map((apiId) => `api.${apiId}.read_analytics`));

  const g = q.granularity ?? 'day';
  const { from, to } = widen(start, end, g);
  const rows = await sumHourly(
    db,
    { workspaceId: caller.workspaceId, from, to, keyIds: keys.map((k) => k.id) },
    { hour: true, key: false, identity: false },
  );
  const groups = [...fold(rows, g).values()].sort((a, b) => a.time! - b.time!);
  return {
    verifications: groups.map(({ time, counts: c }) => ({
      time: time!,
      success: c.valid,
      rateLimited: c.rateLimited,
      usageExceeded: c.usageExceeded,
      forbidden: c.forbidden,
      disabled: c.disabled,
      insufficientPermissions: c.insufficientPermissions,
      expired: c.expired,
      total: c.total,
    })),
  };
}

// ---------------------------------------------------------------------------------------------------
// analytics.getVerifications
