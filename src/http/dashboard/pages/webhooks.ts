import { AppError, type FieldProblem } from '../../../domain/errors.ts';
import { EVENT_TYPES, type EventType } from '../../../domain/webhook-events.ts';
import {
  createEndpoint,
  deleteEndpoint,
  listEndpoints,
  updateEndpoint,
  type WebhookContext,
} from '../../../services/webhooks/endpoints.ts';
import { sendTestEvent } from '../../../services/webhooks/deliveries.ts';
import type { EndpointView } from '../../../services/webhooks/endpoint-records.ts';
import type { Form, PageContext, PageResult, PageRouter } from '../context.ts';
import { confirmAction, csrfInput, field, formError, list, opener, problemsAt, table, text, when } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import { deliveryPages } from './webhook-deliveries.ts';

export const WEBHOOKS_PATH = '/dashboard/webhooks';

/** Webhooks: the workspace's endpoints; creating one (its signing secret shown once), enabling, disabling, deleting, a test event. */
export default function webhookPages(router: PageRouter): void {
  router.get(WEBHOOKS_PATH, async (ctx) => {
    const shown = await ctx.reveal.take('webhook-endpoint', WEBHOOKS_PATH);
    const created = shown ? { endpointId: shown.values.endpointId, secret: shown.values.secret } : undefined;
    return render(ctx, ctx.query.form === 'create' ? { form: {} } : { created });
  });
  router.post(WEBHOOKS_PATH, create);
  for (const enabled of [true, false])
    router.post(`${WEBHOOKS_PATH}/:endpointId/${enabled ? 'enable' : 'disable'}`, async (ctx) => {
      await updateEndpoint(webhookContext(ctx), ctx.caller, { endpointId: ctx.params.endpointId, enabled });
      return { redirect: WEBHOOKS_PATH };
    });
  router.post(`${WEBHOOKS_PATH}/:endpointId/delete`, async (ctx) => {
    await deleteEndpoint(ctx.deps.store.db, ctx.caller, { endpointId: ctx.params.endpointId });
    return { redirect: WEBHOOKS_PATH };
  });
  router.post(`${WEBHOOKS_PATH}/:endpointId/test`, async (ctx) => {
    await sendTestEvent(ctx.deps.store.db, ctx.caller, { endpointId: ctx.params.endpointId });
    return { redirect: `${WEBHOOKS_PATH}/${ctx.params.endpointId}` };
  });
  deliveryPages(router);
}

export const webhookContext = (ctx: PageContext): WebhookContext => ({
  db: ctx.deps.store.db,
  vault: ctx.deps.vault,
  settings: ctx.deps.webhooks,
});

interface State {
  form?: { values?: Form; error?: { detail: string; errors?: FieldProblem[] } };
  created?: { endpointId: string; secret: string };
}

async function create(ctx: PageContext): Promise<PageResult> {
  const values = ctx.form;
  const events = list(values.event) as EventType[];
  try {
    const created = await createEndpoint(webhookContext(ctx), ctx.caller, {
      url: text(values.url) ?? '',
      events: events.length ? events : undefined,
      description: text(values.description),
    });
    // Post/redirect/get: the signing secret is shown once by the page the browser is sent to, never by a re-post.
    await ctx.reveal.put({ kind: 'webhook-endpoint', path: WEBHOOKS_PATH, values: created });
    return { redirect: WEBHOOKS_PATH };
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    return render(ctx, { form: { values, error: { detail: err.message, errors: err.errors } } });
  }
}

async function render(ctx: PageContext, state: State): Promise<PageResult> {
  const { endpoints } = await listEndpoints(ctx.deps.store.db, ctx.caller);
  const rows = endpoints.map((e) => [
    html`<a href="${WEBHOOKS_PATH}/${e.endpointId}">${e.url}</a>${e.description ? html`<br><span class="muted">${e.description}</span>` : ''}`,
    e.events.length === EVENT_TYPES.length ? 'every type' : e.events.join(', '),
    e.enabled ? 'enabled' : `disabled: ${e.disabledReason ?? 'by a user'}`,
    when(e.createdAt),
    actions(ctx, e),
  ]);
  const main = html`${state.created ? createdNotice(state.created.secret) : ''}
<div class="actions">${state.form ? '' : opener('Create endpoint', 'create', WEBHOOKS_PATH)}</div>
${state.form ? createForm(ctx.csrf, state.form) : ''}
${table('Webhook endpoints', ['URL', 'Events', 'Status', 'Created', 'Actions'], rows, 'This workspace has no webhook endpoints.')}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: WEBHOOKS_PATH }, 'Webhooks', main) };
}

const post = (csrf: string, action: string, label: string): Html =>
  html`<form method="post" action="${action}" class="inline">${csrfInput(csrf)}<button type="submit" class="secondary">${label}</button></form>`;

function actions(ctx: PageContext, e: EndpointView): Html {
  const base = `${WEBHOOKS_PATH}/${e.endpointId}`;
  return html`<div class="actions">${post(ctx.csrf, `${base}/test`, 'Send test event')}${post(ctx.csrf, `${base}/${e.enabled ? 'disable' : 'enable'}`, e.enabled ? 'Disable' : 'Enable')}${confirmAction(
    {
      id: `delete-${e.endpointId}`,
      label: 'Delete',
      action: `${base}/delete`,
      csrf: ctx.csrf,
      question: `Delete the endpoint ${e.url}?`,
      detail: 'Its deliveries are deleted with it; events are no longer sent to it. This cannot be undone.',
    },
  )}</div>`;
}

function createdNotice(secret: string): Html {
  return html`<section class="notice" aria-labelledby="created-title">
<h2 id="created-title">Endpoint created</h2>
<p>Copy its signing secret now: it is shown only once. Verify deliveries with it (Standard Webhooks).</p>
<input id="new-signing-secret" readonly aria-label="Signing secret" value="${secret}">
<div class="actions"><button type="button" data-copy="new-signing-secret" aria-describedby="copy-status">Copy</button><span id="copy-status" role="status"></span></div>
</section>`;
}

function createForm(csrf: string, form: NonNullable<State['form']>): Html {
  const v = form.values ?? {};
  const problems = form.error?.errors;
  const chosen = new Set(list(v.event));
  const box = (t: string) =>
    html`<label><input type="checkbox" name="event" value="${t}"${chosen.has(t) ? html` checked` : ''}> ${t}</label>`;
  const eventProblems = problemsAt(problems, '/events');
  return html`<form method="post" action="${WEBHOOKS_PATH}" class="panel" aria-labelledby="create-title">
<h2 id="create-title">Create endpoint</h2>
${formError(form.error, ['/url', '/events', '/description'])}
${csrfInput(csrf)}
${field({ label: 'URL', name: 'url', value: text(v.url), required: true, hint: 'An https URL without credentials, to a public address.' }, problems)}
${field({ label: 'Description', name: 'description', value: text(v.description) }, problems)}
<fieldset><legend>Events (none checked: every type)</legend><div class="checks">${EVENT_TYPES.map(box)}</div></fieldset>
${eventProblems.length ? html`<p class="field-error" role="alert">${eventProblems.map((p) => p.message).join('; ')}</p>` : ''}
<div class="actions"><button type="submit">Create</button><a href="${WEBHOOKS_PATH}">Cancel</a></div>
</form>`;
}
