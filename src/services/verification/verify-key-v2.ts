import { can, type Caller } from '../caller.ts';
import { rehashMigratedKey } from '../migrations/lazy-rehash.ts';
import type { Db } from '../../store/store.ts';
import type { ConfiguredLimitRow } from './configured-limits.ts';
import type { KeyRecord } from './key-record.ts';
import type { Verifier, VerifyRequest, VerifyResponse } from './verifier.ts';

/** A limit this verification checked, with its decision: a configured one with its id and autoApply, an inline one with id "". */
export interface CheckedLimit {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
  reset: number;
  remaining: number;
  exceeded: boolean;
}

/** What keys.verifyKey v2 answers about a key it found (and may verify): v1's answer and the limits in v2's terms. */
export interface VerifiedV2 {
  response: VerifyResponse;
  /** The identity's own stored limits (without `ofIdentity`); empty without an identity or limits. */
  identityLimits: Omit<ConfiguredLimitRow, 'ofIdentity'>[];
  /** Every limit checked, in the order checked; undefined when none was. */
  checkedLimits?: CheckedLimit[];
}

/**
 * keys.verifyKey in v2 terms, through v1's verifier (same checks, credits and limits), for the route and the
 * lane alike. The key must be of the caller's workspace and the root key must grant `api.<its api>.verify_key`;
 * otherwise the answer is undefined (v2's bare NOT_FOUND of an unknown key), decided before anything is spent
 * or recorded. A key not found with a `migrationId` is looked up among that migration's foreign hashes,
 * rehashed, and verified once more. A cached key costs no store read: its record carries its limits' ids.
 */
export async function verifyKeyV2(
  ctx: { db: Db; verifier: Verifier },
  caller: Caller,
  req: VerifyRequest,
  migrationId?: string,
  requestId?: string,
): Promise<VerifiedV2 | undefined> {
  let found: KeyRecord | undefined;
  const authorize = (record: KeyRecord): boolean => {
    found = record;
    return record.workspaceId === caller.workspaceId && can(caller, `api.${record.apiId}.verify_key`);
  };
  let response = await ctx.verifier.verify(req, Date.now(), authorize, requestId);
  if (found === undefined && migrationId !== undefined && (await rehashMigratedKey(ctx.db, caller.workspaceId, migrationId, req.key))) {
    response = await ctx.verifier.verify(req, Date.now(), authorize, requestId);
  }
  const record = found as KeyRecord | undefined;
  if (response.code === 'NOT_FOUND' || record === undefined) return undefined;
  const rows = record.configuredLimits;
  return {
    response,
    identityLimits: rows.some((l) => l.ofIdentity) ? rows.filter((l) => l.ofIdentity).map(({ ofIdentity: _, ...l }) => l) : [],
    checkedLimits: response.limits && checkedLimits(response.limits, record),
  };
}

/** Each checked limit with its decision: a configured one with its id and autoApply, an inline one with id "". */
function checkedLimits({ requests, results }: NonNullable<VerifyResponse['limits']>, record: KeyRecord): CheckedLimit[] {
  return requests.map((l, i) => {
    const { configured } = l; // as the verifier applied it: none for an inline limit
    return {
      id: configured ? idOf(record.configuredLimits, l.name) : '',
      name: l.name,
      limit: l.limit,
      duration: l.duration,
      reset: results[i].reset,
      remaining: results[i].remaining,
      exceeded: !results[i].passed,
      autoApply: configured?.autoApply ?? false,
    };
  });
}

/**
 * The id of the stored limit of this name that applies: the key's own, else its identity's. A scan of the few rows
 * instead of a map per record, so that records with the same limits keep sharing them (record-parts.ts).
 */
function idOf(rows: KeyRecord['configuredLimits'], name: string): string {
  let id = '';
  for (const row of rows) {
    if (row.name !== name) continue;
    if (!row.ofIdentity) return row.id;
    id = row.id;
  }
  return id;
}
