import { getNamespace, type NamespaceView } from '../../../services/ratelimits/namespaces.ts';
import { listOverrides } from '../../../services/ratelimits/overrides.ts';
import type { PageContext, PageResult } from '../context.ts';
import { confirmAction, csrfInput, facts, field, formError, numeric, opener, pager, problemsAt, table, text, when } from '../components.ts';
import { html, type Html } from '../html.ts';
import { errorPage, layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';
import type { Outcome } from '../operations.ts';
import { rangeOf, ratelimitChart } from './ratelimit-chart.ts';

export const RATELIMITS_PATH = '/dashboard/ratelimits';
const PAGE_SIZE = 50;
const FIELDS = ['/identifier', '/limit', '/duration', '/async'];

const pathOf = (namespaceId: string): string => `${RATELIMITS_PATH}/${encodeURIComponent(namespaceId)}`;

/** GET /dashboard/ratelimits/:namespaceId: the namespace, its overrides and its chart (`?form=override` opens the form). */
export const namespacePage = (ctx: PageContext): Promise<PageResult> => render(ctx, ctx.query.form === 'override' ? {} : undefined);

/** POST …/overrides: ratelimits.setOverride; its problems are shown next to the fields, and nothing is written. */
export async function setOverrideAction(ctx: PageContext): Promise<PageResult> {
  const namespaceId = ctx.params.namespaceId;
  const outcome = await ctx.perform('POST', 'ratelimits.setOverride', {
    namespaceId,
    identifier: text(ctx.form.identifier) ?? '',
    limit: numeric(ctx.form.limit),
    duration: numeric(ctx.form.duration),
    // A checkbox says yes or nothing: unchecked leaves `async` to each ratelimits.limit request.
    ...(text(ctx.form.async) ? { async: true } : {}),
  });
  if (outcome.ok) return { redirect: pathOf(namespaceId) };
  if (outcome.status !== 400) return failedPage(outcome);
  return render(ctx, { values: ctx.form, error: outcome.error });
}

/** POST …/overrides/delete?identifier=…: ratelimits.deleteOverride (the identifier may hold any character, so it travels in the query). */
export async function deleteOverrideAction(ctx: PageContext): Promise<PageResult> {
  const namespaceId = ctx.params.namespaceId;
  const outcome = await ctx.perform('POST', 'ratelimits.deleteOverride', { namespaceId, identifier: ctx.query.identifier ?? '' });
  return outcome.ok ? { redirect: pathOf(namespaceId) } : failedPage(outcome);
}

/** POST …/delete: ratelimits.deleteNamespace, with its overrides. */
export async function deleteNamespaceAction(ctx: PageContext): Promise<PageResult> {
  const outcome = await ctx.perform('POST', 'ratelimits.deleteNamespace', { namespaceId: ctx.params.namespaceId });
  return outcome.ok ? { redirect: RATELIMITS_PATH } : failedPage(outcome);
}

function failedPage(outcome: Outcome<unknown> & { ok: false }): PageResult {
  const title = outcome.status === 404 ? 'Not found' : 'Request failed';
  return { page: errorPage(title, outcome.error.detail), status: outcome.status };
}

async function render(ctx: PageContext, form: FailedForm | undefined): Promise<PageResult> {
  const db = ctx.deps.store.db;
  const namespace = await getNamespace(db, ctx.caller, { namespaceId: ctx.params.namespaceId });
  const path = pathOf(namespace.id);
  const range = rangeOf(ctx.query.range);
  const [overrides, chart] = await Promise.all([
    listOverrides(db, ctx.caller, { namespaceId: namespace.id, limit: PAGE_SIZE, cursor: ctx.query.cursor }),
    ratelimitChart(ctx, namespace.id, path, range),
  ]);
  const rows = overrides.overrides.map((o) => [
    html`<code>${o.identifier}</code>`,
    o.limit,
    `${o.duration} ms`,
    o.async === undefined ? html`<span class="muted">per request</span>` : o.async ? 'yes' : 'no',
    when(o.updatedAt),
    confirmAction({
      id: `delete-override-${o.id}`,
      label: 'Delete',
      action: `${path}/overrides/delete?identifier=${encodeURIComponent(o.identifier)}`,
      csrf: ctx.csrf,
      question: `Delete the override of ${o.identifier}?`,
      detail: 'Requests for it get the limit and duration they ask for again.',
    }),
  ]);
  const main = html`${facts([
    ['ID', html`<code>${namespace.id}</code>`],
    ['Created', when(namespace.createdAt)],
  ])}
<div class="actions">${namespaceActions(ctx, namespace)}</div>
${chart}
<h2 id="overrides-title">Overrides</h2>
<p>An override replaces the limit and duration of ratelimits.limit requests for an identifier, or for every identifier a <code>*</code> pattern matches.</p>
<div class="actions">${form ? '' : opener('Set override', 'override', path)}</div>
${form ? overrideForm(ctx.csrf, path, form) : ''}
${table('Overrides', ['Identifier', 'Limit', 'Duration', 'Async', 'Updated', 'Actions'], rows, 'This namespace has no overrides.')}
${pager(path, { cursor: ctx.query.cursor, range: ctx.query.range }, overrides.cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path }, `Namespace ${namespace.name}`, main) };
}

const namespaceActions = (ctx: PageContext, namespace: NamespaceView): Html =>
  confirmAction({
    id: 'delete-namespace',
    label: 'Delete namespace',
    action: `${pathOf(namespace.id)}/delete`,
    csrf: ctx.csrf,
    question: `Delete the namespace ${namespace.name}?`,
    detail:
      'Its overrides are deleted with it. Its next ratelimits.limit request creates it anew, with fresh counters. This cannot be undone.',
  });

function overrideForm(csrf: string, path: string, form: FailedForm): Html {
  const v = form.values ?? {};
  const problems = form.error?.errors;
  const asyncProblems = problemsAt(problems, '/async');
  return html`<form method="post" action="${path}/overrides" class="panel" aria-labelledby="override-title">
<h2 id="override-title">Set override</h2>
${formError(form.error, FIELDS)}
${csrfInput(csrf)}
${field({ label: 'Identifier', name: 'identifier', value: text(v.identifier), required: true, hint: 'An identifier, or a pattern where * matches any characters. Setting an existing one replaces it.' }, problems)}
${field({ label: 'Limit', name: 'limit', type: 'number', value: text(v.limit), required: true, hint: 'Requests (total cost) admitted per window.' }, problems)}
${field({ label: 'Duration (ms)', name: 'duration', type: 'number', value: text(v.duration), required: true, hint: 'The window, in milliseconds (at least 1000).' }, problems)}
<div class="field"><label><input type="checkbox" name="async" value="true"${text(v.async) ? html` checked` : ''}> Async</label>
<p class="hint">Decided on the node that answers, synced in the background. Unchecked: each request decides.</p>
${asyncProblems.length ? html`<p class="field-error">${asyncProblems.map((p) => p.message).join('; ')}</p>` : ''}</div>
<div class="actions"><button type="submit">Set override</button><a href="${path}">Cancel</a></div>
</form>`;
}
