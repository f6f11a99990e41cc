import { listRolesPage } from '../../../services/rbac/roles.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { csrfInput, field, formError, opener, pager, table, text } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';
import { PAGE_SIZE } from './rbac-lists.ts';
import { roleDetailPages } from './rbac-role.ts';

const PATH = '/dashboard/roles';

/** Roles: the workspace's roles and creating one (permissions.createRole); a role's own page is in rbac-role.ts. */
export default function rolePages(router: PageRouter): void {
  router.get(PATH, (ctx) => render(ctx, ctx.query.form === 'create' ? {} : undefined));
  router.post(PATH, async (ctx) => {
    const outcome = await ctx.perform<{ roleId: string }>('POST', 'permissions.createRole', {
      name: text(ctx.form.name) ?? '',
      description: text(ctx.form.description),
    });
    if (!outcome.ok) return render(ctx, { values: ctx.form, error: outcome.error });
    // A new role has no permissions yet: its page is where they are attached.
    return { redirect: `${PATH}/${outcome.data.roleId}` };
  });
  roleDetailPages(router, PATH);
}

async function render(ctx: PageContext, form: FailedForm | undefined): Promise<PageResult> {
  const { roles, cursor } = await listRolesPage(ctx.deps.store.db, ctx.caller, { limit: PAGE_SIZE, cursor: ctx.query.cursor });
  const rows = roles.map((r) => [
    html`<a href="${PATH}/${r.id}">${r.name}</a>`,
    r.description ?? html`<span class="muted">—</span>`,
    r.permissions.length ? html`<code>${r.permissions.map((p) => p.slug).join(' ')}</code>` : html`<span class="muted">none</span>`,
    html`<code>${r.id}</code>`,
  ]);
  const main = html`<div class="actions">${form ? '' : opener('Create role', 'create', PATH)}</div>
${form ? createForm(ctx.csrf, form) : ''}
${table('Roles', ['Name', 'Description', 'Permissions', 'ID'], rows, 'This workspace has no roles yet.')}
${pager(PATH, { cursor: ctx.query.cursor }, cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Roles', main) };
}

function createForm(csrf: string, form: FailedForm): Html {
  const v = form.values ?? {};
  const problems = form.error?.errors;
  return html`<form method="post" action="${PATH}" class="panel" aria-labelledby="create-title">
<h2 id="create-title">Create role</h2>
${formError(form.error, ['/name', '/description'])}
${csrfInput(csrf)}
${field({ label: 'Name', name: 'name', value: text(v.name), required: true, hint: 'Unique in the workspace.' }, problems)}
${field({ label: 'Description', name: 'description', type: 'textarea', value: text(v.description) }, problems)}
<div class="actions"><button type="submit">Create</button><a href="${PATH}">Cancel</a></div>
</form>`;
}
