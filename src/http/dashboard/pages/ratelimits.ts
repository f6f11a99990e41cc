import { listNamespaces } from '../../../services/ratelimits/namespaces.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { countText, pager, table, when } from '../components.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';
import {
  deleteNamespaceAction,
  deleteOverrideAction,
  namespacePage,
  RATELIMITS_PATH as PATH,
  setOverrideAction,
} from './ratelimit-namespace.ts';

const PAGE_SIZE = 50;

/**
 * Rate limits: the workspace's namespaces and, on each one's page, its overrides (set, delete), deleting it,
 * and a chart of its passed and denied decisions. There is no page to create a namespace: the first
 * ratelimits.limit request naming one creates it.
 */
export default function ratelimitPages(router: PageRouter): void {
  router.get(PATH, list);
  router.get(`${PATH}/:namespaceId`, namespacePage);
  router.post(`${PATH}/:namespaceId/overrides`, setOverrideAction);
  router.post(`${PATH}/:namespaceId/overrides/delete`, deleteOverrideAction);
  router.post(`${PATH}/:namespaceId/delete`, deleteNamespaceAction);
}

async function list(ctx: PageContext): Promise<PageResult> {
  const page = await listNamespaces(ctx.deps.store.db, ctx.caller, { limit: PAGE_SIZE, cursor: ctx.query.cursor });
  const rows = page.namespaces.map((n) => [
    html`<a href="${PATH}/${encodeURIComponent(n.id)}">${n.name}</a>`,
    html`<code>${n.id}</code>`,
    when(n.createdAt),
  ]);
  const none =
    page.total === 0
      ? html`<p>This workspace has no rate-limit namespaces yet. There is nothing to create here: a namespace is created by the
first <code>ratelimits.limit</code> request that names it (with a root key that may <code>ratelimit.*.create_namespace</code>), e.g.</p>
<pre><code>POST /v1/ratelimits.limit
{"namespace": "api-calls", "identifier": "user_123", "limit": 100, "duration": 60000}</code></pre>
<p>It then appears here, with its overrides and a chart of the requests it passed and denied.</p>`
      : html`<p>${countText(page.total)} ${page.total === 1 ? 'namespace' : 'namespaces'}. A namespace is created by the first <code>ratelimits.limit</code> request that names it.</p>`;
  const main = html`${none}
${page.total === 0 ? '' : table('Namespaces', ['Name', 'ID', 'Created'], rows, 'No more namespaces.')}
${pager(PATH, { cursor: ctx.query.cursor }, page.cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Rate limits', main) };
}
