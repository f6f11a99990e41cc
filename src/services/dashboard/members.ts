import { invalid } from '../../domain/errors.ts';
import { MAX_EMAIL_LENGTH, MAX_MEMBERS_PER_WORKSPACE } from '../../domain/bounds.ts';
import type { Db } from '../../store/store.ts';
import { recordAudit } from '../audit/record-audit.ts';
import type { Actor } from '../caller.ts';
import { requireWorkspace } from '../lookups.ts';

export const MEMBER_ROLES = ['admin', 'viewer'] as const;
/** admin: everything a workspace session may do; viewer: every page of the workspace, no change. */
export type MemberRole = (typeof MEMBER_ROLES)[number];

export interface Member {
  email: string;
  role: MemberRole;
  createdAt: number;
  updatedAt: number;
}

/** An email as members are matched by it: trimmed and lower-cased, or a 400 naming the problem. */
export function normalEmail(email: string, path = '/email'): string {
  const e = email.trim().toLowerCase();
  if (e.length === 0 || e.length > MAX_EMAIL_LENGTH || !/^[^\s@]+@[^\s@]+$/.test(e) || !e.isWellFormed() || e.includes('\0')) {
    throw invalid([{ path, message: `must be an email address of at most ${MAX_EMAIL_LENGTH} characters` }]);
  }
  return e;
}

export function memberRole(role: string | undefined): MemberRole {
  if (role === 'admin' || role === 'viewer') return role;
  throw invalid([{ path: '/role', message: 'must be admin or viewer' }]);
}

/** The workspace's members, by email (at most MAX_MEMBERS_PER_WORKSPACE). */
export async function listMembers(db: Db, workspaceId: string): Promise<Member[]> {
  await requireWorkspace(db, workspaceId);
  const rows = await db.selectFrom('dashboard_members').selectAll().where('workspace_id', '=', workspaceId).orderBy('email').execute();
  return rows.map((r) => ({ email: r.email, role: r.role, createdAt: r.created_at, updatedAt: r.updated_at }));
}

/** Adds a member, or changes the role of one; audited in the workspace. */
export async function setMember(
  db: Db,
  input: { workspaceId: string; email: string; role: string | undefined },
  actor: Actor,
  now = Date.now(),
): Promise<{ created: boolean }> {
  const email = normalEmail(input.email);
  const role = memberRole(input.role);
  return db.transaction().execute(async (tx) => {
    await requireWorkspace(tx, input.workspaceId);
    const had = await tx
      .selectFrom('dashboard_members')
      .select('role')
      .where('workspace_id', '=', input.workspaceId)
      .where('email', '=', email)
      .executeTakeFirst();
    if (had) {
      await tx
        .updateTable('dashboard_members')
        .set({ role, updated_at: now })
        .where('workspace_id', '=', input.workspaceId)
        .where('email', '=', email)
        .execute();
    } else {
      const { n } = await tx
        .selectFrom('dashboard_members')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', input.workspaceId)
        .executeTakeFirstOrThrow();
      if (Number(n) >= MAX_MEMBERS_PER_WORKSPACE)
        throw invalid([{ path: '/email', message: `a workspace has at most ${MAX_MEMBERS_PER_WORKSPACE} members` }]);
      await tx
        .insertInto('dashboard_members')
        .values({ workspace_id: input.workspaceId, email, role, created_at: now, updated_at: now })
        .execute();
    }
    const event = had ? 'dashboard.member_update' : 'dashboard.member_add';
    const diff = had ? { role: { from: had.role, to: role } } : { role };
    await recordAudit(tx, [{ workspaceId: input.workspaceId, event, actor, target: { type: 'dashboard_member', id: email }, diff }], now);
    return { created: !had };
  });
}

/** Removes a member; their open sessions in the workspace end at once (in the same transaction). */
export async function removeMember(db: Db, input: { workspaceId: string; email: string }, actor: Actor, now = Date.now()): Promise<void> {
  const email = normalEmail(input.email);
  await db.transaction().execute(async (tx) => {
    await requireWorkspace(tx, input.workspaceId);
    const removed = await tx
      .deleteFrom('dashboard_members')
      .where('workspace_id', '=', input.workspaceId)
      .where('email', '=', email)
      .executeTakeFirst();
    if (removed.numDeletedRows !== 1n) throw invalid([{ path: '/email', message: 'is not a member of this workspace' }]);
    const users = tx.selectFrom('dashboard_users').select('id').where('email', '=', email);
    await tx
      .updateTable('dashboard_sessions')
      .set({ ended_at: now })
      .where('workspace_id', '=', input.workspaceId)
      .where('operator', '=', 0)
      .where('user_id', 'in', users)
      .where('ended_at', 'is', null)
      .execute();
    await recordAudit(
      tx,
      [{ workspaceId: input.workspaceId, event: 'dashboard.member_remove', actor, target: { type: 'dashboard_member', id: email } }],
      now,
    );
  });
}

/** The role of the member with this (verified, lower-cased) email in the workspace, if they are one. */
export async function roleOf(db: Db, workspaceId: string, email: string): Promise<MemberRole | undefined> {
  const row = await db
    .selectFrom('dashboard_members')
    .select('role')
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email)
    .executeTakeFirst();
  return row?.role;
}

/** The live workspaces this email is a member of, by name. */
export async function membershipsOf(db: Db, email: string): Promise<Array<{ workspaceId: string; name: string; role: MemberRole }>> {
  const rows = await db
    .selectFrom('dashboard_members')
    .innerJoin('workspaces', 'workspaces.id', 'dashboard_members.workspace_id')
    .select(['workspaces.id', 'workspaces.name', 'dashboard_members.role'])
    .where('dashboard_members.email', '=', email)
    .where('workspaces.deleted_at', 'is', null)
    .orderBy('workspaces.name')
    .limit(MAX_MEMBERS_PER_WORKSPACE)
    .execute();
  return rows.map((r) => ({ workspaceId: r.id, name: r.name, role: r.role }));
}
