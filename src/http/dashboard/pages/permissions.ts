import { listPermissionsPage } from '../../../services/rbac/permissions.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { confirmAction, csrfInput, field, formError, opener, pager, table, text } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';
import { PAGE_SIZE, refusedPage } from './rbac-lists.ts';

const PATH = '/dashboard/permissions';

/** Permissions: the workspace's permissions, creating one (permissions.createPermission) and deleting one. */
export default function permissionPages(router: PageRouter): void {
  router.get(PATH, (ctx) => render(ctx, ctx.query.form === 'create' ? {} : undefined));
  router.post(PATH, async (ctx) => {
    const outcome = await ctx.perform('POST', 'permissions.createPermission', {
      name: text(ctx.form.name) ?? '',
      slug: text(ctx.form.slug),
      description: text(ctx.form.description),
    });
    if (!outcome.ok) return render(ctx, { values: ctx.form, error: outcome.error });
    return { redirect: PATH };
  });
  router.post(`${PATH}/:permissionId/delete`, async (ctx) => {
    const outcome = await ctx.perform('POST', 'permissions.deletePermission', { permissionId: ctx.params.permissionId });
    return outcome.ok ? { redirect: PATH } : refusedPage(outcome);
  });
}

async function render(ctx: PageContext, form: FailedForm | undefined): Promise<PageResult> {
  const { permissions, cursor } = await listPermissionsPage(ctx.deps.store.db, ctx.caller, { limit: PAGE_SIZE, cursor: ctx.query.cursor });
  const rows = permissions.map((p) => [
    p.name,
    html`<code>${p.slug}</code>`,
    p.description ?? html`<span class="muted">—</span>`,
    html`<code>${p.id}</code>`,
    confirmAction({
      id: `delete-${p.id}`,
      label: 'Delete',
      action: `${PATH}/${p.id}/delete`,
      csrf: ctx.csrf,
      question: `Delete the permission ${p.name}?`,
      detail: 'Keys and roles that have it lose it. This cannot be undone.',
    }),
  ]);
  const main = html`<div class="actions">${form ? '' : opener('Create permission', 'create', PATH)}</div>
${form ? createForm(ctx.csrf, form) : ''}
${table('Permissions', ['Name', 'Slug', 'Description', 'ID', 'Actions'], rows, 'This workspace has no permissions yet.')}
${pager(PATH, { cursor: ctx.query.cursor }, cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Permissions', main) };
}

function createForm(csrf: string, form: FailedForm): Html {
  const v = form.values ?? {};
  const problems = form.error?.errors;
  return html`<form method="post" action="${PATH}" class="panel" aria-labelledby="create-title">
<h2 id="create-title">Create permission</h2>
${formError(form.error, ['/name', '/slug', '/description'])}
${csrfInput(csrf)}
${field({ label: 'Name', name: 'name', value: text(v.name), required: true, hint: 'Letters, digits and _ . : - *' }, problems)}
${field({ label: 'Slug', name: 'slug', value: text(v.slug), hint: 'Optional: what keys are verified against; the name when empty.' }, problems)}
${field({ label: 'Description', name: 'description', type: 'textarea', value: text(v.description) }, problems)}
<div class="actions"><button type="submit">Create</button><a href="${PATH}">Cancel</a></div>
</form>`;
}
