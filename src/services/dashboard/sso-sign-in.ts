import type { OidcConfig } from '../../config/oidc.ts';
import type { Db } from '../../store/store.ts';
import { membershipsOf } from './members.ts';
import type { SignedInIdentity } from './oidc-client.ts';
import type { DashboardSession } from './sessions.ts';
import { openUserSession, recordUser } from './sso-sessions.ts';

/** What a checked sign-in leads to: a session, or no access (no verified email, or no membership). */
export type SsoOutcome =
  | { kind: 'session'; token: string; session: DashboardSession }
  | { kind: 'no-access'; email: string | undefined; reason: 'unverified' | 'no-membership' };

/**
 * Whether the identity is the operator: a verified email on KEYHOLD_OIDC_OPERATOR_EMAILS, or the operator group
 * in the groups claim. An email the provider has not verified is never an operator (anyone may type any
 * address into an account at some providers), nor a member.
 */
export const isOperator = (config: OidcConfig, identity: SignedInIdentity): boolean =>
  identity.email !== undefined &&
  identity.emailVerified &&
  (config.operatorEmails.includes(identity.email) ||
    (config.operatorGroup !== undefined && identity.groups.includes(config.operatorGroup)));

/**
 * Opens the session of a signed-in identity: an operator's (every workspace, none chosen yet) or a member's in
 * the first workspace they are a member of (by name); otherwise no access, and nothing is stored.
 */
export async function signInWithIdentity(db: Db, config: OidcConfig, identity: SignedInIdentity, now = Date.now()): Promise<SsoOutcome> {
  const { email } = identity;
  if (email === undefined || !identity.emailVerified) return { kind: 'no-access', email, reason: 'unverified' };
  const operator = isOperator(config, identity);
  const memberships = operator ? [] : await membershipsOf(db, email);
  if (!operator && memberships.length === 0) return { kind: 'no-access', email, reason: 'no-membership' };
  const user = await recordUser(db, { issuer: identity.issuer, subject: identity.subject, email }, now);
  const first = memberships[0];
  const opened = await openUserSession(db, { user, operator, workspaceId: first?.workspaceId ?? null, role: first?.role }, now);
  return { kind: 'session', ...opened };
}
