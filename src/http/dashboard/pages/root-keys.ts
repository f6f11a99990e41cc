import { AppError, type FieldProblem } from '../../../domain/errors.ts';
import { ACTIONS } from '../../../domain/permissions.ts';
import { actorOf } from '../../../services/caller.ts';
import { createRootKey, rootKeyPage, type RootKeyInfo } from '../../../services/workspaces/root-keys.ts';
import { revokeRootKey } from '../../../services/workspaces/root-key-changes.ts';
import { leakedKeyUrls } from '../../../services/leaks/leaked-keys.ts';
import type { Form, PageContext, PageResult, PageRouter } from '../context.ts';
import {
  confirmAction,
  csrfInput,
  field,
  formError,
  leakedBadge,
  list,
  opener,
  pager,
  problemsAt,
  table,
  text,
  when,
} from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import { datetimeProblem, epochFromDatetime } from '../form-values.ts';

const PATH = '/dashboard/root-keys';
const PAGE_SIZE = 50;

/** Root keys: the workspace's keys, creating one (shown once) and revoking one. */
export default function rootKeyPages(router: PageRouter): void {
  router.get(PATH, async (ctx) => {
    const shown = await ctx.reveal.take('root-key', PATH);
    const created = shown ? { rootKeyId: shown.values.rootKeyId, rootKey: shown.values.rootKey } : undefined;
    return render(ctx, ctx.query.form === 'create' ? { form: {} } : { created });
  });
  router.post(PATH, create);
  router.post(`${PATH}/:rootKeyId/revoke`, async (ctx) => {
    await revokeRootKey(ctx.deps.store.db, ctx.params.rootKeyId, actorOf(ctx.caller), ctx.caller.workspaceId);
    return { redirect: PATH };
  });
}

interface State {
  /** The create form, open, with what was entered and what the service refused. */
  form?: { values?: Form; error?: { detail: string; errors?: FieldProblem[] } };
  created?: { rootKeyId: string; rootKey: string };
}

async function create(ctx: PageContext): Promise<PageResult> {
  const values = ctx.form;
  const permissions = [...list(values.permission), ...(text(values.other) ?? '').split(/\s+/).filter(Boolean)];
  const expiresText = text(values.expires);
  const expiresProblem = datetimeProblem(expiresText, '/expiresAt');
  const name = text(values.name);
  try {
    if (expiresProblem) throw new AppError('request/invalid-body', 'The form has problems', [expiresProblem]);
    const created = await createRootKey(
      ctx.deps.store.db,
      { workspaceId: ctx.caller.workspaceId, permissions, name, expiresAt: epochFromDatetime(expiresText) },
      actorOf(ctx.caller),
    );
    // Post/redirect/get: the new key is shown once by the page the browser is sent to, never by a re-post.
    await ctx.reveal.put({ kind: 'root-key', path: PATH, values: created });
    return { redirect: PATH };
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    return render(ctx, { form: { values, error: { detail: err.message, errors: err.errors } } });
  }
}

async function render(ctx: PageContext, state: State): Promise<PageResult> {
  const page = await rootKeyPage(ctx.deps.store.db, ctx.caller.workspaceId, { limit: PAGE_SIZE, cursor: ctx.query.cursor });
  const now = Date.now();
  const leaks = await leakedKeyUrls(
    ctx.deps.store.db,
    ctx.caller.workspaceId,
    page.rootKeys.filter((k) => k.revokedAt !== null).map((k) => k.rootKeyId),
  );
  const rows = page.rootKeys.map((k) => [
    k.name ?? html`<span class="muted">—</span>`,
    html`<code>${k.start}…</code>`,
    html`<code>${k.permissions.join(' ')}</code>`,
    when(k.createdAt),
    when(k.lastUsedAt),
    when(k.expiresAt),
    leaks.has(k.rootKeyId) ? html`revoked: ${leakedBadge(leaks.get(k.rootKeyId)!)}` : statusOf(k, now),
    k.revokedAt === null
      ? confirmAction({
          id: `revoke-${k.rootKeyId}`,
          label: 'Revoke',
          action: `${PATH}/${k.rootKeyId}/revoke`,
          csrf: ctx.csrf,
          question: `Revoke the root key ${k.name ?? k.start}?`,
          detail: 'Requests with it are refused from the next one on. This cannot be undone.',
        })
      : '',
  ]);
  const main = html`${state.created ? createdNotice(state.created.rootKey) : ''}
<div class="actions">${state.form ? '' : opener('Create root key', 'create', PATH)}</div>
${state.form ? createForm(ctx.csrf, state.form) : ''}
${table('Root keys', ['Name', 'Key', 'Permissions', 'Created', 'Last used', 'Expires', 'Status', 'Actions'], rows, 'This workspace has no root keys.')}
${pager(PATH, { cursor: ctx.query.cursor }, page.cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Root keys', main) };
}

const statusOf = (k: RootKeyInfo, now: number): string =>
  k.revokedAt !== null ? 'revoked' : k.expiresAt !== null && k.expiresAt <= now ? 'expired' : 'active';

function createdNotice(rootKey: string): Html {
  return html`<section class="notice" aria-labelledby="created-title">
<h2 id="created-title">Root key created</h2>
<p>Copy it now: it is shown only once and cannot be recovered.</p>
<input id="new-root-key" readonly aria-label="New root key" value="${rootKey}">
<div class="actions"><button type="button" data-copy="new-root-key" aria-describedby="copy-status">Copy</button><span id="copy-status" role="status"></span></div>
</section>`;
}

function createForm(csrf: string, form: NonNullable<State['form']>): Html {
  const v = form.values ?? {};
  const problems = form.error?.errors;
  const chosen = new Set(list(v.permission));
  const box = (p: string) =>
    html`<label><input type="checkbox" name="permission" value="${p}"${chosen.has(p) ? html` checked` : ''}> ${p}</label>`;
  const groups = Object.entries(ACTIONS).map(
    ([type, actions]) =>
      html`<fieldset><legend>${type}</legend><div class="checks">${actions.map((a) => box(`${type}.*.${a}`))}</div></fieldset>`,
  );
  const permissionProblems = problemsAt(problems, '/permissions');
  return html`<form method="post" action="${PATH}" class="panel" aria-labelledby="create-title">
<h2 id="create-title">Create root key</h2>
${formError(form.error, ['/name', '/permissions', '/expiresAt'])}
${csrfInput(csrf)}
${field({ label: 'Name', name: 'name', value: text(v.name) }, problems)}
<fieldset><legend>Everything</legend>${box('*')}</fieldset>
${groups}
${field({ label: 'Permissions on specific resources', name: 'other', path: '/permissions-other', type: 'textarea', value: text(v.other), hint: 'Optional, separated by spaces or lines, e.g. api.api_123.read_key' })}
${permissionProblems.length ? html`<p class="field-error" role="alert">${permissionProblems.map((p) => p.message).join('; ')}</p>` : ''}
${field({ label: 'Expires', name: 'expires', path: '/expiresAt', type: 'datetime-local', value: text(v.expires), hint: 'Optional, in UTC; never when empty.' }, problems)}
<div class="actions"><button type="submit">Create</button><a href="${PATH}">Cancel</a></div>
</form>`;
}
