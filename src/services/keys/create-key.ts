import { invalid } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { generateKey, hashKey } from '../../crypto/keys.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db, Executor } from '../../store/store.ts';
import type { KeyRow } from '../../store/schema.ts';
import { insertOf, insertTogether, type Insert } from '../../store/insert-together.ts';
import { insertTogetherUnless } from '../../store/insert-unless.ts';
import { auditRows, callerAudit, type AuditEntry } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { ensureIdentity } from '../identities/identities.ts';
import { requireApi } from '../lookups.ts';
import type { ApiCache } from '../apis/api-cache.ts';
import { resolveOrCreateAll, type Named } from '../rbac/find-or-create-by-name.ts';
import { resolveReferences } from '../rbac/resolve-references.ts';
import { emitEvent, mayReceive, subscribedEndpoints } from '../webhooks/emit.ts';
import { announceJobs } from '../../jobs/queue.ts';
import { defaultRatelimitRow, keyAttributeProblems, namedRatelimitRow, refillColumns, type KeyAttributes } from './key-attributes.ts';

export interface CreateKeyInput extends KeyAttributes {
  byteLength?: number;
  recoverable?: boolean;
  /**
   * What an unknown role name does: `create` it (v1, the default; needs `rbac.*.create_role`), or fail the
   * whole request with a 404 naming it (v2, whose keys.createKey never creates roles).
   */
  unknownRoles?: 'create' | 'not-found';
}

/**
 * keys.createKey, all or nothing: the key, its encrypted copy (recoverable keys, under `vault`;
 * docs/secrets-at-rest.md), its rate limits (v1's `ratelimit` as the one named `default`, v2's named `ratelimits`),
 * roles and permissions (missing ones created with the create rights; roles per `unknownRoles`), its identity
 * (created on first use), and the audit records. Without a vault, `recoverable` is a 412.
 */
export async function createKey(
  db: Db,
  caller: Caller,
  input: CreateKeyInput,
  vault?: Vault,
  apis?: ApiCache,
): Promise<{ keyId: string; key: string }> {
  const problems = keyAttributeProblems(input);
  if (problems.length) throw invalid(problems);
  // The server's API cache (`apis`) spares the read; without it (the CLI's imports, tests), the store is read.
  const api = apis ? await apis.require(db, caller.workspaceId, input.apiId) : await requireApi(db, caller.workspaceId, input.apiId);
  requirePermissions(caller, `api.${api.id}.create_key`, ...(input.recoverable ? [`api.${api.id}.encrypt_key`] : []));
  const encryptor = input.recoverable ? requireVault(vault, 'a recoverable key') : undefined;
  const { key, start } = generateKey(input.prefix || api.default_prefix || undefined, input.byteLength ?? api.default_bytes ?? 16);
  const created: NewKey = {
    keyId: newId('key'),
    key,
    start,
    apiId: api.id,
    externalId: input.externalId ?? input.ownerId,
    now: Date.now(),
  };
  const write = async (db: Executor) => {
    // Roles and permissions first: a 403 for a missing create right (naming every one) comes before any write.
    const links = await resolveLinks(db, caller, input, created.now);
    const identity =
      created.externalId !== undefined ? await ensureIdentity(db, caller.workspaceId, created.externalId, created.now) : undefined;
    const sealed = encryptor ? (await encryptor.encrypt(db, caller.workspaceId, [key]))[0] : undefined;
    await insertTogether(db, keyInserts(caller, input, created, { links, identityId: identity?.id ?? null, sealed }));
    await emitEvent(db, caller.workspaceId, 'key.created', { keyId: created.keyId, apiId: api.id }, { endpointIds, now: created.now });
  };
  const readsFirst = !!(input.roles?.length || input.permissions?.length || created.externalId !== undefined || encryptor);
  // A plain key (the common case) with no endpoint receiving key.created: the key and its audit record in one
  // statement on PostgreSQL (the check included, no BEGIN/COMMIT); on SQLite a read, then the inserts. Where an endpoint
  // may receive the event, that writes nothing and the key is written below, with its event.
  if (!readsFirst) {
    const rows = keyInserts(caller, input, created, { links: { role: [], permission: [] }, identityId: null });
    if (await insertTogetherUnless(db, rows, mayReceive(caller.workspaceId, 'key.created'))) return { keyId: created.keyId, key };
  }
  const endpointIds = await subscribedEndpoints(db, caller.workspaceId, 'key.created');
  // The inserts are atomic by themselves (insertTogether): only reads and writes before them, or an event
  // after them, need a transaction around all.
  if (readsFirst || endpointIds.length) await db.transaction().execute(write);
  else await write(db);
  if (endpointIds.length) announceJobs();
  return { keyId: created.keyId, key };
}

/** The key's roles and permissions by name: missing permissions are created, missing roles as `unknownRoles` says. */
async function resolveLinks(
  db: Executor,
  caller: Caller,
  input: CreateKeyInput,
  now: number,
): Promise<Record<'role' | 'permission', Named[]>> {
  const roles = input.roles ?? [];
  if (input.unknownRoles !== 'not-found' || roles.length === 0) {
    return resolveOrCreateAll(db, caller, { role: roles, permission: input.permissions ?? [] }, now);
  }
  const role = await resolveReferences(
    db,
    caller,
    'role',
    roles.map((name) => ({ name })),
    now,
  );
  const { permission } = await resolveOrCreateAll(db, caller, { permission: input.permissions ?? [] }, now);
  return { role, permission };
}

interface NewKey {
  keyId: string;
  key: string;
  start: string;
  apiId: string;
  externalId?: string;
  now: number;
}

/** The rows of a new key, in an order in which each refers only to rows before it or already stored. */
function keyInserts(
  caller: Caller,
  input: CreateKeyInput,
  k: NewKey,
  parts: { links: Record<'role' | 'permission', Named[]>; identityId: string | null; sealed?: { dataKeyId: string; ciphertext: string } },
): Insert[] {
  const ws = caller.workspaceId;
  const { links, sealed } = parts;
  const linked = { key_id: k.keyId, workspace_id: ws, created_at: k.now };
  return [
    insertOf('keys', [keyRow(caller, input, k, parts.identityId)]),
    insertOf('encrypted_keys', sealed ? [{ ...linked, data_key_id: sealed.dataKeyId, ciphertext: sealed.ciphertext }] : []),
    insertOf('ratelimits', [
      ...(input.ratelimit ? [defaultRatelimitRow(ws, k.keyId, input.ratelimit, k.now)] : []),
      ...(input.ratelimits ?? []).map((rl) => namedRatelimitRow(ws, k.keyId, rl, k.now)),
    ]),
    insertOf(
      'keys_roles',
      links.role.map((r) => ({ ...linked, role_id: r.id })),
    ),
    insertOf(
      'keys_permissions',
      links.permission.map((p) => ({ ...linked, permission_id: p.id })),
    ),
    insertOf('audit_logs', auditRows(createAudit(caller, input, k, links, !!sealed), k.now)),
  ];
}

function keyRow(caller: Caller, input: CreateKeyInput, k: NewKey, identityId: string | null): KeyRow {
  return {
    id: k.keyId,
    workspace_id: caller.workspaceId,
    api_id: k.apiId,
    hash: hashKey(k.key),
    start: k.start,
    name: input.name ?? null,
    identity_id: identityId,
    meta: input.meta !== undefined ? JSON.stringify(input.meta) : null,
    enabled: input.enabled === false ? 0 : 1,
    environment: input.environment ?? null,
    expires_at: input.expires ?? null,
    remaining: input.remaining ?? null,
    ...refillColumns(input.refill, k.now),
    migration_id: null,
    created_at: k.now,
    updated_at: k.now,
    last_used_at: null,
    deleted_at: null,
  };
}

/** `key.create`, then one connect record per role and per permission. */
function createAudit(
  caller: Caller,
  input: CreateKeyInput,
  k: NewKey,
  links: Record<'role' | 'permission', Named[]>,
  recoverable: boolean,
): AuditEntry[] {
  const entry = (event: string, diff: Record<string, unknown>): AuditEntry =>
    callerAudit(caller, event, { type: 'key', id: k.keyId }, { diff });
  return [
    entry('key.create', {
      apiId: k.apiId,
      start: k.start,
      name: input.name ?? null,
      externalId: k.externalId ?? null,
      enabled: input.enabled !== false,
      ...(recoverable ? { recoverable: true } : {}),
    }),
    ...links.role.map((r) => entry('authorization.connect_role_and_key', { roleId: r.id, role: r.name })),
    ...links.permission.map((p) => entry('authorization.connect_permission_and_key', { permissionId: p.id, permission: p.name })),
  ];
}
