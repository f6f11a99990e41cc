import { newId } from '../../domain/ids.ts';
import { hashKey } from '../../crypto/keys.ts';
import type { Db } from '../../store/store.ts';
import { recordAudit } from '../audit/record-audit.ts';
import { auditSession, newToken, SESSION_TTL_MS, sessionActor, type DashboardSession } from './sessions.ts';
import type { MemberRole } from './members.ts';

/** How many open sessions the operators' list shows at most (newest first). */
export const MAX_LISTED_SESSIONS = 500;

export interface DashboardUser {
  id: string;
  email: string;
}

/**
 * The user with this issuer and subject, created on their first sign-in; their email is the one the provider
 * names now (it may have changed). Only users who are let in are recorded (operators and members).
 */
export async function recordUser(
  db: Db,
  identity: { issuer: string; subject: string; email: string },
  now = Date.now(),
): Promise<DashboardUser> {
  return db.transaction().execute(async (tx) => {
    const had = await tx
      .selectFrom('dashboard_users')
      .select('id')
      .where('issuer', '=', identity.issuer)
      .where('subject', '=', identity.subject)
      .executeTakeFirst();
    if (had) {
      await tx.updateTable('dashboard_users').set({ email: identity.email, last_sign_in_at: now }).where('id', '=', had.id).execute();
      return { id: had.id, email: identity.email };
    }
    const id = newId('dsu');
    await tx
      .insertInto('dashboard_users')
      .values({ id, issuer: identity.issuer, subject: identity.subject, email: identity.email, created_at: now, last_sign_in_at: now })
      .execute();
    return { id, email: identity.email };
  });
}

/**
 * Opens a session for a signed-in user: an operator's (no workspace chosen yet) or a member's in a workspace.
 * Audited (`dashboard.sign_in`) with the user's email as actor in the workspace it opens in.
 */
export async function openUserSession(
  db: Db,
  input: { user: DashboardUser; operator: boolean; workspaceId: string | null; role?: MemberRole },
  now = Date.now(),
): Promise<{ token: string; session: DashboardSession }> {
  const token = newToken();
  const session: DashboardSession = {
    sessionId: newId('dss'),
    operator: input.operator,
    user: input.user,
    role: input.role ?? 'admin',
    workspaceId: input.workspaceId,
    expiresAt: now + SESSION_TTL_MS,
  };
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('dashboard_sessions')
      .values({
        id: session.sessionId,
        token_hash: hashKey(token),
        // No sign-in link opened it: the column names single sign-on instead.
        link_id: 'sso',
        workspace_id: session.workspaceId,
        operator: input.operator ? 1 : 0,
        created_at: now,
        expires_at: session.expiresAt,
        ended_at: null,
        user_id: input.user.id,
        last_seen_at: now,
        reveal: null,
      })
      .execute();
    if (session.workspaceId !== null) await auditSession(tx, session, 'dashboard.sign_in', now);
  });
  return { token, session };
}

export interface OpenSession {
  sessionId: string;
  /** The user's email, or null for a session opened by a CLI link. */
  email: string | null;
  operator: boolean;
  workspaceId: string | null;
  workspaceName: string | null;
  createdAt: number;
  lastSeenAt: number | null;
}

/** Every open session (not ended, not expired), newest first, at most MAX_LISTED_SESSIONS: for operators. */
export async function listOpenSessions(db: Db, now = Date.now()): Promise<OpenSession[]> {
  const rows = await db
    .selectFrom('dashboard_sessions')
    .leftJoin('dashboard_users', 'dashboard_users.id', 'dashboard_sessions.user_id')
    .leftJoin('workspaces', 'workspaces.id', 'dashboard_sessions.workspace_id')
    .select([
      'dashboard_sessions.id',
      'dashboard_users.email',
      'dashboard_sessions.operator',
      'dashboard_sessions.workspace_id',
      'workspaces.name',
      'dashboard_sessions.created_at',
      'dashboard_sessions.last_seen_at',
    ])
    .where('dashboard_sessions.ended_at', 'is', null)
    .where('dashboard_sessions.expires_at', '>', now)
    .orderBy('dashboard_sessions.created_at', 'desc')
    .limit(MAX_LISTED_SESSIONS)
    .execute();
  return rows.map((r) => ({
    sessionId: r.id,
    email: r.email ?? null,
    operator: r.operator === 1,
    workspaceId: r.workspace_id,
    workspaceName: r.name ?? null,
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
  }));
}

/**
 * An operator ends a session by its id: signed out from its next request on. Audited in the session's
 * workspace (when it has one) with the operator as actor; true when it was open.
 */
export async function endSessionById(db: Db, sessionId: string, by: DashboardSession, now = Date.now()): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('dashboard_sessions').select('workspace_id').where('id', '=', sessionId).executeTakeFirst();
    const ended = await tx
      .updateTable('dashboard_sessions')
      .set({ ended_at: now })
      .where('id', '=', sessionId)
      .where('ended_at', 'is', null)
      .executeTakeFirst();
    if (ended.numUpdatedRows !== 1n) return false;
    if (row?.workspace_id) {
      const target = { type: 'dashboard_session', id: sessionId };
      await recordAudit(tx, [{ workspaceId: row.workspace_id, event: 'dashboard.session_end', actor: sessionActor(by), target }], now);
    }
    return true;
  });
}
