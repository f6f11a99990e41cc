import { getIdentity } from '../../../services/identities/identities.ts';
import type { PageRouter } from '../context.ts';
import { confirmAction, facts, table } from '../components.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';
import { refusedPage } from './rbac-lists.ts';

/**
 * An identity's page under `base` (/dashboard/identities): its facts, meta and rate limits, and deleting it
 * (identities.deleteIdentity). An identity of another workspace is a 404, as getIdentity answers.
 */
export function identityDetailPages(router: PageRouter, base: string): void {
  router.get(`${base}/:identityId`, async (ctx) => {
    const identity = await getIdentity(ctx.deps.store.db, ctx.caller, { identityId: ctx.params.identityId });
    const path = `${base}/${encodeURIComponent(identity.id)}`;
    const limits = identity.ratelimits.map((r) => [html`<code>${r.name}</code>`, r.limit, r.duration]);
    const main = html`${facts([
      ['External ID', identity.externalId],
      ['ID', html`<code>${identity.id}</code>`],
      ['Environment', identity.environment],
    ])}
<p><a href="${path}/analytics">Analytics</a>: verifications of its keys</p>
<div class="actions">${confirmAction({
      id: 'delete-identity',
      label: 'Delete',
      action: `${path}/delete`,
      csrf: ctx.csrf,
      question: `Delete the identity ${identity.externalId}?`,
      detail: 'Its rate limits are deleted; its keys stay, no longer linked to it. This cannot be undone.',
    })}</div>
<h2>Meta</h2>
${Object.keys(identity.meta).length ? html`<pre><code>${JSON.stringify(identity.meta, null, 2)}</code></pre>` : html`<p class="muted">No meta.</p>`}
<h2>Rate limits</h2>
${table('Rate limits', ['Name', 'Limit', 'Duration (ms)'], limits, 'This identity has no rate limits.')}
<p><a href="${base}">All identities</a></p>`;
    return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: base }, `Identity ${identity.externalId}`, main) };
  });
  router.post(`${base}/:identityId/delete`, async (ctx) => {
    const outcome = await ctx.perform('POST', 'identities.deleteIdentity', { identityId: ctx.params.identityId });
    return outcome.ok ? { redirect: base } : refusedPage(outcome);
  });
}
