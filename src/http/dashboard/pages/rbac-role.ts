import { listPermissions, type PermissionView } from '../../../services/rbac/permissions.ts';
import { getRole, type RoleView } from '../../../services/rbac/roles.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { confirmAction, csrfInput, facts, formError, list } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';
import { refusedPage } from './rbac-lists.ts';

/**
 * A role's page under `base` (/dashboard/roles): its facts, the workspace's permissions as checkboxes to set
 * its permissions (permissions.setRolePermissions) and deleting it (permissions.deleteRole). A role of another
 * workspace is a 404, as getRole answers.
 */
export function roleDetailPages(router: PageRouter, base: string): void {
  router.get(`${base}/:roleId`, (ctx) => render(ctx, base, undefined));
  router.post(`${base}/:roleId/permissions`, async (ctx) => {
    const roleId = ctx.params.roleId;
    const permissions = list(ctx.form.permission).map((id) => ({ id }));
    const outcome = await ctx.perform('POST', 'permissions.setRolePermissions', { roleId, permissions });
    if (!outcome.ok) return render(ctx, base, { values: ctx.form, error: outcome.error });
    return { redirect: `${base}/${encodeURIComponent(roleId)}?saved=1` };
  });
  router.post(`${base}/:roleId/delete`, async (ctx) => {
    const outcome = await ctx.perform('POST', 'permissions.deleteRole', { roleId: ctx.params.roleId });
    return outcome.ok ? { redirect: base } : refusedPage(outcome);
  });
}

async function render(ctx: PageContext, base: string, failed: FailedForm | undefined): Promise<PageResult> {
  const role = await getRole(ctx.deps.store.db, ctx.caller, ctx.params.roleId);
  const all = await listPermissions(ctx.deps.store.db, ctx.caller);
  const path = `${base}/${encodeURIComponent(role.id)}`;
  // After a refused save the boxes keep what was chosen; otherwise they show the role's permissions.
  const chosen = new Set(failed ? list(failed.values?.permission) : role.permissions.map((p) => p.id));
  const main = html`${ctx.query.saved && !failed ? html`<p class="notice" role="status">Permissions saved.</p>` : ''}
${facts([
  ['Name', role.name],
  ['ID', html`<code>${role.id}</code>`],
  ['Description', role.description ?? html`<span class="muted">—</span>`],
  [
    'Permissions',
    role.permissions.length ? html`<code>${role.permissions.map((p) => p.slug).join(' ')}</code>` : html`<span class="muted">none</span>`,
  ],
])}
<div class="actions">${confirmAction({
    id: 'delete-role',
    label: 'Delete',
    action: `${path}/delete`,
    csrf: ctx.csrf,
    question: `Delete the role ${role.name}?`,
    detail: 'Keys that have it lose it and the permissions it granted. This cannot be undone.',
  })}</div>
${permissionsForm(ctx.csrf, path, role, all, chosen, failed)}
<p><a href="${base}">All roles</a></p>`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: base }, `Role ${role.name}`, main) };
}

function permissionsForm(
  csrf: string,
  path: string,
  role: RoleView,
  all: PermissionView[],
  chosen: Set<string>,
  failed?: FailedForm,
): Html {
  const box = (p: PermissionView) =>
    html`<div><label><input type="checkbox" name="permission" value="${p.id}"${chosen.has(p.id) ? html` checked` : ''}> ${p.name}</label>${
      p.slug !== p.name ? html` <code>${p.slug}</code>` : ''
    }</div>`;
  const boxes = all.length
    ? html`<fieldset><legend>Permissions of ${role.name}</legend><div class="checks">${all.map(box)}</div></fieldset>`
    : html`<p class="muted">This workspace has no permissions yet: <a href="/dashboard/permissions?form=create">create one</a>.</p>`;
  return html`<form method="post" action="${path}/permissions" class="panel" aria-labelledby="permissions-title">
<h2 id="permissions-title">Permissions</h2>
${formError(failed?.error, [])}
${csrfInput(csrf)}
${boxes}
<div class="actions"><button type="submit">Save permissions</button></div>
</form>`;
}
