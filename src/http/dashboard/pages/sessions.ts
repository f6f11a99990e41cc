import { AppError } from '../../../domain/errors.ts';
import { endSessionById, listOpenSessions } from '../../../services/dashboard/sso-sessions.ts';
import type { PageContext, PageRouter } from '../context.ts';
import { confirmAction, table, when } from '../components.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';

const PATH = '/dashboard/sessions';

/** Sessions (operators only): every open dashboard session, and ending any of them. */
export default function sessionPages(router: PageRouter): void {
  const operatorOnly = (ctx: PageContext) => {
    if (!ctx.session.operator) throw new AppError('data/workspace-not-found', 'Only an operator sees the open sessions');
  };
  router.get(
    PATH,
    async (ctx) => {
      operatorOnly(ctx);
      const sessions = await listOpenSessions(ctx.deps.store.db);
      const rows = sessions.map((s) => [
        s.email ?? html`<span class="muted">sign-in link</span>`,
        s.operator ? 'operator' : (s.workspaceName ?? '—'),
        when(s.createdAt),
        when(s.lastSeenAt),
        s.sessionId === ctx.session.sessionId
          ? html`<strong>this session</strong>`
          : confirmAction({
              id: `end-${s.sessionId}`,
              label: 'End session',
              action: `${PATH}/${s.sessionId}/end`,
              csrf: ctx.csrf,
              question: `End the session of ${s.email ?? 'a sign-in link'}?`,
              detail: 'It is signed out on its next request.',
            }),
      ]);
      const main = html`<p>Every open dashboard session, newest first.</p>
${table('Open sessions', ['User', 'Workspace', 'Started', 'Last seen', 'Actions'], rows, 'There are no open sessions.')}`;
      return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Sessions', main) };
    },
    { workspace: false },
  );
  router.post(
    `${PATH}/:sessionId/end`,
    async (ctx) => {
      operatorOnly(ctx);
      await endSessionById(ctx.deps.store.db, ctx.params.sessionId, ctx.session);
      return { redirect: PATH };
    },
    { workspace: false },
  );
}
