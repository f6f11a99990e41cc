import type { LeakedKeyAction } from '../../config/leaks.ts';
import type { Db, Executor } from '../../store/store.ts';
import { recordAudit } from '../audit/record-audit.ts';
import { operatorCaller, type Actor } from '../caller.ts';
import { transact } from '../changes.ts';
import { emitEvent } from '../webhooks/emit.ts';
import { removeKeys } from '../keys/keys.ts';
import { revokeRootKey } from '../workspaces/root-key-changes.ts';

/** Where a leaked key was found: a URL (a commit, a file) and who found it (GitHub's `source`, `keys scan`). */
export interface LeakSighting {
  url: string;
  source: string;
  /** The partner's name for the pattern that matched (GitHub's `type`), when there is one. */
  type?: string;
}

/** The audit event of a leaked key and of a leaked root key: one per key, whoever reports it how often. */
export const KEY_LEAKED = 'key.leaked';
export const ROOT_KEY_LEAKED = 'root_key.leaked';

/** A key or root key a token was found to be, by its hash. */
export interface LeakTarget {
  kind: 'key' | 'root_key';
  id: string;
  workspaceId: string;
}

/**
 * Applies the leaked-key action to a key and records `key.leaked` (naming the sighting, never the key) in one
 * transaction (with the `key.leaked` webhook event) whose change drops the key from every node's verification cache: `disable` sets enabled=false,
 * `delete` soft-deletes it (`key.delete` is recorded too), `notify` changes nothing but the record. A key that
 * already has its `key.leaked` record, or is deleted, is left alone: reporting it again changes and records
 * nothing more (an operator who re-enabled it keeps it enabled). Returns whether this call recorded the leak.
 */
export async function markKeyLeaked(
  db: Db,
  target: LeakTarget,
  sighting: LeakSighting,
  action: LeakedKeyAction,
  actor: Actor,
  requestId: string,
): Promise<boolean> {
  return transact(db, async (tx, changes) => {
    const now = Date.now();
    // Takes the key's row lock first, so two reports of one key at once record it once.
    const locked = await tx
      .updateTable('keys')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', target.id)
      .where('deleted_at', 'is', null)
      .returning(['enabled', 'api_id'])
      .executeTakeFirst();
    if (!locked || (await hasLeakRecord(tx, target, KEY_LEAKED))) return false;
    const caller = operatorCaller(target.workspaceId, actor, requestId);
    if (action === 'disable' && locked.enabled) {
      await tx.updateTable('keys').set({ enabled: 0, updated_at: now }).where('id', '=', target.id).execute();
    }
    if (action === 'delete') await removeKeys(tx, caller, { keyId: target.id }, { permanent: false, changes });
    if (action !== 'notify') changes.key(target.id);
    await recordAudit(tx, [leakAudit(target, KEY_LEAKED, sighting, action, actor, requestId)], now);
    const data = { keyId: target.id, apiId: locked.api_id, url: sighting.url, source: sighting.source, action };
    await emitEvent(tx, target.workspaceId, 'key.leaked', data, { now, changes });
    return true;
  });
}

/**
 * Revokes a leaked root key (whatever the leaked-key action: a root key governs a whole workspace) through
 * revokeRootKey, the service that announces revocations, and records `root_key.leaked` once.
 */
export async function markRootKeyLeaked(
  db: Db,
  target: LeakTarget,
  sighting: LeakSighting,
  actor: Actor,
  requestId: string,
): Promise<boolean> {
  await revokeRootKey(db, target.id, actor);
  return db.transaction().execute(async (tx) => {
    await tx
      .updateTable('root_keys')
      .set((eb) => ({ revoked_at: eb.ref('revoked_at') }))
      .where('id', '=', target.id)
      .execute();
    if (await hasLeakRecord(tx, target, ROOT_KEY_LEAKED)) return false;
    await recordAudit(tx, [leakAudit(target, ROOT_KEY_LEAKED, sighting, 'revoke', actor, requestId)]);
    return true;
  });
}

const hasLeakRecord = async (db: Executor, target: LeakTarget, event: string) =>
  (await db
    .selectFrom('audit_logs')
    .select('id')
    .where('workspace_id', '=', target.workspaceId)
    .where('target_id', '=', target.id)
    .where('event', '=', event)
    .executeTakeFirst()) !== undefined;

function leakAudit(target: LeakTarget, event: string, sighting: LeakSighting, action: string, actor: Actor, requestId: string) {
  return {
    workspaceId: target.workspaceId,
    event,
    actor,
    target: { type: target.kind, id: target.id },
    requestId,
    description: `Leaked at ${sighting.url} (found by ${sighting.source})`,
    diff: { url: sighting.url, source: sighting.source, ...(sighting.type ? { type: sighting.type } : {}), action },
  };
}

/** The `key.leaked` record of each of these keys that has one (the dashboard's "Leaked" badge): key id → URL. */
export async function leakedKeyUrls(db: Db, workspaceId: string, keyIds: readonly string[]): Promise<Map<string, string>> {
  if (keyIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('audit_logs')
    .select(['target_id', 'diff'])
    .where('workspace_id', '=', workspaceId)
    .where('target_id', 'in', [...keyIds])
    .where('event', 'in', [KEY_LEAKED, ROOT_KEY_LEAKED])
    .execute();
  return new Map(rows.map((r) => [r.target_id, (JSON.parse(r.diff ?? '{}') as { url?: string }).url ?? '']));
}
