import { AppError } from '../../../domain/errors.ts';
import { actorOf } from '../../../services/caller.ts';
import { listMembers, MEMBER_ROLES, removeMember, setMember } from '../../../services/dashboard/members.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { confirmAction, csrfInput, field, formError, table, text, when } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';

const PATH = '/dashboard/members';

/**
 * Members: who may sign in to this workspace with single sign-on, and as what (admin or viewer). The same
 * services as `keyhold members …`; removing a member ends their sessions at once.
 */
export default function memberPages(router: PageRouter): void {
  router.get(PATH, (ctx) => render(ctx, undefined));
  router.post(PATH, (ctx) =>
    change(ctx, () =>
      setMember(
        ctx.deps.store.db,
        { workspaceId: ctx.caller.workspaceId, email: text(ctx.form.email) ?? '', role: text(ctx.form.role) },
        actorOf(ctx.caller),
      ),
    ),
  );
  // The email is in the address (the confirmation dialog's form carries only the CSRF token).
  router.post(`${PATH}/remove`, (ctx) =>
    change(ctx, () =>
      removeMember(ctx.deps.store.db, { workspaceId: ctx.caller.workspaceId, email: ctx.query.email ?? '' }, actorOf(ctx.caller)),
    ),
  );
}

async function change(ctx: PageContext, act: () => Promise<unknown>): Promise<PageResult> {
  try {
    await act();
    return { redirect: PATH };
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    return render(ctx, { values: ctx.form, error: { detail: err.message, errors: err.errors } }, 400);
  }
}

const roleSelect = (id: string, chosen: string | undefined, label?: string): Html =>
  html`<select id="${id}" name="role"${label ? html` aria-label="${label}"` : ''}>${MEMBER_ROLES.map(
    (r) => html`<option value="${r}"${r === chosen ? html` selected` : ''}>${r}</option>`,
  )}</select>`;

async function render(ctx: PageContext, form: FailedForm | undefined, status = 200): Promise<PageResult> {
  const members = await listMembers(ctx.deps.store.db, ctx.caller.workspaceId);
  const rows = members.map((m, i) => [
    m.email,
    m.role,
    when(m.createdAt),
    html`<form method="post" action="${PATH}" class="inline">${csrfInput(ctx.csrf)}<input type="hidden" name="email" value="${m.email}">${roleSelect(`role-${i}`, m.role, `Role of ${m.email}`)}<button type="submit" class="secondary" aria-label="Save role of ${m.email}">Save</button></form>
${confirmAction({ id: `remove-${i}`, label: 'Remove', action: `${PATH}/remove?email=${encodeURIComponent(m.email)}`, csrf: ctx.csrf, question: `Remove ${m.email}?`, detail: 'Their open sessions in this workspace end at once.' })}`,
  ]);
  const main = html`<p>Members sign in with single sign-on by their email. An <strong>admin</strong> may do everything in the workspace; a <strong>viewer</strong> sees every page and changes nothing.</p>
<form method="post" action="${PATH}" class="panel" aria-labelledby="add-title">
<h2 id="add-title">Add member</h2>
${formError(form?.error, ['/email'])}
${csrfInput(ctx.csrf)}
${field({ label: 'Email', name: 'email', value: text(form?.values?.email), required: true }, form?.error?.errors)}
<div class="field"><label for="new-role">Role</label>${roleSelect('new-role', text(form?.values?.role) ?? 'viewer')}</div>
<div class="actions"><button type="submit">Add member</button></div>
</form>
${table('Members', ['Email', 'Role', 'Added', 'Actions'], rows, 'This workspace has no members yet.')}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Members', main), status };
}
