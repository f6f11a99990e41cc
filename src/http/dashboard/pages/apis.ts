import { listApis } from '../../../services/apis/apis.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { countText, nameForm, opener, pager, table, text, when } from '../components.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';

const PATH = '/dashboard/apis';
const PAGE_SIZE = 50;

/** APIs: the workspace's APIs and creating one (apis.createApi). An API's own page is in api.ts. */
export default function apiListPages(router: PageRouter): void {
  router.get(PATH, (ctx) => render(ctx, ctx.query.form === 'create' ? {} : undefined));
  router.post(PATH, async (ctx) => {
    const outcome = await ctx.perform<{ apiId: string }>('POST', 'apis.createApi', { name: text(ctx.form.name) ?? '' });
    if (!outcome.ok) return render(ctx, { values: ctx.form, error: outcome.error });
    return { redirect: `${PATH}/${outcome.data.apiId}` };
  });
}

async function render(ctx: PageContext, form: FailedForm | undefined): Promise<PageResult> {
  const page = await listApis(ctx.deps.store.db, ctx.caller, { limit: PAGE_SIZE, cursor: ctx.query.cursor });
  const rows = page.apis.map((a) => [
    html`<a href="${PATH}/${a.id}">${a.name}</a>`,
    html`<code>${a.id}</code>`,
    countText(a.keys),
    when(a.createdAt),
  ]);
  const main = html`<div class="actions">${form ? '' : opener('Create API', 'create', PATH)}</div>
${form ? nameForm('Create API', PATH, ctx.csrf, form) : ''}
${table('APIs', ['Name', 'ID', 'Keys', 'Created'], rows, 'This workspace has no APIs yet.')}
${pager(PATH, { cursor: ctx.query.cursor }, page.cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'APIs', main) };
}
