import { AppError } from '../../../domain/errors.ts';
import { actorOf } from '../../../services/caller.ts';
import { chooseWorkspace } from '../../../services/dashboard/sessions.ts';
import { membershipsOf } from '../../../services/dashboard/members.ts';
import { createWorkspace, workspacePage } from '../../../services/workspaces/workspaces.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { csrfInput, nameForm, opener, pager, table, text, when } from '../components.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';

const PATH = '/dashboard/workspaces';
const PAGE_SIZE = 50;

/** Workspaces (operators only): every workspace, creating one, and choosing the one the session acts in. */
export default function workspacePages(router: PageRouter): void {
  const operatorOnly = (ctx: PageContext) => {
    if (!ctx.session.operator) throw new AppError('data/workspace-not-found', 'Only an operator session lists workspaces');
  };
  router.get(
    PATH,
    async (ctx) => {
      if (!ctx.session.operator && ctx.session.user) return memberWorkspaces(ctx);
      operatorOnly(ctx);
      return render(ctx, ctx.query.form === 'create' ? {} : undefined);
    },
    { workspace: false },
  );
  router.post(
    PATH,
    async (ctx) => {
      operatorOnly(ctx);
      try {
        const { workspaceId } = await createWorkspace(ctx.deps.store.db, text(ctx.form.name) ?? '', actorOf(ctx.caller));
        await chooseWorkspace(ctx.deps.store.db, ctx.session, workspaceId);
        return { redirect: '/dashboard/root-keys' };
      } catch (err) {
        if (!(err instanceof AppError) || err.status !== 400) throw err;
        return render(ctx, { values: ctx.form, error: { detail: err.message, errors: err.errors } });
      }
    },
    { workspace: false },
  );
  router.post(
    `${PATH}/:workspaceId/choose`,
    async (ctx) => {
      // An operator opens any workspace, a signed-in member one of theirs (chooseWorkspace checks).
      await chooseWorkspace(ctx.deps.store.db, ctx.session, ctx.params.workspaceId);
      return { redirect: '/dashboard/apis' };
    },
    { workspace: false },
  );
}

async function render(ctx: PageContext, form: FailedForm | undefined): Promise<PageResult> {
  const page = await workspacePage(ctx.deps.store.db, { limit: PAGE_SIZE, cursor: ctx.query.cursor });
  const rows = page.workspaces.map((w) => [
    w.name,
    html`<code>${w.workspaceId}</code>`,
    when(w.createdAt),
    w.workspaceId === ctx.session.workspaceId
      ? html`<strong>current</strong>`
      : html`<form method="post" action="${PATH}/${w.workspaceId}/choose" class="inline">${csrfInput(ctx.csrf)}<button type="submit" aria-label="Open ${w.name}">Open</button></form>`,
  ]);
  const main = html`<p>As the operator you see every workspace. Open one to manage its keys; the navigation then acts in it.</p>
<div class="actions">${form ? '' : opener('Create workspace', 'create', PATH)}</div>
${form ? nameForm('Create workspace', PATH, ctx.csrf, form) : ''}
${table('Workspaces', ['Name', 'ID', 'Created', 'Actions'], rows, 'There are no workspaces.')}
${pager(PATH, { cursor: ctx.query.cursor }, page.cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Workspaces', main) };
}

/** A signed-in member's workspaces, with their role in each. */
async function memberWorkspaces(ctx: PageContext): Promise<PageResult> {
  const memberships = await membershipsOf(ctx.deps.store.db, ctx.session.user?.email ?? '');
  const rows = memberships.map((m) => [
    m.name,
    html`<code>${m.workspaceId}</code>`,
    m.role,
    m.workspaceId === ctx.session.workspaceId
      ? html`<strong>current</strong>`
      : html`<form method="post" action="${PATH}/${m.workspaceId}/choose" class="inline">${csrfInput(ctx.csrf)}<button type="submit" aria-label="Open ${m.name}">Open</button></form>`,
  ]);
  const main = html`<p>The workspaces you are a member of. Open one to work in it.</p>
${table('Workspaces', ['Name', 'ID', 'Role', 'Actions'], rows, 'You are not a member of any workspace.')}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Workspaces', main) };
}
