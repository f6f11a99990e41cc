import type { RefillSchedule } from '../../domain/refill.ts';
import type { Executor } from '../../store/store.ts';
import { loadKeyViews } from '../keys/key-view.ts';
import { liveKeys } from '../lookups.ts';

export interface ConfiguredLimit {
  name: string;
  limit: number;
  duration: number;
  type: 'fast' | 'consistent';
  autoApply: boolean;
}

/** Everything verification needs about a key, as cached in memory (credits excepted: the store is their authority). */
export interface KeyRecord {
  id: string;
  hash: string;
  workspaceId: string;
  apiId: string;
  name?: string;
  meta?: Record<string, unknown>;
  enabled: boolean;
  expires?: number;
  environment?: string;
  /** Whether the key has a credit limit; the count itself is read from and spent in the store. */
  hasCredits: boolean;
  refill: RefillSchedule | null;
  lastRefillAt: number | null;
  identity?: { id: string; externalId: string; meta: Record<string, unknown> };
  roles: string[];
  permissions: string[];
  permissionSet: ReadonlySet<string>;
  /** Identity limits overlaid by the key's own limits of the same name. */
  limits: Map<string, ConfiguredLimit>;
}

/** Loads a live key (key and API not deleted) by its plaintext's hash, or null. */
export async function loadKeyRecord(db: Executor, hash: string): Promise<KeyRecord | null> {
  const row = await liveKeys(db).where('keys.hash', '=', hash).executeTakeFirst();
  if (!row) return null;
  const [[view], limitRows] = await Promise.all([
    loadKeyViews(db, [row]),
    db
      .selectFrom('ratelimits')
      .select(['key_id', 'name', 'limit', 'duration', 'type', 'auto_apply'])
      .where((eb) => eb.or([eb('key_id', '=', row.id), ...(row.identity_id ? [eb('identity_id', '=', row.identity_id)] : [])]))
      .execute(),
  ]);
  const limits = new Map<string, ConfiguredLimit>();
  // Identity limits first, then the key's: a key limit replaces an identity limit of the same name.
  for (const l of [...limitRows.filter((r) => r.key_id === null), ...limitRows.filter((r) => r.key_id !== null)]) {
    limits.set(l.name, {
      name: l.name,
      limit: l.limit,
      duration: l.duration,
      type: l.type === 'fast' ? 'fast' : 'consistent',
      autoApply: l.auto_apply === 1,
    });
  }
  return {
    id: row.id,
    hash,
    workspaceId: row.workspace_id,
    apiId: row.api_id,
    name: view.name,
    meta: view.meta,
    enabled: row.enabled === 1,
    expires: view.expires,
    environment: view.environment,
    hasCredits: row.remaining !== null,
    refill:
      row.refill_interval && row.refill_amount !== null
        ? { interval: row.refill_interval as 'daily' | 'monthly', amount: row.refill_amount, refillDay: row.refill_day }
        : null,
    lastRefillAt: row.last_refill_at,
    identity: view.identity,
    roles: view.roles,
    permissions: view.permissions,
    permissionSet: new Set(view.permissions),
    limits,
  };
}
