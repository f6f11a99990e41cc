import { getApi } from '../../../services/apis/apis.ts';
import { getIdentity } from '../../../services/identities/identities.ts';
import { getKey } from '../../../services/keys/keys.ts';
import { usageRangeOf, usageSummary, type UsageScope } from '../../../services/analytics/usage-summary.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { text } from '../components.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import { analyticsView, type ViewOptions } from './analytics-view.ts';
import { queryBox, runQuery, type QueryRun } from './analytics-query.ts';

const APIS = '/dashboard/apis';
const KEYS = '/dashboard/keys';
const IDENTITIES = '/dashboard/identities';
const at = (base: string, id: string): string => `${base}/${encodeURIComponent(id)}`;

/**
 * The Analytics pages: an API's (with the query box), a key's and an identity's, each the usage summary of the
 * last hour, 24 hours, 7 days or 30 days (`?range=`). The resource is read first, in the session's workspace:
 * another workspace's API, key or identity is the not-found page.
 */
export default function analyticsPages(router: PageRouter): void {
  router.get(`${APIS}/:apiId/analytics`, (ctx) => apiAnalytics(ctx, undefined));
  // The query box posts here; the router lets a viewer post it (it changes nothing, see roles.ts).
  router.post(`${APIS}/:apiId/analytics`, async (ctx) => {
    const api = await getApi(ctx.deps.store.db, ctx.caller, ctx.params.apiId);
    return apiAnalytics(ctx, await runQuery(ctx, api.id));
  });
  router.get(`${KEYS}/:keyId/analytics`, async (ctx) => {
    const key = await getKey(ctx.deps.store.db, ctx.caller, ctx.params.keyId, false);
    const title = key.name ?? key.start;
    const back = html`<p><a href="${at(KEYS, key.id)}">Back to the key ${title}</a></p>`;
    const view = { path: `${at(KEYS, key.id)}/analytics`, keys: false, identities: false };
    return page(ctx, `Analytics: key ${title}`, at(APIS, key.apiId), back, await summaryOf(ctx, { keyId: key.id }, view));
  });
  router.get(`${IDENTITIES}/:identityId/analytics`, async (ctx) => {
    const identity = await getIdentity(ctx.deps.store.db, ctx.caller, { identityId: ctx.params.identityId });
    const back = html`<p><a href="${at(IDENTITIES, identity.id)}">Back to the identity ${identity.externalId}</a></p>`;
    const view = { path: `${at(IDENTITIES, identity.id)}/analytics`, keys: true, identities: false };
    const summary = await summaryOf(ctx, { identityId: identity.id }, view);
    return page(ctx, `Analytics: identity ${identity.externalId}`, IDENTITIES, back, summary);
  });
}

/** The range a request names: the form's (a query sent) or the address's. */
const rangeOf = (ctx: PageContext) => usageRangeOf(text(ctx.form.range) ?? ctx.query.range);

async function summaryOf(ctx: PageContext, scope: UsageScope, view: ViewOptions): Promise<Html> {
  return analyticsView(await usageSummary(ctx.deps.store.db, ctx.caller, scope, rangeOf(ctx)), view);
}

async function apiAnalytics(ctx: PageContext, run: QueryRun | undefined): Promise<PageResult> {
  const api = await getApi(ctx.deps.store.db, ctx.caller, ctx.params.apiId);
  const path = `${at(APIS, api.id)}/analytics`;
  const back = html`<p><a href="${at(APIS, api.id)}">Back to the API ${api.name}</a></p>`;
  const summary = await summaryOf(ctx, { apiId: api.id }, { path, keys: true, identities: true });
  return page(ctx, `Analytics: ${api.name}`, at(APIS, api.id), back, html`${summary}${queryBox(ctx, path, rangeOf(ctx), run)}`);
}

function page(ctx: PageContext, title: string, navPath: string, back: Html, body: Html): PageResult {
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: navPath }, title, html`${back}${body}`) };
}
