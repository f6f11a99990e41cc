import { AppError, invalid, type FieldProblem, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { MAX_META_BYTES, isObject, jsonSize, parseJson } from '../../domain/json.ts';
import { generateKey, hashKey } from '../../crypto/keys.ts';
import { requireVault, type Vault } from '../../crypto/vault.ts';
import type { Db } from '../../store/store.ts';
import { recordAudit, type AuditEntry } from '../audit/record-audit.ts';
import { actorOf, requirePermissions, type Caller } from '../caller.ts';
import { ensureIdentity } from '../identities/identities.ts';
import { attachPlaintexts, loadKeyViews, type KeyView } from './key-view.ts';
import { liveKeys, requireApi, requireKey } from '../lookups.ts';
import { resolveOrCreateAll } from '../rbac/find-or-create-by-name.ts';
import { transact } from '../changes.ts';

export interface RefillInput {
  interval: 'daily' | 'monthly';
  amount: number;
  refillDay?: number;
}
export interface RatelimitInput {
  type?: 'fast' | 'consistent';
  async?: boolean;
  limit: number;
  duration?: number;
  refillRate?: number;
  refillInterval?: number;
}
export interface CreateKeyInput {
  apiId: string;
  prefix?: string;
  name?: string;
  byteLength?: number;
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
  recoverable?: boolean;
  environment?: string;
}

/**
 * Rules across fields that a schema cannot state; every problem is reported at once. Safe on a body that
 * failed schema validation (members of the wrong type are skipped), so both kinds of problem can be listed together.
 */
export function keyAttributeProblems(input: unknown): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (!isObject(input)) return problems;
  if (input.meta !== undefined && jsonSize(input.meta) > MAX_META_BYTES) {
    problems.push({ path: '/meta', message: `must be at most ${MAX_META_BYTES} bytes as JSON` });
  }
  const refill: unknown = input.refill;
  if (isObject(refill) && input.remaining === undefined) problems.push({ path: '/refill', message: 'refill requires remaining to be set' });
  if (isObject(refill) && refill.interval === 'daily' && refill.refillDay !== undefined) {
    problems.push({ path: '/refill/refillDay', message: "refillDay is only allowed with interval 'monthly'" });
  }
  const ratelimit: unknown = input.ratelimit;
  if (isObject(ratelimit) && ratelimit.duration === undefined && ratelimit.refillInterval === undefined) {
    problems.push({ path: '/ratelimit/duration', message: 'duration (or refillInterval) is required' });
  }
  return problems;
}

/** `recoverable` keys are also stored encrypted by `vault` (README: Secrets at rest), in the same transaction as the key; without a vault they are a 412. */
export async function createKey(db: Db, caller: Caller, input: CreateKeyInput, vault?: Vault): Promise<{ keyId: string; key: string }> {
  const problems = keyAttributeProblems(input);
  if (problems.length) throw invalid(problems);
  const api = await requireApi(db, caller.workspaceId, input.apiId);
  requirePermissions(caller, `api.${api.id}.create_key`, ...(input.recoverable ? [`api.${api.id}.encrypt_key`] : []));
  const encryptor = input.recoverable ? requireVault(vault, 'a recoverable key') : undefined;
  const { key, start } = generateKey(input.prefix || api.default_prefix || undefined, input.byteLength ?? api.default_bytes ?? 16);
  const keyId = newId('key');
  const now = Date.now();
  const externalId = input.externalId ?? input.ownerId;
  await db.transaction().execute(async (tx) => {
    // Roles and permissions first: a 403 for a missing create right (naming every one) comes before any write.
    const { role: roles, permission: permissions } = await resolveOrCreateAll(
      tx,
      caller,
      { role: input.roles ?? [], permission: input.permissions ?? [] },
      now,
    );
    const identity = externalId !== undefined ? await ensureIdentity(tx, caller.workspaceId, externalId, now) : undefined;
    await tx
      .insertInto('keys')
      .values({
        id: keyId,
        workspace_id: caller.workspaceId,
        api_id: api.id,
        hash: hashKey(key),
        start,
        name: input.name ?? null,
        identity_id: identity?.id ?? null,
        meta: input.meta !== undefined ? JSON.stringify(input.meta) : null,
        enabled: input.enabled === false ? 0 : 1,
        environment: input.environment ?? null,
        expires_at: input.expires ?? null,
        remaining: input.remaining ?? null,
        refill_interval: input.refill?.interval ?? null,
        refill_amount: input.refill?.amount ?? null,
        refill_day: input.refill?.interval === 'monthly' ? (input.refill.refillDay ?? 1) : null,
        last_refill_at: input.refill ? now : null,
        migration_id: null,
        created_at: now,
        updated_at: now,
        last_used_at: null,
        deleted_at: null,
      })
      .execute();
    if (encryptor) {
      const [sealed] = await encryptor.encrypt(tx, caller.workspaceId, [key]);
      await tx
        .insertInto('encrypted_keys')
        .values({
          key_id: keyId,
          workspace_id: caller.workspaceId,
          data_key_id: sealed.dataKeyId,
          ciphertext: sealed.ciphertext,
          created_at: now,
        })
        .execute();
    }
    if (input.ratelimit) {
      const rl = input.ratelimit;
      await tx
        .insertInto('ratelimits')
        .values({
          id: newId('rl'),
          workspace_id: caller.workspaceId,
          key_id: keyId,
          identity_id: null,
          name: 'default',
          type: rl.type ?? (rl.async ? 'fast' : 'consistent'),
          limit: rl.limit,
          duration: rl.duration ?? rl.refillInterval!,
          auto_apply: 1,
          created_at: now,
          updated_at: now,
        })
        .execute();
    }
    if (roles.length) {
      await tx
        .insertInto('keys_roles')
        .values(roles.map((r) => ({ key_id: keyId, role_id: r.id, workspace_id: caller.workspaceId, created_at: now })))
        .execute();
    }
    if (permissions.length) {
      await tx
        .insertInto('keys_permissions')
        .values(permissions.map((p) => ({ key_id: keyId, permission_id: p.id, workspace_id: caller.workspaceId, created_at: now })))
        .execute();
    }
    const actor = actorOf(caller);
    const audit: AuditEntry[] = [
      {
        workspaceId: caller.workspaceId,
        event: 'key.create',
        actor,
        target: { type: 'key', id: keyId },
        requestId: caller.requestId,
        diff: {
          apiId: api.id,
          start,
          name: input.name ?? null,
          externalId: externalId ?? null,
          enabled: input.enabled !== false,
          ...(encryptor ? { recoverable: true } : {}),
        },
      },
    ];
    for (const r of roles)
      audit.push({
        workspaceId: caller.workspaceId,
        event: 'authorization.connect_role_and_key',
        actor,
        target: { type: 'key', id: keyId },
        requestId: caller.requestId,
        diff: { roleId: r.id, role: r.name },
      });
    for (const p of permissions)
      audit.push({
        workspaceId: caller.workspaceId,
        event: 'authorization.connect_permission_and_key',
        actor,
        target: { type: 'key', id: keyId },
        requestId: caller.requestId,
        diff: { permissionId: p.id, permission: p.name },
      });
    await recordAudit(tx, audit, now);
  });
  return { keyId, key };
}

/** With `decrypt`, a recoverable key carries its `plaintext` (a 412 when there is no vault). */
export async function getKey(db: Db, caller: Caller, keyId: string, decrypt: boolean, vault?: Vault): Promise<KeyView> {
  const row = await requireKey(db, caller.workspaceId, keyId);
  requirePermissions(caller, `api.${row.api_id}.read_key`, ...(decrypt ? [`api.${row.api_id}.decrypt_key`] : []));
  const decryptor = decrypt ? requireVault(vault, 'decrypt=true') : undefined;
  const views = await loadKeyViews(db, [row]);
  if (decryptor) await attachPlaintexts(db, decryptor, caller.workspaceId, views);
  return views[0];
}

/** Soft delete by default (the row stays, marked deleted); `permanent` removes the row and everything attached to it. */
export async function deleteKey(db: Db, caller: Caller, keyId: string, permanent: boolean): Promise<void> {
  await transact(db, async (tx, changes) => {
    const row = await requireKey(tx, caller.workspaceId, keyId);
    requirePermissions(caller, `api.${row.api_id}.delete_key`);
    changes.key(keyId);
    const now = Date.now();
    // Only a live key is deleted: when a concurrent delete committed first (its row lock makes this one wait),
    // nothing is left to change and this call is a 404, not a second deletion with a second audit record.
    const changed = permanent
      ? (await tx.deleteFrom('keys').where('id', '=', keyId).where('deleted_at', 'is', null).executeTakeFirst()).numDeletedRows
      : (
          await tx
            .updateTable('keys')
            .set({ deleted_at: now, updated_at: now })
            .where('id', '=', keyId)
            .where('deleted_at', 'is', null)
            .executeTakeFirst()
        ).numUpdatedRows;
    if (Number(changed) === 0) throw notFound('key', keyId);
    await recordAudit(
      tx,
      [
        {
          workspaceId: caller.workspaceId,
          event: 'key.delete',
          actor: actorOf(caller),
          target: { type: 'key', id: keyId },
          requestId: caller.requestId,
          diff: { permanent },
        },
      ],
      now,
    );
  });
}

export interface WhoamiView {
  id: string;
  name?: string;
  remaining?: number;
  identity?: { id: string; externalId: string };
  meta?: Record<string, unknown>;
  createdAt: number;
  enabled: boolean;
  environment?: string;
}

/** Describes the key whose plaintext is given, if it belongs to the caller's workspace. */
export async function whoami(db: Db, caller: Caller, key: string): Promise<WhoamiView> {
  const row = await liveKeys(db)
    .where('keys.hash', '=', hashKey(key))
    .where('keys.workspace_id', '=', caller.workspaceId)
    .executeTakeFirst();
  if (!row) throw new AppError('data/key-not-found', 'key not found');
  requirePermissions(caller, `api.${row.api_id}.read_key`);
  const identity = row.identity_id
    ? await db.selectFrom('identities').select(['id', 'external_id']).where('id', '=', row.identity_id).executeTakeFirst()
    : undefined;
  return {
    id: row.id,
    name: row.name ?? undefined,
    remaining: row.remaining ?? undefined,
    identity: identity ? { id: identity.id, externalId: identity.external_id } : undefined,
    meta: parseJson(row.meta) ?? undefined,
    createdAt: row.created_at,
    enabled: row.enabled === 1,
    environment: row.environment ?? undefined,
  };
}
