import { EventEmitter } from 'node:events';
import { AppError, invalid, type FieldProblem } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { permissionProblem } from '../../domain/permissions.ts';
import { BOUNDS, isStorableText } from '../../domain/bounds.ts';
import { generateRootKey, hashKey, keyStart } from '../../crypto/keys.ts';
import { isWellFormedRootKey } from '../../domain/root-key-format.ts';
import type { CompiledQuery } from 'kysely';
import type { Db, Executor } from '../../store/store.ts';
import type { RootKeyRow as RootKeyRowOfTable } from '../../store/schema.ts';
import { splitPage } from '../pagination.ts';
import { recordAudit } from '../audit/record-audit.ts';
import type { Actor, Caller } from '../caller.ts';
import { requireWorkspace } from '../lookups.ts';
import { emitEvent } from '../webhooks/emit.ts';
import { announceJobs } from '../../jobs/queue.ts';

/**
 * Process-wide: `created` (with the new key's hash) is emitted once a root key is written, so that every
 * RootKeyGuard of this process forgets that hash as unknown at once (other processes: within the guard's TTL).
 */
export const rootKeyEvents = new EventEmitter<{ created: [hash: string] }>();
rootKeyEvents.setMaxListeners(0);

export interface NewRootKey {
  workspaceId: string;
  permissions: string[];
  name?: string;
  expiresAt?: number;
  rootKey?: string;
}

/** A root key grants at most this many permissions (wildcards make more unnecessary). */
export const MAX_ROOT_KEY_PERMISSIONS = 1000;

/** Every problem of a root key's permission list (new, or replacing its permissions), with the JSON path of its member. */
export function rootKeyPermissionProblems(permissions: string[]): FieldProblem[] {
  const problems = permissions
    .map((p, i) => ({ p, i, problem: permissionProblem(p) }))
    .filter((x) => x.problem !== null)
    .map((x) => ({ path: `/permissions/${x.i}`, message: x.problem! }));
  if (permissions.length === 0) problems.push({ path: '/permissions', message: 'at least one permission is required' });
  if (permissions.length > MAX_ROOT_KEY_PERMISSIONS)
    problems.push({ path: '/permissions', message: `at most ${MAX_ROOT_KEY_PERMISSIONS} permissions` });
  return problems;
}

/** Every problem of a new root key's input, with the JSON path of its member. */
function rootKeyProblems(input: NewRootKey): FieldProblem[] {
  const problems = rootKeyPermissionProblems(input.permissions);
  if (input.rootKey !== undefined && !isWellFormedRootKey(input.rootKey)) {
    problems.push({ path: '/rootKey', message: 'a root key is kh_root_ followed by 22 to 64 base58 characters' });
  }
  if (input.name !== undefined && input.name.length > 256) problems.push({ path: '/name', message: 'must be at most 256 characters' });
  else if (input.name !== undefined && !isStorableText(input.name))
    problems.push({ path: '/name', message: 'must not hold a NUL character or a lone surrogate' });
  const { minimum, maximum } = BOUNDS.timestamp;
  if (input.expiresAt !== undefined && !(Number.isSafeInteger(input.expiresAt) && input.expiresAt >= minimum && input.expiresAt <= maximum))
    problems.push({ path: '/expiresAt', message: `must be epoch milliseconds, ${minimum}..${maximum}` });
  return problems;
}

/** Inserts a root key and its audit record, atomically, with `db`, which may be a transaction. The plaintext is returned once. */
export async function insertRootKey(
  db: Executor,
  input: NewRootKey,
  actor: Actor,
  now = Date.now(),
): Promise<{ rootKeyId: string; rootKey: string }> {
  const problems = rootKeyProblems(input);
  if (problems.length) throw invalid(problems);
  const rootKey = input.rootKey ?? generateRootKey();
  const hash = hashKey(rootKey);
  const rootKeyId = newId('rk');
  const permissions = [...new Set(input.permissions)].sort();
  const write = async (tx: Executor): Promise<void> => {
    await tx
      .insertInto('root_keys')
      .values({
        id: rootKeyId,
        workspace_id: input.workspaceId,
        name: input.name ?? null,
        hash,
        start: keyStart(rootKey, 'kh_root'),
        permissions: JSON.stringify(permissions),
        created_at: now,
        expires_at: input.expiresAt ?? null,
        revoked_at: null,
        last_used_at: null,
      })
      .execute();
    await recordAudit(
      tx,
      [
        {
          workspaceId: input.workspaceId,
          event: 'root_key.create',
          actor,
          target: { type: 'root_key', id: rootKeyId },
          diff: { name: input.name ?? null, permissions, expiresAt: input.expiresAt ?? null },
        },
      ],
      now,
    );
    emitted = (await emitEvent(tx, input.workspaceId, 'rootkey.created', { rootKeyId, name: input.name ?? null }, { now })) !== undefined;
  };
  let emitted = false;
  // The key and its audit record commit together: in the caller's transaction, or in one of our own.
  // In the caller's transaction the event comes before its commit: a lookup in between could remember the
  // key as unknown again, for at most the guard's TTL (the only such caller, the first-start bootstrap,
  // runs before the server listens).
  if (db.isTransaction) await write(db);
  else await db.transaction().execute(write);
  rootKeyEvents.emit('created', hash);
  if (emitted && !db.isTransaction) announceJobs();
  return { rootKeyId, rootKey };
}

export async function createRootKey(db: Db, input: NewRootKey, actor: Actor): Promise<{ rootKeyId: string; rootKey: string }> {
  await requireWorkspace(db, input.workspaceId);
  // Not in a transaction of ours: insertRootKey commits its own, and announces the key after that commit.
  return insertRootKey(db, input, actor);
}

export interface RootKeyInfo {
  rootKeyId: string;
  name: string | null;
  start: string;
  permissions: string[];
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  /** When it last authenticated a request (recorded at most about once a minute per key); null: never. */
  lastUsedAt: number | null;
}

const rootKeyInfo = (r: RootKeyRowOfTable): RootKeyInfo => ({
  rootKeyId: r.id,
  name: r.name,
  start: r.start,
  permissions: JSON.parse(r.permissions) as string[],
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
  lastUsedAt: r.last_used_at,
});

/** Every root key of the workspace, oldest first (the CLI). */
export async function listRootKeys(db: Db, workspaceId: string): Promise<RootKeyInfo[]> {
  return (await rootKeyPage(db, workspaceId, { limit: Number.MAX_SAFE_INTEGER })).rootKeys;
}

/** The workspace's root keys, oldest first, `limit` at a time; `cursor` is returned when more remain. */
export async function rootKeyPage(
  db: Db,
  workspaceId: string,
  q: { limit: number; cursor?: string },
): Promise<{ rootKeys: RootKeyInfo[]; cursor?: string }> {
  await requireWorkspace(db, workspaceId);
  let query = db.selectFrom('root_keys').selectAll().where('workspace_id', '=', workspaceId);
  if (q.cursor) query = query.where('id', '>', q.cursor);
  const rows = await query
    .orderBy('id')
    .$if(q.limit < Number.MAX_SAFE_INTEGER, (qb) => qb.limit(q.limit + 1))
    .execute();
  const { page, cursor } = splitPage(rows, q.limit);
  return { rootKeys: page.map(rootKeyInfo), cursor };
}

/**
 * Resolves an `Authorization` header to a caller, or throws 401: missing header, not `Bearer kh_root_…`,
 * unknown, revoked, expired, or its workspace deleted. The store is read on every call. (The HTTP server goes
 * through RootKeyGuard, root-key-guard.ts, which caches found keys until a change drops them, remembers
 * unknown ones briefly and limits failures per client address.)
 */
export async function authenticateRootKey(db: Db, header: string | undefined, requestId: string, now = Date.now()): Promise<Caller> {
  return callerOf(await findRootKey(db, rootKeyHashOf(header)), requestId, now);
}

/** The SHA-256 hash of the root key in an `Authorization` header; throws 401 `auth/missing` or `auth/malformed`. */
export function rootKeyHashOf(header: string | undefined): string {
  if (header === undefined || header.trim() === '')
    throw new AppError('auth/missing', 'Authorization header with a root key is required: "Authorization: Bearer <root key>"');
  // `\s*` at both ends is what trim() removes (the same characters), without copying the header.
  const match = /^\s*Bearer (\S+)\s*$/.exec(header);
  if (!match || !isWellFormedRootKey(match[1])) throw new AppError('auth/malformed', 'Authorization header must be "Bearer kh_root_…"');
  return hashKey(match[1]);
}

/** A root key as authentication reads it, with its workspace's deletion time. */
export interface RootKeyRow {
  id: string;
  workspace_id: string;
  permissions: string;
  expires_at: number | null;
  revoked_at: number | null;
  deleted_at: number | null;
}

/** The root key with this hash (one indexed read), or undefined when there is none. */
export async function findRootKey(db: Db, hash: string): Promise<RootKeyRow | undefined> {
  const { rows } = await db.executeQuery<RootKeyRow>({ ...findRootKeyQuery(db), parameters: [hash] });
  return rows[0];
}

/**
 * findRootKey's statement, compiled once per database (or transaction): every authentication reads the
 * store, so building the same query each time is work for nothing. Its one parameter is the hash.
 */
const findRootKeyQueries = new WeakMap<Db, CompiledQuery<RootKeyRow>>();

function findRootKeyQuery(db: Db): CompiledQuery<RootKeyRow> {
  let compiled = findRootKeyQueries.get(db);
  if (!compiled) {
    compiled = db
      .selectFrom('root_keys')
      .innerJoin('workspaces', 'workspaces.id', 'root_keys.workspace_id')
      .select([
        'root_keys.id',
        'root_keys.workspace_id',
        'root_keys.permissions',
        'root_keys.expires_at',
        'root_keys.revoked_at',
        'workspaces.deleted_at',
      ])
      .where('root_keys.hash', '=', '')
      .compile();
    if (compiled.parameters.length !== 1) throw new Error('findRootKey: unexpected parameters in its compiled query');
    findRootKeyQueries.set(db, compiled);
  }
  return compiled;
}

/**
 * The caller a found root key makes, or 401: unknown (no row, or its workspace deleted), revoked or expired
 * (to the millisecond: `now` is the request's). `permissions`: the row's, parsed already (a cached root key).
 */
export function callerOf(row: RootKeyRow | undefined, requestId: string, now: number, permissions?: ReadonlySet<string>): Caller {
  if (!row || row.deleted_at !== null) throw new AppError('auth/invalid', 'The root key is not valid');
  if (row.revoked_at !== null) throw new AppError('auth/revoked', 'The root key has been revoked');
  if (row.expires_at !== null && row.expires_at <= now)
    throw new AppError('auth/expired', `The root key expired at ${new Date(row.expires_at).toISOString()}`);
  return { workspaceId: row.workspace_id, rootKeyId: row.id, permissions: permissions ?? permissionSetOf(row.permissions), requestId };
}

/** Parsed permission lists by their stored JSON text: root keys are few, and their permissions rarely change. */
const permissionSets = new Map<string, ReadonlySet<string>>();
const MAX_PERMISSION_SETS = 1000;

/**
 * The permissions of a root key row as a set, parsed once per distinct text (a pure function of it, so a
 * change of a key's permissions is a new text, read from the store like the rest of the row). Bounded: the
 * oldest entry goes first.
 */
function permissionSetOf(text: string): ReadonlySet<string> {
  let set = permissionSets.get(text);
  if (!set) {
    set = new Set(JSON.parse(text) as string[]);
    if (permissionSets.size >= MAX_PERMISSION_SETS) permissionSets.delete(permissionSets.keys().next().value!);
    permissionSets.set(text, set);
  }
  return set;
}
