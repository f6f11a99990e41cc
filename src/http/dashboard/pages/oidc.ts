import type { FastifyReply, FastifyRequest } from 'fastify';
import { OIDC_CALLBACK_PATH } from '../../../config/oidc.ts';
import {
  type OidcClient,
  type PendingSignIn,
  ProviderUnavailableError,
  SignInRefusedError,
} from '../../../services/dashboard/oidc-client.ts';
import { signInWithIdentity } from '../../../services/dashboard/sso-sign-in.ts';
import type { App, Deps } from '../../types.ts';
import { errorPage, noAccessPage, signInPage } from '../layout.ts';
import { sendPage } from '../send-page.ts';
import { sessionCookie } from '../session-cookie.ts';

/** The cookie that carries state, nonce and PKCE verifier from the redirect to the callback. */
const PENDING_COOKIE = 'keyhold_oidc';
/** How long a sign-in at the provider may take. */
const PENDING_TTL_S = 600;

/**
 * Single sign-on: GET /dashboard/oidc/start redirects to the provider, GET /dashboard/oidc/callback comes back.
 * The pending sign-in lives in an HttpOnly cookie on /dashboard/oidc only; it is SameSite=Lax because the
 * provider's redirect back is a cross-site navigation (a Strict cookie would not come with it). The callback
 * clears it whatever the outcome, so a code or state is never accepted twice.
 */
export function registerOidc(scope: App, deps: Deps, oidc: OidcClient, secure: boolean): void {
  const pendingCookie = (value: string, maxAge: number) =>
    `${PENDING_COOKIE}=${value}; Path=/dashboard/oidc; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;

  scope.get('/oidc/start', { schema: { hide: true } }, async (_request, reply) => {
    try {
      const { url, pending } = await oidc.start();
      reply.header('set-cookie', pendingCookie(Buffer.from(JSON.stringify(pending)).toString('base64url'), PENDING_TTL_S));
      return reply.redirect(url, 303);
    } catch (err) {
      if (err instanceof ProviderUnavailableError) return unavailable(reply);
      throw err;
    }
  });

  scope.get(OIDC_CALLBACK_PATH.slice('/dashboard'.length), { schema: { hide: true } }, async (request, reply) => {
    reply.header('set-cookie', pendingCookie('', 0));
    const pending = pendingOf(request);
    if (!pending)
      return refused(reply, 'this sign-in was not started in this browser, or took longer than 10 minutes, or was already used');
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
    try {
      const identity = await oidc.finish(new URL(`${oidc.redirectUri}${query}`), pending);
      const outcome = await signInWithIdentity(deps.store.db, oidc.config, identity);
      if (outcome.kind === 'no-access') return sendPage(reply, noAccessPage(outcome.email, outcome.reason), 403);
      reply.header('set-cookie', [pendingCookie('', 0), sessionCookie(outcome.token, secure)]);
      return reply.redirect('/dashboard', 303);
    } catch (err) {
      if (err instanceof ProviderUnavailableError) return unavailable(reply);
      if (err instanceof SignInRefusedError) return refused(reply, err.message);
      throw err;
    }
  });
}

function pendingOf(request: FastifyRequest): PendingSignIn | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0 || part.slice(0, eq).trim() !== PENDING_COOKIE) continue;
    try {
      const value = JSON.parse(Buffer.from(part.slice(eq + 1).trim(), 'base64url').toString('utf8')) as Record<string, unknown>;
      const { state, nonce, verifier } = value;
      if (typeof state === 'string' && typeof nonce === 'string' && typeof verifier === 'string') return { state, nonce, verifier };
    } catch {}
  }
  return undefined;
}

const refused = (reply: FastifyReply, why: string) =>
  sendPage(reply, signInPage({ sso: true, error: `Sign-in refused: ${why}. Nothing was signed in; try again.` }), 400);

const unavailable = (reply: FastifyReply) =>
  sendPage(
    reply,
    errorPage('Sign-in provider unavailable', 'The single sign-on provider did not answer; try again shortly, or use a sign-in link.'),
    503,
  );
