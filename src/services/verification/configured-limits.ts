import type { Executor } from '../../store/store.ts';

/** A stored rate limit of a key or of its identity, as Unkey v2 shows it in a verification (with its id). */
export interface ConfiguredLimitRow {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
  /** Whether it is the identity's (shared by its keys) rather than the key's own. */
  ofIdentity: boolean;
}

/**
 * The stored limits of a key and of its identity, sorted by name, in one statement. The cached key record
 * (key-record.ts) keeps what deciding needs and no ids, so that records with the same limits share them;
 * keys.verifyKey v2, which answers with the ids, reads them here, and only for keys that have limits.
 */
export async function configuredLimits(db: Executor, keyId: string, identityId: string | undefined): Promise<ConfiguredLimitRow[]> {
  const rows = await db
    .selectFrom('ratelimits')
    .select(['id', 'name', 'limit', 'duration', 'auto_apply', 'identity_id'])
    .where((eb) =>
      identityId === undefined ? eb('key_id', '=', keyId) : eb.or([eb('key_id', '=', keyId), eb('identity_id', '=', identityId)]),
    )
    .orderBy('name')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    limit: Number(r.limit),
    duration: Number(r.duration),
    autoApply: Boolean(r.auto_apply),
    ofIdentity: r.identity_id !== null,
  }));
}
