import type { FieldProblem } from '../../../domain/errors.ts';
import { listIdentities } from '../../../services/identities/identities.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { countText, csrfInput, field, formError, opener, pager, table, text } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';
import { PAGE_SIZE } from './rbac-lists.ts';
import { identityDetailPages } from './rbac-identity.ts';

const PATH = '/dashboard/identities';
const DEFAULT_ENVIRONMENT = 'default';

/** Identities: one environment's identities and creating one (identities.createIdentity); an identity's page is in rbac-identity.ts. */
export default function identityPages(router: PageRouter): void {
  router.get(PATH, (ctx) => render(ctx, ctx.query.form === 'create' ? {} : undefined));
  router.post(PATH, create);
  identityDetailPages(router, PATH);
}

async function create(ctx: PageContext): Promise<PageResult> {
  const meta = parsedMeta(text(ctx.form.meta));
  // Text that is not JSON never reaches the operation; any JSON value does, so the API judges its shape.
  if ('problem' in meta) {
    const error = { detail: 'The form has problems: /meta is not JSON.', errors: [meta.problem] };
    return render(ctx, { values: ctx.form, error });
  }
  const outcome = await ctx.perform<{ identityId: string }>('POST', 'identities.createIdentity', {
    externalId: text(ctx.form.externalId) ?? '',
    environment: text(ctx.form.environment),
    meta: meta.value,
  });
  if (!outcome.ok) return render(ctx, { values: ctx.form, error: outcome.error });
  return { redirect: `${PATH}/${encodeURIComponent(outcome.data.identityId)}` };
}

/** The meta field's JSON (undefined when empty), or the problem to show next to it. */
function parsedMeta(source: string | undefined): { value: unknown } | { problem: FieldProblem } {
  if (source === undefined) return { value: undefined };
  try {
    return { value: JSON.parse(source) };
  } catch (err) {
    return { problem: { path: '/meta', message: `is not valid JSON (${(err as Error).message})` } };
  }
}

async function render(ctx: PageContext, form: FailedForm | undefined): Promise<PageResult> {
  const environment = text(ctx.query.environment) ?? DEFAULT_ENVIRONMENT;
  const list = await listIdentities(ctx.deps.store.db, ctx.caller, { environment, limit: PAGE_SIZE, cursor: text(ctx.query.cursor) });
  const rows = list.identities.map((i) => [
    html`<a href="${PATH}/${encodeURIComponent(i.id)}">${i.externalId}</a>`,
    html`<code>${i.id}</code>`,
    i.environment,
    i.ratelimits.length,
  ]);
  const query = { cursor: ctx.query.cursor, environment: environment === DEFAULT_ENVIRONMENT ? undefined : environment };
  const main = html`<div class="actions">${form ? '' : opener('Create identity', 'create', PATH)}</div>
${form ? createForm(ctx.csrf, form) : environmentFilter(environment)}
<p class="muted">${countText(list.total)} ${list.total === 1 ? 'identity' : 'identities'} in the environment <code>${environment}</code>.</p>
${table('Identities', ['External ID', 'ID', 'Environment', 'Rate limits'], rows, 'This environment has no identities yet.')}
${pager(PATH, query, list.cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Identities', main) };
}

/** The list shows one environment (as identities.listIdentities does); this chooses which. */
function environmentFilter(environment: string): Html {
  return html`<form method="get" action="${PATH}" class="inline" aria-label="Environment filter">
<label for="filter-environment">Show environment</label>
<input type="text" id="filter-environment" name="environment" value="${environment}">
<button type="submit" class="secondary">Show</button>
</form>`;
}

function createForm(csrf: string, form: FailedForm): Html {
  const v = form.values ?? {};
  const problems = form.error?.errors;
  return html`<form method="post" action="${PATH}" class="panel" aria-labelledby="create-title">
<h2 id="create-title">Create identity</h2>
${formError(form.error, ['/externalId', '/environment', '/meta'])}
${csrfInput(csrf)}
${field({ label: 'External ID', name: 'externalId', value: text(v.externalId), required: true, hint: 'Your id of this user or organisation; unique in the workspace.' }, problems)}
${field({ label: 'Environment', name: 'environment', value: text(v.environment), hint: `Optional; ${DEFAULT_ENVIRONMENT} when empty.` }, problems)}
${field({ label: 'Meta', name: 'meta', type: 'textarea', value: text(v.meta), hint: 'Optional: a JSON object, e.g. {"plan": "pro"}.' }, problems)}
<div class="actions"><button type="submit">Create</button><a href="${PATH}">Cancel</a></div>
</form>`;
}
