import { createHmac, timingSafeEqual } from 'node:crypto';
import { SESSION_TTL_MS } from '../../services/dashboard/sessions.ts';

export const SESSION_COOKIE = 'keyhold_session';
/** The form field and the header that carry the CSRF token of a state-changing request. */
export const CSRF_FIELD = '_csrf';
export const CSRF_HEADER = 'x-csrf-token';

/** The session token in a Cookie header, if there is one. */
export function sessionTokenOf(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** The Set-Cookie value of a new session: HttpOnly, SameSite=Strict, only under /dashboard, Secure under https. */
export function sessionCookie(token: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; Path=/dashboard; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/dashboard; Max-Age=0; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/**
 * The CSRF token of a session acting in a workspace: an HMAC of a fixed label and the workspace id, keyed by
 * the session's own token. It is derived (nothing more is stored), differs per session, and cannot be
 * computed without the HttpOnly cookie. Binding it to the workspace makes a form an operator rendered for one
 * workspace fail (403) after another tab chose a different one, instead of acting in the wrong workspace.
 */
export const csrfTokenFor = (sessionToken: string, workspaceId: string | null): string =>
  createHmac('sha256', sessionToken)
    .update(`keyhold-dashboard-csrf:${workspaceId ?? ''}`)
    .digest('base64url');

/** Whether `given` is the CSRF token of the session in its current workspace (compared in constant time). */
export function isCsrfToken(sessionToken: string, workspaceId: string | null, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken, workspaceId));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
