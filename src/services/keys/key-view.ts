import { parseJson } from '../../domain/json.ts';
import type { Executor } from '../../store/store.ts';
import type { KeyRow } from '../../store/schema.ts';
import type { Vault } from '../../crypto/vault.ts';

/** A configured rate limit of a key or identity, as v2 shows it. */
export interface LimitView {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

/**
 * A key as both versions read it (v1's Key object: keys.getKey, apis.listKeys; v2's KeyResponseData is mapped
 * from it by http/v2/key-data.ts). Absent members are `undefined`, which the serializer omits.
 */
export interface KeyView {
  id: string;
  start: string;
  apiId: string;
  workspaceId: string;
  name?: string;
  ownerId?: string;
  externalId?: string;
  meta?: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
  lastUsedAt?: number;
  expires?: number;
  remaining?: number;
  refill?: { interval: 'daily' | 'monthly'; amount: number; refillDay?: number; lastRefillAt?: number };
  /** v1's view of the key's limit named `default`. */
  ratelimit?: { async: boolean; type: 'fast' | 'consistent'; limit: number; duration: number; refillRate: number; refillInterval: number };
  /** Every limit of the key itself, `default` included, sorted by name. */
  ratelimits: LimitView[];
  roles: string[];
  /** Effective permissions: attached directly or through a role, de-duplicated and sorted. */
  permissions: string[];
  enabled: boolean;
  environment?: string;
  /** `ratelimits`: the identity's own limits, sorted by name (v1 shows none of them). */
  identity?: { id: string; externalId: string; meta: Record<string, unknown>; ratelimits: LimitView[] };
  plaintext?: string;
}

const groupBy = <T>(rows: T[], key: (r: T) => string, value: (r: T) => string): Map<string, string[]> => {
  const m = new Map<string, string[]>();
  for (const r of rows) {
    const k = key(r);
    const list = m.get(k);
    if (list) list.push(value(r));
    else m.set(k, [value(r)]);
  }
  return m;
};

const uniqueSorted = (xs: string[] | undefined): string[] => [...new Set(xs ?? [])].sort();

/** Builds Key objects for stored key rows with a fixed number of queries, whatever the number of keys. */
export async function loadKeyViews(db: Executor, rows: KeyRow[]): Promise<KeyView[]> {
  if (rows.length === 0) return [];
  const related = await loadRelated(db, rows);
  return rows.map((r) => keyView(r, related));
}

type Related = Awaited<ReturnType<typeof loadRelated>>;

/** The roles, permissions (direct and through roles), rate limits and identity (with its limits) of each key, in five queries. */
async function loadRelated(db: Executor, rows: KeyRow[]) {
  const ids = rows.map((r) => r.id);
  const identityIds = [...new Set(rows.map((r) => r.identity_id).filter((x): x is string => x !== null))];
  const [roles, direct, viaRoles, limits, identities] = await Promise.all([
    db
      .selectFrom('keys_roles')
      .innerJoin('roles', 'roles.id', 'keys_roles.role_id')
      .select(['keys_roles.key_id', 'roles.name'])
      .where('keys_roles.key_id', 'in', ids)
      .execute(),
    db
      .selectFrom('keys_permissions')
      .innerJoin('permissions', 'permissions.id', 'keys_permissions.permission_id')
      .select(['keys_permissions.key_id', 'permissions.slug'])
      .where('keys_permissions.key_id', 'in', ids)
      .execute(),
    db
      .selectFrom('keys_roles')
      .innerJoin('roles_permissions', 'roles_permissions.role_id', 'keys_roles.role_id')
      .innerJoin('permissions', 'permissions.id', 'roles_permissions.permission_id')
      .select(['keys_roles.key_id', 'permissions.slug'])
      .where('keys_roles.key_id', 'in', ids)
      .execute(),
    db
      .selectFrom('ratelimits')
      .select(['id', 'key_id', 'identity_id', 'name', 'type', 'limit', 'duration', 'auto_apply'])
      .where((eb) => eb.or([eb('key_id', 'in', ids), ...(identityIds.length ? [eb('identity_id', 'in', identityIds)] : [])]))
      .orderBy('name')
      .execute(),
    identityIds.length
      ? db.selectFrom('identities').select(['id', 'external_id', 'meta']).where('id', 'in', identityIds).execute()
      : Promise.resolve([]),
  ]);
  const rolesByKey = groupBy(
    roles,
    (r) => r.key_id,
    (r) => r.name,
  );
  const permsByKey = groupBy(
    [...direct, ...viaRoles],
    (r) => r.key_id,
    (r) => r.slug,
  );
  const limitsByOwner = new Map<string, typeof limits>();
  for (const l of limits) {
    const owner = l.key_id ?? l.identity_id!;
    const list = limitsByOwner.get(owner);
    if (list) list.push(l);
    else limitsByOwner.set(owner, [l]);
  }
  const identityById = new Map(identities.map((i) => [i.id, i]));
  return { rolesByKey, permsByKey, limitsByOwner, identityById };
}

type LimitRow = { id: string; name: string; type: string; limit: number; duration: number; auto_apply: number };

const limitView = (l: LimitRow): LimitView => ({
  id: l.id,
  name: l.name,
  limit: l.limit,
  duration: l.duration,
  autoApply: l.auto_apply === 1,
});

function keyView(r: KeyRow, { rolesByKey, permsByKey, limitsByOwner, identityById }: Related): KeyView {
  const identity = r.identity_id ? identityById.get(r.identity_id) : undefined;
  const keyLimits = limitsByOwner.get(r.id) ?? [];
  const limit = keyLimits.find((l) => l.name === 'default');
  return {
    id: r.id,
    start: r.start,
    apiId: r.api_id,
    workspaceId: r.workspace_id,
    name: r.name ?? undefined,
    ownerId: identity?.external_id,
    externalId: identity?.external_id,
    meta: parseJson(r.meta) ?? undefined,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastUsedAt: r.last_used_at ?? undefined,
    expires: r.expires_at ?? undefined,
    remaining: r.remaining ?? undefined,
    refill:
      r.refill_interval && r.refill_amount !== null
        ? {
            interval: r.refill_interval as 'daily' | 'monthly',
            amount: r.refill_amount,
            refillDay: r.refill_day ?? undefined,
            lastRefillAt: r.last_refill_at ?? undefined,
          }
        : undefined,
    ratelimit: limit
      ? {
          async: limit.type === 'fast',
          type: limit.type as 'fast' | 'consistent',
          limit: limit.limit,
          duration: limit.duration,
          refillRate: limit.limit,
          refillInterval: limit.duration,
        }
      : undefined,
    ratelimits: keyLimits.map(limitView),
    roles: uniqueSorted(rolesByKey.get(r.id)),
    permissions: uniqueSorted(permsByKey.get(r.id)),
    enabled: r.enabled === 1,
    environment: r.environment ?? undefined,
    identity: identity
      ? {
          id: identity.id,
          externalId: identity.external_id,
          meta: parseJson(identity.meta) ?? {},
          ratelimits: (limitsByOwner.get(identity.id) ?? []).map(limitView),
        }
      : undefined,
  };
}

/**
 * Sets `plaintext` on the views of keys stored encrypted (recoverable or imported from plaintext), decrypting
 * them in one batch; other views stay without it. The caller has checked `decrypt_key`.
 */
export async function attachPlaintexts(db: Executor, vault: Vault, workspaceId: string, views: KeyView[]): Promise<void> {
  if (views.length === 0) return;
  const rows = await db
    .selectFrom('encrypted_keys')
    .select(['key_id', 'data_key_id', 'ciphertext'])
    .where('workspace_id', '=', workspaceId)
    .where(
      'key_id',
      'in',
      views.map((v) => v.id),
    )
    .execute();
  if (rows.length === 0) return;
  const plaintexts = await vault.decrypt(
    db,
    workspaceId,
    rows.map((r) => ({ dataKeyId: r.data_key_id, ciphertext: r.ciphertext })),
  );
  const byKey = new Map(rows.map((r, i) => [r.key_id, plaintexts[i]]));
  for (const view of views) {
    const plaintext = byKey.get(view.id);
    if (plaintext !== undefined) view.plaintext = plaintext;
  }
}
