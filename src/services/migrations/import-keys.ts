import { CompiledQuery } from 'kysely';
import { AppError, invalid, type FieldProblem } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { hashKey } from '../../crypto/keys.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { AuditLogRow, Database, EncryptedKeyRow, IdentityRow, KeyPermissionRow, KeyRoleRow, KeyRow, RatelimitRow } from '../../store/schema.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { actorOf, requirePermissions, type Actor, type Caller } from '../caller.ts';
import { keyAttributeProblems, type RatelimitInput, type RefillInput } from '../keys/keys.ts';

/**
 * One key to import (migrations.createKeys item; migrations.enqueueKeys items once their apiId is filled in).
 * Exactly one of `hash` and `plaintext`. The rate limit takes either form: `{limit, duration}` or the
 * createKeys `{limit, refillInterval}` (refillRate is accepted and ignored, as in keys.createKey).
 */
export interface ImportKeyItem {
  apiId: string;
  prefix?: string;
  name?: string;
  plaintext?: string;
  hash?: { value: string; variant: 'sha256_base64' };
  start?: string;
  ownerId?: string;
  externalId?: string;
  meta?: Record<string, unknown>;
  roles?: string[];
  permissions?: string[];
  expires?: number;
  remaining?: number;
  refill?: RefillInput;
  ratelimit?: RatelimitInput;
  enabled?: boolean;
  environment?: string;
  /**
   * The plaintext, already encrypted by the vault (with `hash`, instead of `plaintext`): lets a caller that
   * must not hold plaintexts at rest (the migration queue) encrypt at enqueue time and import later.
   */
  encrypted?: { dataKeyId: string; ciphertext: string };
}

export interface ImportOptions {
  /** Who imports: recorded in every audit record. */
  actor: Actor;
  requestId?: string;
  /** Encrypts `plaintext` items; without it such items fail with 412. */
  vault?: Vault;
  /** Stored in `keys.migration_id` and the audit records. */
  migrationId?: string;
  /**
   * Called once the APIs are known to exist (so 404 api comes before 403), before anything else is read:
   * `apis` are the distinct apiIds in request order, `plaintext` whether any item for that API has a plaintext.
   * Throw to refuse.
   */
  authorize?(apis: Array<{ apiId: string; plaintext: boolean }>): void;
  now?: number;
}

/** SPEC §6: a createKeys request holds 1..1000 items. */
export const MAX_IMPORT_ITEMS = 1000;

// SQLite accepts 32766 bound parameters per statement and PostgreSQL 65535: every insert is split so
// that it binds at most this many, and every `IN (…)` list holds at most IN_CHUNK values.
const MAX_PARAMS = 16_000;
const IN_CHUNK = 500;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Canonical standard base64 (with padding) of exactly 32 bytes: 43 characters, the last using 4 bits, then `=`. */
const SHA256_BASE64 = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;
export const isSha256Base64 = (value: string): boolean => SHA256_BASE64.test(value);

/**
 * Every rule of one import item that a schema cannot state, as problems with paths relative to `base`
 * (e.g. `/3`). Pure; safe on an item that failed schema validation (members of the wrong type are skipped).
 * Plaintexts never appear in a message.
 */
export function importItemProblems(item: unknown, base = ''): FieldProblem[] {
  if (!isObject(item)) return [];
  const problems: FieldProblem[] = keyAttributeProblems({ meta: item.meta, remaining: item.remaining, refill: item.refill })
    .map((p) => ({ path: base + p.path, message: p.message }));
  const rl = item.ratelimit;
  if (isObject(rl) && rl.duration === undefined && rl.refillInterval === undefined) {
    problems.push({ path: `${base}/ratelimit/refillInterval`, message: 'refillInterval (the window in milliseconds) is required' });
  }
  const hasHash = item.hash !== undefined;
  const hasPlaintext = item.plaintext !== undefined;
  if (hasHash === hasPlaintext) {
    problems.push({ path: base || '/', message: hasHash ? 'give either hash or plaintext, not both' : 'give either hash or plaintext' });
  }
  if (isObject(item.hash)) {
    const { value, variant } = item.hash;
    if (typeof variant === 'string' && variant !== 'sha256_base64') problems.push({ path: `${base}/hash/variant`, message: 'must be sha256_base64' });
    if (typeof value === 'string' && !isSha256Base64(value)) {
      problems.push({ path: `${base}/hash/value`, message: 'must be the standard base64 (with = padding) of a 32-byte SHA-256 digest' });
    }
  }
  const prefix = typeof item.prefix === 'string' && item.prefix !== '' ? item.prefix : undefined;
  if (typeof item.plaintext === 'string' && !hasHash) {
    if (prefix !== undefined && !item.plaintext.startsWith(`${prefix}_`)) {
      problems.push({ path: `${base}/prefix`, message: `the plaintext does not start with "${prefix}_"` });
    }
    if (typeof item.start === 'string' && (!item.plaintext.startsWith(item.start) || item.start.length >= item.plaintext.length)) {
      problems.push({ path: `${base}/start`, message: 'must be the beginning of the plaintext (and shorter than it)' });
    }
  }
  return problems;
}

/** `importItemProblems` of every item, with paths `/<index>/…`. */
export function importProblems(items: readonly unknown[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (let i = 0; i < items.length; i++) {
    const p = importItemProblems(items[i], `/${i}`);
    if (p.length) problems.push(...p);
  }
  return problems;
}

/**
 * The stored `start` of an imported key: the caller's `start`; else, for a plaintext, prefix + `_` + 4
 * characters after it (or its first 4 characters without a prefix); for a hash there is nothing to take it
 * from, so prefix + `_` when a prefix is given, else "".
 */
export function importedStart(item: Pick<ImportKeyItem, 'start' | 'prefix' | 'plaintext'>): string {
  if (item.start !== undefined) return item.start;
  const prefix = item.prefix || undefined;
  if (item.plaintext === undefined) return prefix ? `${prefix}_` : '';
  return prefix && item.plaintext.startsWith(`${prefix}_`) ? item.plaintext.slice(0, prefix.length + 5) : item.plaintext.slice(0, 4);
}

const chunk = <T>(xs: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
};

/** Runs `query` once per IN_CHUNK values and concatenates the rows. */
async function selectIn<V, R>(values: readonly V[], query: (chunk: V[]) => Promise<R[]>): Promise<R[]> {
  if (values.length === 0) return [];
  if (values.length <= IN_CHUNK) return query([...values]);
  const rows: R[] = [];
  for (const part of chunk(values, IN_CHUNK)) rows.push(...await query(part));
  return rows;
}

/**
 * Multi-row inserts of `rows`, each binding at most MAX_PARAMS parameters, in chunks of equal size (±1), so
 * that a batch of 1000 keys is two statements of one shape, not 727 + 273 rows.
 */
async function insertAll<R extends object>(rows: readonly R[], insert: (chunk: R[]) => Promise<unknown>): Promise<void> {
  if (rows.length === 0) return;
  const maxRows = Math.max(1, Math.floor(MAX_PARAMS / Object.keys(rows[0]).length));
  const statements = Math.ceil(rows.length / maxRows);
  for (let i = 0, start = 0; i < statements; i++) {
    const end = Math.round(((i + 1) * rows.length) / statements);
    await insert(rows.slice(start, end));
    start = end;
  }
}

/**
 * SQL text of multi-row INSERTs, by dialect (its adapter) and shape (table, columns, row count). Kysely builds
 * and compiles one node per bound value, which for a batch of 1000 keys costs about as much as the
 * database's own work; a shape is compiled by Kysely once, then reused with fresh parameters.
 */
const insertTexts = new WeakMap<object, Map<string, string>>();
/** Shapes kept per dialect (least recently used dropped): the texts of big batches are 100+ KB each. */
const MAX_INSERT_TEXTS = 64;

/**
 * `INSERT INTO table (…) VALUES (…), (…)…` of `rows` (all with the same members in the same order, none
 * undefined), in statements of at most MAX_PARAMS parameters.
 */
async function insertRows<T extends keyof Database>(tx: Executor, table: T, rows: ReadonlyArray<Database[T]>): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]) as Array<keyof Database[T]>;
  const adapter = tx.getExecutor().adapter;
  let texts = insertTexts.get(adapter);
  if (!texts) insertTexts.set(adapter, texts = new Map());
  await insertAll(rows, async (part) => {
    const shape = `${table}(${columns.join(',')})x${part.length}`;
    let text = texts.get(shape);
    if (text === undefined) {
      // `any`: Kysely cannot type an insert into a table chosen by a type parameter.
      text = tx.insertInto(table).values(part as any).compile().sql;
      if (texts.size >= MAX_INSERT_TEXTS) texts.delete(texts.keys().next().value!);
    } else {
      texts.delete(shape);
    }
    texts.set(shape, text);
    const params: unknown[] = new Array(part.length * columns.length);
    let k = 0;
    for (const row of part) for (const c of columns) params[k++] = row[c];
    await tx.executeQuery(CompiledQuery.raw(text, params));
  });
}

const quoted = (names: string[]): string => names.map((n) => JSON.stringify(n)).join(', ');
const listIndexes = (xs: number[]): string => xs.join(', ');

/**
 * Imports `items` into the workspace inside `tx`, the caller's transaction, and returns the new key ids in
 * item order. All or nothing only together with that transaction: when this throws, the caller must roll
 * it back (on PostgreSQL a failed statement has aborted it anyway).
 *
 * Checks, in order, each reporting every offender at once: item rules (400) → unknown or deleted APIs of
 * another workspace or none (404 data/api-not-found) → `authorize` (403) → plaintexts without a vault
 * (412) → unknown role names / permission slugs (404, never created here) → hashes that exist already or
 * twice in `items` (409, naming the item indexes). Then: identities for new externalIds (created on first
 * use), the encrypted plaintexts, keys, their `default` rate limits, role and permission links, one
 * `key.create` audit record per key.
 *
 * Cost: a fixed number of statements whatever the number of items (one `IN` lookup per kind of reference,
 * chunked inserts) and one SHA-256 per plaintext.
 */
export async function importKeys(tx: Executor, workspaceId: string, items: readonly ImportKeyItem[], opts: ImportOptions): Promise<string[]> {
  const problems = importProblems(items);
  if (problems.length) throw invalid(problems);
  if (items.length === 0) return [];
  const now = opts.now ?? Date.now();

  // 404: every API must be a live API of this workspace.
  const apiIds = [...new Set(items.map((i) => i.apiId))];
  const liveApis = new Set((await selectIn(apiIds, (ids) => tx.selectFrom('apis').select('id')
    .where('workspace_id', '=', workspaceId).where('id', 'in', ids).where('deleted_at', 'is', null).execute())).map((r) => r.id));
  const unknownApis = apiIds.filter((id) => !liveApis.has(id));
  if (unknownApis.length) throw new AppError('data/api-not-found', `${unknownApis.length > 1 ? 'apis' : 'api'} ${unknownApis.join(', ')} not found`);

  // 403
  if (opts.authorize) {
    const withPlaintext = new Set(items.filter((i) => i.plaintext !== undefined).map((i) => i.apiId));
    opts.authorize(apiIds.map((apiId) => ({ apiId, plaintext: withPlaintext.has(apiId) })));
  }

  // 412
  const toEncrypt: number[] = [];
  items.forEach((item, i) => { if (item.plaintext !== undefined && !item.encrypted) toEncrypt.push(i); });
  const vault = toEncrypt.length ? requireVault(opts.vault, 'importing plaintext keys (they are stored encrypted; import their hashes instead)') : undefined;

  // 404: roles (by name) and permissions (by slug) must exist; they are never created by an import.
  const roleNames = [...new Set(items.flatMap((i) => i.roles ?? []))];
  const permissionSlugs = [...new Set(items.flatMap((i) => i.permissions ?? []))];
  const [roleRows, permissionRows] = await Promise.all([
    selectIn(roleNames, (names) => tx.selectFrom('roles').select(['id', 'name']).where('workspace_id', '=', workspaceId).where('name', 'in', names).execute()),
    selectIn(permissionSlugs, (slugs) => tx.selectFrom('permissions').select(['id', 'slug']).where('workspace_id', '=', workspaceId).where('slug', 'in', slugs).execute()),
  ]);
  const roleIds = new Map(roleRows.map((r) => [r.name, r.id]));
  const permissionIds = new Map(permissionRows.map((p) => [p.slug, p.id]));
  const missingRoles = roleNames.filter((n) => !roleIds.has(n));
  const missingPermissions = permissionSlugs.filter((s) => !permissionIds.has(s));
  if (missingRoles.length || missingPermissions.length) {
    const parts = [
      ...(missingRoles.length ? [`${missingRoles.length > 1 ? 'roles' : 'role'} ${quoted(missingRoles)}`] : []),
      ...(missingPermissions.length ? [`${missingPermissions.length > 1 ? 'permissions' : 'permission'} ${quoted(missingPermissions)}`] : []),
    ];
    throw new AppError(missingRoles.length ? 'data/role-not-found' : 'data/permission-not-found',
      `${parts.join(' and ')} ${missingRoles.length + missingPermissions.length > 1 ? 'do' : 'does'} not exist in this workspace; create them first`);
  }

  // 409: a hash may be stored once in the whole service.
  const hashes = items.map((item) => item.plaintext !== undefined ? hashKey(item.plaintext) : item.hash!.value);
  const firstIndex = new Map<string, number>();
  const conflicts: FieldProblem[] = [];
  const repeated: number[] = [];
  hashes.forEach((h, i) => {
    const first = firstIndex.get(h);
    if (first === undefined) firstIndex.set(h, i);
    else { repeated.push(i); conflicts.push({ path: `/${i}`, message: `has the same hash as item ${first}` }); }
  });
  const existing = new Set((await selectIn([...firstIndex.keys()], (hs) => tx.selectFrom('keys').select('hash').where('hash', 'in', hs).execute())).map((r) => r.hash));
  const taken = existing.size ? [...firstIndex].filter(([h]) => existing.has(h)).map(([, i]) => i) : [];
  if (repeated.length || taken.length) {
    for (const i of taken) conflicts.push({ path: `/${i}`, message: 'a key with this hash already exists' });
    conflicts.sort((a, b) => Number(a.path.slice(1)) - Number(b.path.slice(1)));
    const detail = [
      ...(taken.length ? [`a key with the hash of item${taken.length > 1 ? 's' : ''} ${listIndexes(taken)} already exists`] : []),
      ...(repeated.length ? [`item${repeated.length > 1 ? 's' : ''} ${listIndexes(repeated)} repeat${repeated.length > 1 ? '' : 's'} the hash of an earlier item`] : []),
    ].join('; ');
    throw new AppError('data/conflict', detail, conflicts);
  }

  // Identities: the workspace's identity of each externalId (ownerId is its deprecated alias), created on first use.
  const externalIds = items.map((i) => i.externalId ?? i.ownerId);
  const identityIds = await ensureIdentities(tx, workspaceId, [...new Set(externalIds.filter((x): x is string => x !== undefined))], now);

  const encrypted = vault ? await vault.encrypt(tx, workspaceId, toEncrypt.map((i) => items[i].plaintext!)) : [];

  const keyIds = items.map(() => newId('key'));
  const keys: KeyRow[] = [];
  const ratelimits: RatelimitRow[] = [];
  const keyRoles: KeyRoleRow[] = [];
  const keyPermissions: KeyPermissionRow[] = [];
  const secrets: EncryptedKeyRow[] = [];
  const audit: AuditLogRow[] = [];
  const actor = opts.actor;
  items.forEach((item, i) => {
    const id = keyIds[i];
    const start = importedStart(item);
    const externalId = externalIds[i];
    keys.push({
      id, workspace_id: workspaceId, api_id: item.apiId, hash: hashes[i], start, name: item.name ?? null,
      identity_id: externalId !== undefined ? identityIds.get(externalId)! : null,
      meta: item.meta !== undefined ? JSON.stringify(item.meta) : null,
      enabled: item.enabled === false ? 0 : 1, environment: item.environment ?? null,
      expires_at: item.expires ?? null, remaining: item.remaining ?? null,
      refill_interval: item.refill?.interval ?? null, refill_amount: item.refill?.amount ?? null,
      refill_day: item.refill?.interval === 'monthly' ? item.refill.refillDay ?? 1 : null,
      last_refill_at: item.refill ? now : null, migration_id: opts.migrationId ?? null,
      created_at: now, updated_at: now, last_used_at: null, deleted_at: null,
    });
    const rl = item.ratelimit;
    if (rl) {
      ratelimits.push({
        id: newId('rl'), workspace_id: workspaceId, key_id: id, identity_id: null, name: 'default',
        type: rl.type ?? (rl.async ? 'fast' : 'consistent'), limit: rl.limit, duration: (rl.duration ?? rl.refillInterval)!,
        auto_apply: 1, created_at: now, updated_at: now,
      });
    }
    if (item.roles) for (const name of new Set(item.roles)) keyRoles.push({ key_id: id, role_id: roleIds.get(name)!, workspace_id: workspaceId, created_at: now });
    if (item.permissions) for (const slug of new Set(item.permissions)) keyPermissions.push({ key_id: id, permission_id: permissionIds.get(slug)!, workspace_id: workspaceId, created_at: now });
    if (item.encrypted) secrets.push({ key_id: id, workspace_id: workspaceId, data_key_id: item.encrypted.dataKeyId, ciphertext: item.encrypted.ciphertext, created_at: now });
    const diff: Record<string, unknown> = {
      apiId: item.apiId, start, name: item.name ?? null, externalId: externalId ?? null, enabled: item.enabled !== false, source: 'migration',
    };
    if (opts.migrationId) diff.migrationId = opts.migrationId;
    if (item.roles?.length) diff.roles = [...new Set(item.roles)];
    if (item.permissions?.length) diff.permissions = [...new Set(item.permissions)];
    audit.push({
      id: newId('log'), workspace_id: workspaceId, event: 'key.create', actor_type: actor.type, actor_id: actor.id,
      target_type: 'key', target_id: id, request_id: opts.requestId ?? null, description: null, diff: JSON.stringify(diff), created_at: now,
    });
  });
  toEncrypt.forEach((itemIndex, j) => {
    secrets.push({ key_id: keyIds[itemIndex], workspace_id: workspaceId, data_key_id: encrypted[j].dataKeyId, ciphertext: encrypted[j].ciphertext, created_at: now });
  });

  // In hash order: concurrent imports that share hashes then wait on each other (and the later one gets its
  // 409) instead of deadlocking on the unique index.
  keys.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  try {
    await insertRows(tx, 'keys', keys);
  } catch (err) {
    // A concurrent import or createKey stored one of these hashes after the check above.
    if (isUniqueViolation(err)) throw new AppError('data/conflict', 'a key with one of these hashes was created concurrently');
    throw err;
  }
  await insertRows(tx, 'encrypted_keys', secrets);
  await insertRows(tx, 'ratelimits', ratelimits);
  await insertRows(tx, 'keys_roles', keyRoles);
  await insertRows(tx, 'keys_permissions', keyPermissions);
  await insertRows(tx, 'audit_logs', audit);
  return keyIds;
}

/**
 * The id of the workspace's identity for each externalId, creating the missing ones (environment
 * `default`, no meta) with `ON CONFLICT DO NOTHING`, so concurrent creators converge on one row.
 */
async function ensureIdentities(tx: Executor, workspaceId: string, externalIds: string[], now: number): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  if (externalIds.length === 0) return ids;
  const read = (xs: string[]) => selectIn(xs, (part) => tx.selectFrom('identities').select(['id', 'external_id'])
    .where('workspace_id', '=', workspaceId).where('external_id', 'in', part).execute());
  for (const r of await read(externalIds)) ids.set(r.external_id, r.id);
  // Sorted: concurrent importers insert shared externalIds in one order and wait on each other instead of deadlocking.
  const missing = externalIds.filter((x) => !ids.has(x)).sort();
  if (missing.length === 0) return ids;
  const rows: IdentityRow[] = missing.map((external_id) => ({
    id: newId('id'), workspace_id: workspaceId, external_id, environment: 'default', meta: null, created_at: now, updated_at: now,
  }));
  await insertAll(rows, (part) => tx.insertInto('identities').values(part)
    .onConflict((oc) => oc.columns(['workspace_id', 'external_id']).doNothing()).execute());
  for (const r of await read(missing)) ids.set(r.external_id, r.id);
  return ids;
}

/**
 * migrations.createKeys: imports `items` for the caller, all or nothing, in one transaction.
 * Needs, for every distinct apiId, `api.<apiId>.create_key`, plus `api.<apiId>.encrypt_key` when an item
 * for that API has a plaintext (every missing permission is named in the 403).
 */
export async function createKeysByMigration(db: Db, caller: Caller, items: readonly ImportKeyItem[], vault?: Vault): Promise<{ keyIds: string[] }> {
  const authorize = (apis: Array<{ apiId: string; plaintext: boolean }>) => requirePermissions(caller,
    ...apis.flatMap(({ apiId, plaintext }) => [`api.${apiId}.create_key`, ...(plaintext ? [`api.${apiId}.encrypt_key`] : [])]));
  try {
    const keyIds = await db.transaction().execute((tx) => importKeys(tx, caller.workspaceId, items, {
      actor: actorOf(caller), requestId: caller.requestId, vault, authorize,
    }));
    return { keyIds };
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('data/conflict', 'a key with one of these hashes was created concurrently');
    throw err;
  }
}
