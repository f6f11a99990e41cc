import { invalid } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { generateKey, hashKey } from '../../crypto/keys.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db, Tx } from '../../store/store.ts';
import { callerAudit, recordAudit, type AuditEntry } from '../audit/record-audit.ts';
import { requirePermissions, type Caller } from '../caller.ts';
import { ensureIdentity } from '../identities/identities.ts';
import { requireApi } from '../lookups.ts';
import { resolveOrCreateAll, type Named } from '../rbac/find-or-create-by-name.ts';
import { defaultRatelimitRow, keyAttributeProblems, refillColumns, type KeyAttributes, type RatelimitInput } from './key-attributes.ts';

export interface CreateKeyInput extends KeyAttributes {
  byteLength?: number;
  recoverable?: boolean;
}

/**
 * keys.createKey, in one transaction: the key, its encrypted copy (recoverable keys, under `vault`; README:
 * Secrets at rest), its `default` rate limit, roles and permissions (missing ones created with the create
 * rights), its identity (created on first use), and the audit records. Without a vault, `recoverable` is a 412.
 */
export async function createKey(db: Db, caller: Caller, input: CreateKeyInput, vault?: Vault): Promise<{ keyId: string; key: string }> {
  const problems = keyAttributeProblems(input);
  if (problems.length) throw invalid(problems);
  const api = await requireApi(db, caller.workspaceId, input.apiId);
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
  await db.transaction().execute(async (tx) => {
    // Roles and permissions first: a 403 for a missing create right (naming every one) comes before any write.
    const links = await resolveOrCreateAll(tx, caller, { role: input.roles ?? [], permission: input.permissions ?? [] }, created.now);
    await insertKey(tx, caller, input, created);
    if (encryptor) {
      const [sealed] = await encryptor.encrypt(tx, caller.workspaceId, [key]);
      await tx
        .insertInto('encrypted_keys')
        .values({
          key_id: created.keyId,
          workspace_id: caller.workspaceId,
          data_key_id: sealed.dataKeyId,
          ciphertext: sealed.ciphertext,
          created_at: created.now,
        })
        .execute();
    }
    await insertLinks(tx, caller.workspaceId, created, input.ratelimit, links);
    await recordAudit(tx, createAudit(caller, input, created, links, !!encryptor), created.now);
  });
  return { keyId: created.keyId, key };
}

interface NewKey {
  keyId: string;
  key: string;
  start: string;
  apiId: string;
  externalId?: string;
  now: number;
}

async function insertKey(tx: Tx, caller: Caller, input: CreateKeyInput, k: NewKey): Promise<void> {
  const identity = k.externalId !== undefined ? await ensureIdentity(tx, caller.workspaceId, k.externalId, k.now) : undefined;
  await tx
    .insertInto('keys')
    .values({
      id: k.keyId,
      workspace_id: caller.workspaceId,
      api_id: k.apiId,
      hash: hashKey(k.key),
      start: k.start,
      name: input.name ?? null,
      identity_id: identity?.id ?? null,
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
    })
    .execute();
}

/** The key's `default` rate limit and its role and permission links. */
async function insertLinks(
  tx: Tx,
  workspaceId: string,
  k: NewKey,
  ratelimit: RatelimitInput | undefined,
  links: Record<'role' | 'permission', Named[]>,
) {
  if (ratelimit)
    await tx
      .insertInto('ratelimits')
      .values(defaultRatelimitRow(workspaceId, k.keyId, ratelimit, k.now))
      .execute();
  if (links.role.length) {
    await tx
      .insertInto('keys_roles')
      .values(links.role.map((r) => ({ key_id: k.keyId, role_id: r.id, workspace_id: workspaceId, created_at: k.now })))
      .execute();
  }
  if (links.permission.length) {
    await tx
      .insertInto('keys_permissions')
      .values(links.permission.map((p) => ({ key_id: k.keyId, permission_id: p.id, workspace_id: workspaceId, created_at: k.now })))
      .execute();
  }
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
