import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../services/caller.ts';
import type { DashboardSession } from '../../services/dashboard/sessions.ts';
import type { App, Deps } from '../types.ts';
import type { Html } from './html.ts';
import type { Outcome } from './operations.ts';
import type { Reveal } from '../../services/dashboard/reveals.ts';

/** A submitted form: every field as sent (a field sent several times is a list). */
export type Form = Record<string, string | string[]>;

/** What a page handler works with: the signed-in session, its caller, the request's parts and the services. */
export interface PageContext {
  session: DashboardSession;
  /** The session acting in its workspace (every permission there; audited as the session). */
  caller: Caller;
  /** This session's CSRF token, for the forms the page renders. */
  csrf: string;
  params: Record<string, string>;
  query: Record<string, string>;
  form: Form;
  deps: Deps;
  /** Whether cookies are set Secure (KEYHOLD_PUBLIC_URL is https). */
  secureCookies: boolean;
  request: FastifyRequest;
  reply: FastifyReply;
  /** Keeps what a create form made for the page it redirects to, and takes it there (shown once). */
  reveal: { put(reveal: Reveal): Promise<void>; take(kind: Reveal['kind'], path: string): Promise<Reveal | undefined> };
  /** Performs a `/v1/` operation as this session (the API's own route: its schema, rules and answer). */
  perform<T = Record<string, unknown>>(method: 'GET' | 'POST', operation: string, input: object): Promise<Outcome<T>>;
}

/**
 * What a page handler answers: a page (status 200 unless given), a redirect after a change (303), or JSON
 * for a page's own script (live counts), which reads it with the session's cookie.
 */
export type PageResult = { page: Html; status?: number } | { redirect: string } | { json: object };

export type PageHandler = (ctx: PageContext) => Promise<PageResult>;

/** Registers a page module's routes; `workspace: false` marks a page an operator reaches before choosing a workspace. */
export interface PageRouter {
  get(path: string, handler: PageHandler, options?: { workspace?: boolean }): void;
  post(path: string, handler: PageHandler, options?: { workspace?: boolean }): void;
  /** The root application, for in-process operations. */
  readonly app: App;
}
