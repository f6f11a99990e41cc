import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../domain/errors.ts';
import { isStorableText } from '../../domain/bounds.ts';
import { operatorCaller } from '../../services/caller.ts';
import { findSession, sessionActor, type DashboardSession } from '../../services/dashboard/sessions.ts';
import { isStoreUnavailable } from '../../store/errors.ts';
import type { App, Deps } from '../types.ts';
import type { InternalCallers } from '../internal-callers.ts';
import type { Form, PageContext, PageHandler, PageResult, PageRouter } from './context.ts';
import { errorPage, reloadPage, signInPage } from './layout.ts';
import { performOperation } from './operations.ts';
import { CSRF_FIELD, CSRF_HEADER, csrfTokenFor, isCsrfToken, sessionTokenOf } from './session-cookie.ts';
import { registerAssets } from './assets.ts';
import { PAGES } from './pages.ts';
import { parseForm } from './form-body.ts';
import { sendPage } from './send-page.ts';
import { registerSignIn } from './pages/sign-in.ts';
import { registerOidc } from './pages/oidc.ts';
import type { OidcClient } from '../../services/dashboard/oidc-client.ts';
import { refusesViewer } from './roles.ts';
import { stashReveal, takeReveal } from '../../services/dashboard/reveals.ts';

const secureCookies = (options: DashboardOptions): boolean => options.publicUrl.startsWith('https:');

export interface DashboardOptions {
  deps: Deps;
  internal: InternalCallers;
  /** KEYHOLD_PUBLIC_URL: cookies are Secure when it is https. */
  publicUrl: string;
  /** Single sign-on, when KEYHOLD_OIDC_ISSUER is set. */
  oidc?: OidcClient;
}

/**
 * What every dashboard response carries: a CSP without inline scripts or styles, no framing, no referrer
 * (a sign-in link never leaks through one), and no caching of pages that show workspace data.
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** The dashboard under /dashboard: server-rendered pages calling the same services and operations as the API. */
export function registerDashboard(app: App, options: DashboardOptions): void {
  app.register(
    async (scope) => {
      // Forms only: a JSON body never reaches a page (it could carry what a form field cannot, such as objects).
      scope.removeContentTypeParser('application/json');
      scope.setErrorHandler(failurePage);
      scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 256 * 1024 }, (_req, body, done) => {
        done(null, parseForm(body as string));
      });
      scope.addHook('onRequest', async (_request, reply) => {
        reply.headers(SECURITY_HEADERS);
      });
      registerAssets(scope);
      registerSignIn(scope as unknown as App, options.deps, secureCookies(options), options.oidc !== undefined);
      if (options.oidc) registerOidc(scope as unknown as App, options.deps, options.oidc, secureCookies(options));
      const router = pageRouter(scope as unknown as App, app, options);
      for (const register of PAGES) register(router);
      scope.setNotFoundHandler((_request, reply) => {
        sendPage(reply, errorPage('Not found', 'There is no dashboard page at this address.'), 404);
      });
    },
    { prefix: '/dashboard' },
  );
}

function pageRouter(scope: App, app: App, options: DashboardOptions): PageRouter {
  const add = (method: 'GET' | 'POST', path: string, handler: PageHandler, { workspace = true } = {}) => {
    scope.route({
      method,
      url: path === '/dashboard' ? '/' : path.slice('/dashboard'.length),
      schema: { hide: true },
      handler: async (request, reply) => {
        const token = sessionTokenOf(request.headers.cookie);
        const session = token ? await findSession(options.deps.store.db, token) : undefined;
        if (!session || !token) return noSession(request, reply, options.oidc !== undefined);
        if (method === 'POST' && !hasCsrfToken(request, token, session.workspaceId)) {
          return sendPage(
            reply,
            errorPage(
              'Forbidden',
              'This request did not carry the form’s security token; nothing was changed. Reload the page and try again.',
            ),
            403,
          );
        }
        // The one place a viewer's change request is refused, whatever page it was aimed at.
        if (method === 'POST' && refusesViewer(session, path)) {
          return sendPage(reply, errorPage('Forbidden', 'You are a viewer in this workspace: nothing was changed.'), 403);
        }
        const unstorable = unstorableInput(request);
        if (unstorable) {
          return sendPage(
            reply,
            errorPage('Request failed', `${unstorable} holds a NUL character or a lone surrogate; nothing was changed.`),
            400,
          );
        }
        if (workspace && session.workspaceId === null) return reply.redirect('/dashboard/workspaces', 303);
        const ctx = context(request, reply, session, token, app, options);
        return answer(reply, await handler(ctx));
      },
    });
  };
  return { get: (p, h, o) => add('GET', p, h, o), post: (p, h, o) => add('POST', p, h, o), app };
}

function context(
  request: FastifyRequest,
  reply: FastifyReply,
  session: DashboardSession,
  token: string,
  app: App,
  options: DashboardOptions,
): PageContext {
  // An operator session without a chosen workspace reaches only pages that need none (they do not use `caller`).
  const caller = operatorCaller(session.workspaceId ?? '', sessionActor(session), request.id);
  return {
    session,
    caller,
    csrf: csrfTokenFor(token, session.workspaceId),
    params: (request.params ?? {}) as Record<string, string>,
    query: singleValues(request.query),
    form: (request.body && typeof request.body === 'object' ? request.body : {}) as Form,
    deps: options.deps,
    request,
    reply,
    secureCookies: secureCookies(options),
    reveal: {
      put: (reveal) => stashReveal(options.deps.store.db, { sessionId: session.sessionId, token }, reveal),
      take: (kind, path) => takeReveal(options.deps.store.db, { sessionId: session.sessionId, token }, kind, path),
    },
    perform: async (method, operation, input) => {
      const outcome = await performOperation<never>(app, options.internal, caller, method, operation, input);
      // An outage or an internal failure is the error page (503/500), never a problem of the form.
      if (!outcome.ok && outcome.status >= 500) {
        throw new AppError(outcome.status === 503 ? 'store/unavailable' : 'internal', outcome.error.detail);
      }
      return outcome;
    },
  };
}

function hasCsrfToken(request: FastifyRequest, token: string, workspaceId: string | null): boolean {
  const body = request.body as Form | undefined;
  const given = request.headers[CSRF_HEADER] ?? (body && typeof body === 'object' ? body[CSRF_FIELD] : undefined);
  return isCsrfToken(token, workspaceId, given);
}

/**
 * The first path parameter, query parameter or form field holding text no store keeps (NUL, a lone
 * surrogate: SPEC §9), named for the error page; such a request reaches no page. The API's own input guards
 * check what forms send on to /v1/ routes; this covers what pages read or hand to services directly.
 */
function unstorableInput(request: FastifyRequest): string | undefined {
  const parts: Array<[string, unknown]> = [
    ['The address', request.params],
    ['A query parameter', request.query],
    ['A form field', request.body],
  ];
  for (const [what, values] of parts) {
    for (const value of Object.values((values ?? {}) as Record<string, unknown>)) {
      for (const text of Array.isArray(value) ? value : [value]) if (typeof text === 'string' && !isStorableText(text)) return what;
    }
  }
  return undefined;
}

/** Query parameters as single strings: the first value of a repeated one (a page reads each parameter once). */
function singleValues(query: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') out[name] = first;
  }
  return out;
}

/**
 * No session: the sign-in page (401). A navigation from another site does not send the SameSite=Strict cookie,
 * so such a request is answered once with a page that loads the same address again from this origin.
 */
function noSession(request: FastifyRequest, reply: FastifyReply, sso: boolean) {
  if (request.method === 'GET' && request.headers['sec-fetch-site'] === 'cross-site') return sendPage(reply, reloadPage(request.url), 200);
  return sendPage(reply, signInPage({ sso }), 401);
}

function answer(reply: FastifyReply, result: PageResult) {
  if ('redirect' in result) return reply.redirect(result.redirect, 303);
  if ('json' in result) return reply.type('application/json; charset=utf-8').send(JSON.stringify(result.json));
  return sendPage(reply, result.page, result.status ?? 200);
}

/**
 * Every failure under /dashboard is a page, never the API's JSON: a refused request (404, 403, …) names its
 * reason, an outage is a 503, and anything unexpected is logged and a 500 without detail.
 */
function failurePage(err: unknown, request: FastifyRequest, reply: FastifyReply) {
  if (err instanceof AppError)
    return sendPage(reply, errorPage(err.status === 404 ? 'Not found' : 'Request failed', err.message), err.status);
  if (isStoreUnavailable(err))
    return sendPage(reply, errorPage('Unavailable', 'The database did not answer in time; try again shortly.'), 503);
  const code = (err as { code?: string }).code;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendPage(reply, errorPage('Request failed', 'The form is larger than 256 KiB.'), 413);
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return sendPage(reply, errorPage('Request failed', 'Dashboard forms are sent as application/x-www-form-urlencoded.'), 415);
  }
  request.log.error({ err, requestId: request.id }, 'dashboard request failed');
  return sendPage(reply, errorPage('Something went wrong', `The request failed; it has been logged as ${request.id}.`), 500);
}
