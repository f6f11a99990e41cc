import { AppError } from '../../../domain/errors.ts';
import { endSession, redeemSignInLink } from '../../../services/dashboard/sessions.ts';
import type { Deps, App } from '../../types.ts';
import type { PageRouter } from '../context.ts';
import { signInPage } from '../layout.ts';
import { sendPage } from '../send-page.ts';
import { clearedSessionCookie, sessionCookie } from '../session-cookie.ts';

/**
 * GET /dashboard/sign-in?token=…: the one place without a session. A valid, unused, unexpired link opens a
 * session (the cookie) and redirects to /dashboard, so the token leaves the address bar at once.
 */
export function registerSignIn(scope: App, deps: Deps, secure: boolean, sso: boolean): void {
  scope.get('/sign-in', { schema: { hide: true } }, async (request, reply) => {
    const token = (request.query as { token?: unknown }).token;
    // Without a token this is the page sign-out leads to: the sign-in page, answered as a page (200).
    if (typeof token !== 'string' || token === '') return sendPage(reply, signInPage({ sso }), 200);
    try {
      const session = await redeemSignInLink(deps.store.db, token);
      reply.header('set-cookie', sessionCookie(session.token, secure));
      return reply.redirect('/dashboard', 303);
    } catch (err) {
      if (err instanceof AppError && err.status === 400)
        return sendPage(
          reply,
          signInPage({ sso, error: 'This sign-in link is unknown, already used or expired. Ask for a new one.' }),
          400,
        );
      throw err;
    }
  });
}

/** Sign out, and the dashboard's front door (a workspace's APIs, or an operator's workspaces). */
export default function signOutPages(router: PageRouter): void {
  router.post(
    '/dashboard/sign-out',
    async (ctx) => {
      await endSession(ctx.deps.store.db, ctx.session);
      ctx.reply.header('set-cookie', clearedSessionCookie(ctx.secureCookies));
      return { redirect: '/dashboard/sign-in' };
    },
    { workspace: false },
  );
  router.get('/dashboard', async (ctx) => ({ redirect: ctx.session.workspaceId ? '/dashboard/apis' : '/dashboard/workspaces' }), {
    workspace: false,
  });
}
