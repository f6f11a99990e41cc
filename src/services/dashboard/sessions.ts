import { randomBytes } from 'node:crypto';
import { base58 } from '../../domain/base58.ts';
import { invalid, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { hashKey } from '../../crypto/keys.ts';
import type { Db } from '../../store/store.ts';
import { recordAudit } from '../audit/record-audit.ts';
import type { Actor } from '../caller.ts';
import { requireWorkspace } from '../lookups.ts';
import { roleOf, type MemberRole } from './members.ts';

/** A sign-in link is valid this long, and opens a session once. */
export const SIGN_IN_LINK_TTL_MS = 10 * 60_000;
/** A dashboard session lasts this long from sign-in (no sliding renewal: sign in again). */
export const SESSION_TTL_MS = 12 * 60 * 60_000;

/** Who a link or session is for: one workspace, or the operator (every workspace). */
export type Audience = { workspaceId: string } | { operator: true };

export interface DashboardSession {
  sessionId: string;
  operator: boolean;
  /** The signed-in user of a single sign-on session (null for a CLI link's), shown by email. */
  user: { id: string; email: string } | null;
  /** What the session may do in its workspace: a viewer changes nothing (CLI links and operators: admin). */
  role: MemberRole;
  /** The workspace the session acts in; for an operator the one chosen last, null before the first choice. */
  workspaceId: string | null;
  expiresAt: number;
}

// Tokens are 32 random bytes in base58; the store keeps their SHA-256 only (as for keys).
export const newToken = (): string => base58(randomBytes(32), 44);

/** A one-time sign-in token (shown once; only its hash is stored), valid for SIGN_IN_LINK_TTL_MS. */
export async function createSignInLink(
  db: Db,
  audience: Audience,
  actor: Actor,
  now = Date.now(),
): Promise<{ token: string; expiresAt: number }> {
  const workspaceId = 'workspaceId' in audience ? audience.workspaceId : null;
  if (workspaceId !== null) await requireWorkspace(db, workspaceId);
  const token = newToken();
  const id = newId('dsl');
  const expiresAt = now + SIGN_IN_LINK_TTL_MS;
  // Links and sessions a day past their end are removed by the retention pass (services/maintenance/).
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('dashboard_links')
      .values({
        id,
        token_hash: hashKey(token),
        workspace_id: workspaceId,
        operator: workspaceId === null ? 1 : 0,
        created_at: now,
        expires_at: expiresAt,
        used_at: null,
      })
      .execute();
    if (workspaceId !== null) {
      await recordAudit(
        tx,
        [{ workspaceId, event: 'dashboard.link_create', actor, target: { type: 'dashboard_link', id }, diff: { expiresAt } }],
        now,
      );
    }
  });
  return { token, expiresAt };
}

/**
 * Opens a session with a sign-in token: exactly once (a conditional update marks the link used, so two
 * concurrent redemptions cannot both succeed), and only before it expires. Returns the session's token
 * (for the cookie; only its hash is stored) or throws 400 when the link is unknown, used or expired.
 */
export async function redeemSignInLink(db: Db, token: string, now = Date.now()): Promise<{ token: string; session: DashboardSession }> {
  const refused = () =>
    invalid([{ path: '/token', message: 'this sign-in link is unknown, already used or expired: run `keyhold dashboard link` again' }]);
  if (token.length === 0 || token.length > 128) throw refused();
  const sessionToken = newToken();
  return db.transaction().execute(async (tx) => {
    const link = await tx.selectFrom('dashboard_links').selectAll().where('token_hash', '=', hashKey(token)).executeTakeFirst();
    if (!link || link.used_at !== null || link.expires_at <= now) throw refused();
    const claimed = await tx
      .updateTable('dashboard_links')
      .set({ used_at: now })
      .where('id', '=', link.id)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (claimed.numUpdatedRows !== 1n) throw refused();
    const session: DashboardSession = {
      sessionId: newId('dss'),
      operator: link.operator === 1,
      user: null,
      role: 'admin',
      workspaceId: link.workspace_id,
      expiresAt: now + SESSION_TTL_MS,
    };
    await tx
      .insertInto('dashboard_sessions')
      .values({
        id: session.sessionId,
        token_hash: hashKey(sessionToken),
        link_id: link.id,
        workspace_id: session.workspaceId,
        operator: link.operator,
        created_at: now,
        expires_at: session.expiresAt,
        ended_at: null,
        user_id: null,
        last_seen_at: now,
        reveal: null,
      })
      .execute();
    if (session.workspaceId !== null) await auditSession(tx, session, 'dashboard.sign_in', now);
    return { token: sessionToken, session };
  });
}

/** Last-seen times are written at most this often per session (a page view is not a write each time). */
const LAST_SEEN_RESOLUTION_MS = 60_000;

/**
 * The live session with this token, or undefined (unknown, ended, expired, its workspace deleted, or its
 * user no longer a member of its workspace). A member's role is read on every request, so a changed role
 * applies from the next request on.
 */
export async function findSession(db: Db, token: string, now = Date.now()): Promise<DashboardSession | undefined> {
  if (token.length === 0 || token.length > 128) return undefined;
  const row = await db
    .selectFrom('dashboard_sessions')
    .leftJoin('workspaces', 'workspaces.id', 'dashboard_sessions.workspace_id')
    .leftJoin('dashboard_users', 'dashboard_users.id', 'dashboard_sessions.user_id')
    .select([
      'dashboard_sessions.id',
      'dashboard_sessions.workspace_id',
      'dashboard_sessions.operator',
      'dashboard_sessions.expires_at',
      'dashboard_sessions.ended_at',
      'dashboard_sessions.last_seen_at',
      'dashboard_sessions.user_id',
      'dashboard_users.email',
      'workspaces.deleted_at',
    ])
    .where('dashboard_sessions.token_hash', '=', hashKey(token))
    .executeTakeFirst();
  if (!row || row.ended_at !== null || row.expires_at <= now) return undefined;
  const operator = row.operator === 1;
  // A deleted workspace ends a workspace session; an operator merely has to choose another.
  if (row.deleted_at !== null && row.deleted_at !== undefined && !operator) return undefined;
  const workspaceId = row.deleted_at === null || row.deleted_at === undefined ? row.workspace_id : null;
  const user = row.user_id !== null && row.email ? { id: row.user_id, email: row.email } : null;
  let role: MemberRole = 'admin';
  if (user && !operator && workspaceId !== null) {
    const current = await roleOf(db, workspaceId, user.email);
    if (!current) return undefined;
    role = current;
  }
  if (row.last_seen_at === null || now - row.last_seen_at >= LAST_SEEN_RESOLUTION_MS) {
    await db.updateTable('dashboard_sessions').set({ last_seen_at: now }).where('id', '=', row.id).execute();
  }
  return { sessionId: row.id, operator, user, role, workspaceId, expiresAt: row.expires_at };
}

/**
 * An operator session acts in this workspace from now on. Audited in that workspace, so its log shows
 * which operator session entered it before the changes that session makes there.
 */
export async function chooseWorkspace(db: Db, session: DashboardSession, workspaceId: string, now = Date.now()): Promise<void> {
  const member = session.user !== null && !session.operator && (await roleOf(db, workspaceId, session.user.email)) !== undefined;
  // Another workspace is "not found" to whoever may not open it, as everywhere.
  if (!session.operator && !member) throw notFound('workspace', workspaceId);
  await db.transaction().execute(async (tx) => {
    await requireWorkspace(tx, workspaceId);
    await tx.updateTable('dashboard_sessions').set({ workspace_id: workspaceId }).where('id', '=', session.sessionId).execute();
    await auditSession(tx, { ...session, workspaceId }, 'dashboard.workspace_choose', now);
  });
}

/** Signs out: the session is refused from its next request on. Ending it twice is harmless. */
export async function endSession(db: Db, session: DashboardSession, now = Date.now()): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const ended = await tx
      .updateTable('dashboard_sessions')
      .set({ ended_at: now })
      .where('id', '=', session.sessionId)
      .where('ended_at', 'is', null)
      .executeTakeFirst();
    if (ended.numUpdatedRows === 1n && session.workspaceId !== null && (!session.operator || session.user !== null))
      await auditSession(tx, session, 'dashboard.sign_out', now);
  });
}

/** The actor of what a session does: the session itself (its id names no secret), an operator's told apart. */
export const sessionActor = (session: DashboardSession): Actor =>
  session.user !== null
    ? { type: 'dashboard_user', id: session.user.email }
    : { type: session.operator ? 'dashboard_operator' : 'dashboard_session', id: session.sessionId };

export function auditSession(tx: Db, session: DashboardSession, event: string, now: number) {
  return recordAudit(
    tx,
    [
      {
        workspaceId: session.workspaceId!,
        event,
        actor: sessionActor(session),
        target: { type: 'dashboard_session', id: session.sessionId },
      },
    ],
    now,
  );
}
