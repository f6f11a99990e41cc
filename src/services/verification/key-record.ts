import { CompiledQuery } from 'kysely';
import type { RefillSchedule } from '../../domain/refill.ts';
import type { Capabilities, Executor } from '../../store/store.ts';
import { RecordParts } from './record-parts.ts';
import type { ConfiguredLimitRow } from './configured-limits.ts';

export interface ConfiguredLimit {
  name: string;
  limit: number;
  duration: number;
  type: 'fast' | 'consistent';
  autoApply: boolean;
}

/**
 * Everything verification needs about a key, as cached in memory (credits excepted: the store is their
 * authority). Parts that many keys have in common (workspace and API ids, role and permission sets, an empty
 * set of limits) are shared between records (see RecordParts): treat a record as read-only.
 */
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
  /** When the last refill happened, as far as this node knows (the verifier updates it after a refill). */
  lastRefillAt: number | null;
  identity?: { id: string; externalId: string; meta: Record<string, unknown> };
  /** Sorted, de-duplicated. */
  roles: readonly string[];
  /** Effective permissions (direct and through roles), sorted, de-duplicated. */
  permissions: readonly string[];
  permissionSet: ReadonlySet<string>;
  /** Identity limits overlaid by the key's own limits of the same name. */
  limits: ReadonlyMap<string, ConfiguredLimit>;
  /**
   * Every stored limit of the key and of its identity, with its id, sorted by name (then id): what keys.verifyKey
   * v2 shows, so that a cached v2 verification reads nothing either. Empty (shared) for a key without limits.
   */
  configuredLimits: readonly ConfiguredLimitRow[];
}

/** A configured limit as the statement returns it: [is the key's own (else its identity's), name, limit, duration, type, auto_apply, id]. */
type LimitTuple = [boolean | number, string, number, number, string, number | boolean, string];

interface RecordRow {
  id: string;
  workspace_id: string;
  api_id: string;
  name: string | null;
  meta: string | null;
  enabled: number | boolean;
  expires_at: number | null;
  environment: string | null;
  has_credits: number | boolean;
  refill_interval: string | null;
  refill_amount: number | null;
  refill_day: number | null;
  last_refill_at: number | null;
  identity_id: string | null;
  identity_external_id: string | null;
  identity_meta: string | null;
  /** JSON arrays: text on SQLite, already parsed on PostgreSQL. */
  roles: string | string[];
  permissions: string | string[];
  limits: string | LimitTuple[];
}

/** The statement's text with the dialect's JSON aggregate and row constructor. */
function recordSql(agg: (expr: string) => string, row: string, param: string): string {
  return `select k.id, k.workspace_id, k.api_id, k.name, k.meta, k.enabled, k.expires_at, k.environment,
  k.remaining is not null as has_credits, k.refill_interval, k.refill_amount, k.refill_day, k.last_refill_at,
  k.identity_id, i.external_id as identity_external_id, i.meta as identity_meta,
  (select ${agg('r.name')} from keys_roles kr join roles r on r.id = kr.role_id where kr.key_id = k.id) as roles,
  (select ${agg('p.slug')} from permissions p where p.id in (
    select kp.permission_id from keys_permissions kp where kp.key_id = k.id
    union
    select rp.permission_id from keys_roles kr join roles_permissions rp on rp.role_id = kr.role_id where kr.key_id = k.id
  )) as permissions,
  (select ${agg(`${row}(l.key_id is not null, l.name, l."limit", l.duration, l.type, l.auto_apply, l.id)`)} from ratelimits l
    where l.key_id = k.id or (k.identity_id is not null and l.identity_id = k.identity_id)) as limits
from keys k
join apis a on a.id = k.api_id
left join identities i on i.id = k.identity_id
where k.hash = ${param} and k.deleted_at is null and a.deleted_at is null`;
}

const RECORD_SQL: Record<Capabilities['dialect'], string> = {
  sqlite: recordSql((e) => `json_group_array(${e})`, 'json_array', '?'),
  postgres: recordSql((e) => `coalesce(json_agg(${e}), '[]'::json)`, 'json_build_array', '$1'),
};

const parsed = <T>(value: string | T): T => (typeof value === 'string' ? (JSON.parse(value) as T) : value);

/**
 * Loads live keys (key and API not deleted) by the hash of their plaintext, with everything verification
 * needs (API, identity, roles, permissions direct and through roles, the key's and its identity's rate
 * limits) in ONE statement per dialect, its JSON aggregated by the store; records share their common parts.
 */
export class KeyRecordLoader {
  readonly #db: Executor;
  readonly #sql: string;
  readonly #parts = new RecordParts();

  constructor(db: Executor, dialect: Capabilities['dialect']) {
    this.#db = db;
    this.#sql = RECORD_SQL[dialect];
  }

  async load(hash: string): Promise<KeyRecord | null> {
    const { rows } = await this.#db.executeQuery<RecordRow>(CompiledQuery.raw(this.#sql, [hash]));
    return rows.length ? this.#record(rows[0], hash) : null;
  }

  #record(row: RecordRow, hash: string): KeyRecord {
    const parts = this.#parts;
    const { list: permissions, set: permissionSet } = parts.permissions(parsed<string[]>(row.permissions));
    const limits = parsed<LimitTuple[]>(row.limits);
    return {
      id: row.id,
      hash,
      workspaceId: parts.id(row.workspace_id),
      apiId: parts.id(row.api_id),
      name: row.name ?? undefined,
      meta: row.meta === null ? undefined : (JSON.parse(row.meta) as Record<string, unknown>),
      enabled: Boolean(row.enabled),
      expires: row.expires_at ?? undefined,
      environment: row.environment === null ? undefined : parts.id(row.environment),
      hasCredits: Boolean(row.has_credits),
      refill:
        row.refill_interval && row.refill_amount !== null
          ? { interval: row.refill_interval as 'daily' | 'monthly', amount: row.refill_amount, refillDay: row.refill_day }
          : null,
      lastRefillAt: row.last_refill_at,
      identity:
        row.identity_id === null
          ? undefined
          : { id: row.identity_id, externalId: row.identity_external_id ?? '', meta: JSON.parse(row.identity_meta ?? '{}') },
      roles: parts.roles(parsed<string[]>(row.roles)),
      permissions,
      permissionSet,
      limits: parts.limits(overlaid(limits)),
      configuredLimits: parts.limitRows(limitRows(limits)),
    };
  }
}

/** Identity limits first, then the key's: a key limit replaces an identity limit of the same name. */
function overlaid(tuples: LimitTuple[]): ConfiguredLimit[] {
  const byName = new Map<string, ConfiguredLimit>();
  const ordered = [...tuples.filter((t) => !t[0]), ...tuples.filter((t) => t[0])];
  for (const [, name, limit, duration, type, autoApply] of ordered) {
    byName.set(name, {
      name,
      limit: Number(limit),
      duration: Number(duration),
      type: type === 'fast' ? 'fast' : 'consistent',
      autoApply: Boolean(autoApply),
    });
  }
  return [...byName.values()];
}

/** Every limit with its id, as v2 shows them: sorted by name, then id (code-unit order). */
function limitRows(tuples: LimitTuple[]): ConfiguredLimitRow[] {
  const rows = tuples.map(([own, name, limit, duration, , autoApply, id]) => ({
    id,
    name,
    limit: Number(limit),
    duration: Number(duration),
    autoApply: Boolean(autoApply),
    ofIdentity: !own,
  }));
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return rows.sort((a, b) => order(a.name, b.name) || order(a.id, b.id));
}
