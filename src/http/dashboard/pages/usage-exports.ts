import type { FieldProblem } from '../../../domain/errors.ts';
import {
  DEFAULT_EVENT_NAME,
  DEFAULT_EVENT_TYPE,
  DEFAULT_STRIPE_CUSTOMER_FIELD,
  DEFAULT_USAGE_OUTCOMES,
  USAGE_DESTINATIONS,
  USAGE_PERIODS,
  USAGE_SUBJECTS,
} from '../../../domain/usage-exports.ts';
import { VERIFY_CODES } from '../../../domain/verify-codes.ts';
import { listExports } from '../../../services/usage/exports.ts';
import type { ExportView } from '../../../services/usage/export-records.ts';
import type { Form, PageContext, PageResult, PageRouter } from '../context.ts';
import { confirmAction, csrfInput, field, formError, list, opener, problemsAt, table, text, when } from '../components.ts';
import type { FailedForm } from '../form-values.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import { refusedPage } from './rbac-lists.ts';
import { reportPages } from './usage-reports.ts';

export const USAGE_EXPORTS_PATH = '/dashboard/usage-exports';
const PATH = USAGE_EXPORTS_PATH;

/** The create form's fields, as the operation's members (their problems are shown next to them). */
const FIELDS = ['/destination', '/url', '/token', '/subject', '/period', '/outcomes', '/eventType', '/eventName', '/stripeCustomerField'];

/**
 * Usage exports: the workspace's exports to OpenMeter or Stripe; creating one (its token never shown again),
 * enabling, disabling, deleting; each export's reports on a page of its own. Changes are the API's operations.
 */
export default function usageExportPages(router: PageRouter): void {
  router.get(PATH, (ctx) => render(ctx, ctx.query.form === 'create' ? {} : undefined));
  router.post(PATH, create);
  for (const enabled of [true, false])
    router.post(`${PATH}/:exportId/${enabled ? 'enable' : 'disable'}`, async (ctx) => {
      const outcome = await ctx.perform('POST', 'usage.updateExport', { exportId: ctx.params.exportId, enabled });
      return outcome.ok ? { redirect: PATH } : refusedPage(outcome);
    });
  router.post(`${PATH}/:exportId/delete`, async (ctx) => {
    const outcome = await ctx.perform('POST', 'usage.deleteExport', { exportId: ctx.params.exportId });
    return outcome.ok ? { redirect: PATH } : refusedPage(outcome);
  });
  reportPages(router);
}

/**
 * usage.createExport with the form's fields as they were filled: the operation's schema and rules judge them (a member
 * of the other destination is its problem, not dropped here). Its 400 is shown in the form, without the token.
 */
async function create(ctx: PageContext): Promise<PageResult> {
  const v = ctx.form;
  const outcomes = list(v.outcome);
  const outcome = await ctx.perform('POST', 'usage.createExport', {
    destination: text(v.destination),
    url: text(v.url),
    token: text(v.token) ?? '',
    subject: text(v.subject),
    period: text(v.period),
    outcomes: outcomes.length ? outcomes : undefined,
    eventType: text(v.eventType),
    eventName: text(v.eventName),
    stripeCustomerField: text(v.stripeCustomerField),
  });
  if (outcome.ok) return { redirect: PATH };
  if (outcome.status !== 400) return refusedPage(outcome);
  const { token: _token, ...values } = v;
  return render(ctx, { values, error: outcome.error });
}

async function render(ctx: PageContext, form: FailedForm | undefined): Promise<PageResult> {
  const { exports } = await listExports(ctx.deps.store.db, ctx.caller);
  const rows = exports.map((e) => [
    e.destination,
    html`<a href="${PATH}/${e.exportId}">${e.url}</a>`,
    e.subject,
    e.period,
    e.outcomes.join(', '),
    eventOf(e),
    e.enabled ? 'enabled' : 'disabled',
    when(e.reportedUntil),
    actions(ctx.csrf, e),
  ]);
  const main = html`<div class="actions">${form ? '' : opener('Create export', 'create', PATH)}</div>
${form ? createForm(ctx.csrf, form) : ''}
${table(
  'Usage exports',
  ['Destination', 'URL', 'Subject', 'Period', 'Outcomes', 'Event', 'Status', 'Reported until', 'Actions'],
  rows,
  'This workspace has no usage exports.',
)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Usage exports', main) };
}

const eventOf = (e: ExportView): Html =>
  e.destination === 'stripe'
    ? html`<code>${e.eventName}</code><br><span class="muted">customer id in meta.${e.stripeCustomerField}</span>`
    : html`<code>${e.eventType}</code>`;

const post = (csrf: string, action: string, label: string): Html =>
  html`<form method="post" action="${action}" class="inline">${csrfInput(csrf)}<button type="submit" class="secondary">${label}</button></form>`;

function actions(csrf: string, e: ExportView): Html {
  const base = `${PATH}/${e.exportId}`;
  return html`<div class="actions">${post(csrf, `${base}/${e.enabled ? 'disable' : 'enable'}`, e.enabled ? 'Disable' : 'Enable')}${confirmAction(
    {
      id: `delete-${e.exportId}`,
      label: 'Delete',
      action: `${base}/delete`,
      csrf,
      question: `Delete the ${e.destination} export to ${e.url}?`,
      detail: 'Its reports are deleted with it; a report not yet sent is not sent. This cannot be undone.',
    },
  )}</div>`;
}

/** A group of radio buttons or checkboxes named `name`, with the operation's problems at `path` beneath it. */
function choices(
  spec: { legend: string; name: string; path: string; type: 'radio' | 'checkbox'; options: readonly string[]; chosen: string[] },
  problems: FieldProblem[] | undefined,
): Html {
  const mine = problemsAt(problems, spec.path);
  const box = (o: string) =>
    html`<label><input type="${spec.type}" name="${spec.name}" value="${o}"${spec.chosen.includes(o) ? html` checked` : ''}> ${o}</label>`;
  return html`<fieldset><legend>${spec.legend}</legend><div class="checks">${spec.options.map(box)}</div></fieldset>
${mine.length ? html`<p class="field-error" role="alert">${mine.map((p) => p.message).join('; ')}</p>` : ''}`;
}

function createForm(csrf: string, form: FailedForm): Html {
  const v: Form = form.values ?? {};
  const problems = form.error?.errors;
  // A fresh form starts at the operation's defaults; a refused one shows what was sent.
  const fresh = form.values === undefined;
  const one = (name: string, fallback: string) => [text(v[name]) ?? (fresh ? fallback : '')];
  return html`<form method="post" action="${PATH}" class="panel" aria-labelledby="create-title">
<h2 id="create-title">Create usage export</h2>
${formError(form.error, FIELDS)}
${csrfInput(csrf)}
${choices({ legend: 'Destination', name: 'destination', path: '/destination', type: 'radio', options: USAGE_DESTINATIONS, chosen: one('destination', 'openmeter') }, problems)}
${field({ label: 'URL', name: 'url', value: text(v.url), hint: 'OpenMeter: its ingest endpoint, …/api/v1/events (required). Stripe: empty for Stripe’s meter events endpoint. An https URL to a public address.' }, problems)}
${field({ label: 'Token', name: 'token', type: 'password', required: true, hint: 'Sent as Authorization: Bearer …; stored encrypted and never shown again.' }, problems)}
${choices({ legend: 'Subject', name: 'subject', path: '/subject', type: 'radio', options: USAGE_SUBJECTS, chosen: one('subject', 'identity') }, problems)}
${choices({ legend: 'Period (UTC)', name: 'period', path: '/period', type: 'radio', options: USAGE_PERIODS, chosen: one('period', 'hour') }, problems)}
${choices({ legend: 'Outcomes counted (none checked: VALID)', name: 'outcome', path: '/outcomes', type: 'checkbox', options: VERIFY_CODES, chosen: fresh ? [...DEFAULT_USAGE_OUTCOMES] : list(v.outcome) }, problems)}
<fieldset><legend>OpenMeter</legend>
${field({ label: 'Event type', name: 'eventType', value: text(v.eventType), hint: `The CloudEvents type; empty: ${DEFAULT_EVENT_TYPE}.` }, problems)}
</fieldset>
<fieldset><legend>Stripe</legend>
${field({ label: 'Event name', name: 'eventName', value: text(v.eventName), hint: `The meter’s event name; empty: ${DEFAULT_EVENT_NAME}.` }, problems)}
${field({ label: 'Customer id meta field', name: 'stripeCustomerField', value: text(v.stripeCustomerField), hint: `The identity’s (or key’s) meta field holding its Stripe customer id; empty: ${DEFAULT_STRIPE_CUSTOMER_FIELD}.` }, problems)}
</fieldset>
<div class="actions"><button type="submit">Create</button><a href="${PATH}">Cancel</a></div>
</form>`;
}
