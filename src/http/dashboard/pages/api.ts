import { getApi, listKeys, searchKeys } from '../../../services/apis/apis.ts';
import type { FieldProblem } from '../../../domain/errors.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import {
  confirmAction,
  countText,
  csrfInput,
  facts,
  field,
  formError,
  leakedBadge,
  numeric,
  opener,
  pager,
  table,
  text,
  when,
} from '../components.ts';
import { leakedKeyUrls } from '../../../services/leaks/leaked-keys.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import { datetimeProblem, epochFromDatetime, type FailedForm } from '../form-values.ts';

const APIS = '/dashboard/apis';
const PAGE_SIZE = 50;

const apiPath = (apiId: string): string => `${APIS}/${encodeURIComponent(apiId)}`;
const keyPath = (keyId: string): string => `/dashboard/keys/${encodeURIComponent(keyId)}`;

type Api = Awaited<ReturnType<typeof getApi>>;

interface State {
  /** The create-key form, open, with what was entered and what the operation refused. */
  form?: FailedForm;
  created?: { keyId: string; key: string };
  /** A failed action outside the form (deleting a protected API). */
  error?: { detail: string; errors?: FieldProblem[] };
}

/** An API's page: its keys (paginated), creating a key (shown once) and deleting the API. */
export default function apiPages(router: PageRouter): void {
  router.get(`${APIS}/:apiId`, async (ctx) => {
    const api = await loadApi(ctx);
    const shown = await ctx.reveal.take('key', `${APIS}/${api.id}`);
    const created = shown ? { keyId: shown.values.keyId, key: shown.values.key } : undefined;
    return render(ctx, api, ctx.query.form === 'create' ? { form: {} } : { created });
  });
  router.post(`${APIS}/:apiId`, createKey);
  router.post(`${APIS}/:apiId/delete`, async (ctx) => {
    const api = await loadApi(ctx);
    const outcome = await ctx.perform('POST', 'apis.deleteApi', { apiId: api.id });
    if (!outcome.ok) return render(ctx, api, { error: outcome.error });
    return { redirect: APIS };
  });
}

/** The API named by the address, in the session's workspace: another workspace's API is a 404 page. */
const loadApi = (ctx: PageContext): Promise<Api> => getApi(ctx.deps.store.db, ctx.caller, ctx.params.apiId);

async function createKey(ctx: PageContext): Promise<PageResult> {
  const api = await loadApi(ctx);
  const values = ctx.form;
  const expires = text(values.expires);
  const outcome = await ctx.perform<{ keyId: string; key: string }>('POST', 'keys.createKey', {
    apiId: api.id,
    name: text(values.name),
    prefix: text(values.prefix),
    externalId: text(values.externalId),
    remaining: numeric(values.remaining),
    // A value that is not a time is sent as typed, so the operation reports it at /expires like any other problem.
    expires: expires === undefined || datetimeProblem(expires, '/expires') ? expires : epochFromDatetime(expires),
  });
  if (!outcome.ok) return render(ctx, api, { form: { values, error: outcome.error } });
  // Post/redirect/get: the new key is shown once by the page the browser is sent to, never by a re-post.
  const path = `${APIS}/${api.id}`;
  await ctx.reveal.put({ kind: 'key', path, values: { keyId: outcome.data.keyId, key: outcome.data.key } });
  return { redirect: path };
}

const dash = html`<span class="muted">—</span>`;

async function render(ctx: PageContext, api: Api, state: State): Promise<PageResult> {
  const search = text(ctx.query.q);
  const at = { apiId: api.id, limit: PAGE_SIZE, cursor: ctx.query.cursor };
  const page = search
    ? await searchKeys(ctx.deps.store.db, ctx.caller, { ...at, query: search })
    : await listKeys(ctx.deps.store.db, ctx.caller, at);
  const leaks = await leakedKeyUrls(
    ctx.deps.store.db,
    ctx.caller.workspaceId,
    page.keys.map((k) => k.id),
  );
  const rows = page.keys.map((k) => [
    html`<a href="${keyPath(k.id)}"><code>${k.start}…</code></a>${leaks.has(k.id) ? html` ${leakedBadge(leaks.get(k.id)!)}` : ''}`,
    k.name ?? dash,
    k.externalId ?? dash,
    k.roles.length ? k.roles.join(', ') : dash,
    k.remaining ?? 'unlimited',
    k.enabled ? 'yes' : 'no',
    when(k.expires),
    when(k.lastUsedAt),
  ]);
  const path = apiPath(api.id);
  const main = html`<p><a href="${APIS}">All APIs</a> · <a href="${path}/analytics">Analytics</a></p>
${state.error ? formError(state.error, []) : ''}
${facts([
  ['Name', api.name],
  ['ID', html`<code>${api.id}</code>`],
  ...(search ? [] : [['Keys', countText(page.total)] as [string, string]]),
])}
${state.created ? createdNotice(state.created) : ''}
<div class="actions">${state.form ? '' : opener('Create key', 'create', path)}</div>
${state.form ? createForm(ctx.csrf, path, state.form) : ''}
${searchForm(path, search)}
${table(
  search ? 'Keys found' : 'Keys',
  ['Start', 'Name', 'External ID', 'Roles', 'Remaining', 'Enabled', 'Expires', 'Last used'],
  rows,
  search ? 'No key of this API has that key ID or external ID.' : 'This API has no keys yet.',
)}
${pager(path, { q: search, cursor: ctx.query.cursor }, page.cursor)}
<section class="panel" aria-labelledby="danger-title">
<h2 id="danger-title">Delete this API</h2>
<p>Deleting the API deletes every key of it.</p>
${confirmAction({
  id: 'delete-api',
  label: 'Delete API',
  action: `${path}/delete`,
  csrf: ctx.csrf,
  question: `Delete the API ${api.name}?`,
  detail: `Its ${search ? '' : `${countText(page.total)} `}keys are deleted with it and fail verification from the next request on.`,
})}
</section>`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path }, api.name, main) };
}

/** Finds a key by its ID, or an identity's keys by its external ID (searchKeys: one index read each). */
function searchForm(path: string, search: string | undefined): Html {
  return html`<form method="get" action="${path}" class="inline" aria-label="Search keys">
<label for="search-keys">Find keys</label>
<input type="search" id="search-keys" name="q" value="${search ?? ''}" aria-describedby="search-keys-hint">
<button type="submit" class="secondary">Find</button>${search ? html` <a href="${path}">Show all keys</a>` : ''}
<p class="hint" id="search-keys-hint">A key ID, or an external ID for that identity’s keys.</p>
</form>`;
}

function createdNotice(created: { keyId: string; key: string }): Html {
  return html`<section class="notice" aria-labelledby="created-title">
<h2 id="created-title">Key created</h2>
<p>Copy it now: it is shown only once and cannot be recovered.</p>
<input id="new-key" readonly aria-label="New key" value="${created.key}">
<div class="actions"><button type="button" data-copy="new-key" aria-describedby="copy-status">Copy</button><span id="copy-status" role="status"></span></div>
<p><a href="${keyPath(created.keyId)}">Open the key’s page</a></p>
</section>`;
}

function createForm(csrf: string, path: string, form: FailedForm): Html {
  const v = form.values ?? {};
  const problems = form.error?.errors;
  return html`<form method="post" action="${path}" class="panel" aria-labelledby="create-title">
<h2 id="create-title">Create key</h2>
${formError(form.error, ['/name', '/prefix', '/externalId', '/remaining', '/expires'])}
${csrfInput(csrf)}
${field({ label: 'Name', name: 'name', value: text(v.name), hint: 'Optional.' }, problems)}
${field({ label: 'Prefix', name: 'prefix', value: text(v.prefix), hint: 'Optional, e.g. sk (the key starts with sk_).' }, problems)}
${field({ label: 'External ID', name: 'externalId', value: text(v.externalId), hint: 'Optional: links the key to this identity.' }, problems)}
${field({ label: 'Remaining credits', name: 'remaining', type: 'number', value: text(v.remaining), hint: 'Optional; unlimited when empty.' }, problems)}
${field({ label: 'Expires', name: 'expires', type: 'datetime-local', value: text(v.expires), hint: 'Optional, in UTC; never when empty.' }, problems)}
<div class="actions"><button type="submit">Create</button><a href="${path}">Cancel</a></div>
</form>`;
}
