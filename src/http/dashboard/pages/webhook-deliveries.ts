import { listDeliveries, retryDelivery } from '../../../services/webhooks/deliveries.ts';
import { requireEndpointFor } from '../../../services/webhooks/endpoint-records.ts';
import type { PageRouter } from '../context.ts';
import { csrfInput, facts, pager, table, when } from '../components.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';

const PATH = '/dashboard/webhooks';
const PAGE_SIZE = 50;

/** One endpoint's deliveries, newest first: status, attempts, last status code, next attempt; "Retry" for one not delivered. */
export function deliveryPages(router: PageRouter): void {
  router.get(`${PATH}/:endpointId`, async (ctx) => {
    const { endpointId } = ctx.params;
    const endpoint = await requireEndpointFor(ctx.deps.store.db, ctx.caller, endpointId, 'read_endpoint');
    const page = await listDeliveries(ctx.deps.store.db, ctx.caller, { endpointId, limit: PAGE_SIZE, cursor: ctx.query.cursor });
    const rows = page.deliveries.map((d) => [
      html`<code>${d.eventId}</code>`,
      d.type,
      d.status,
      String(d.attempts),
      d.lastStatusCode === undefined ? html`<span class="muted">—</span>` : String(d.lastStatusCode),
      d.lastError ?? html`<span class="muted">—</span>`,
      when(d.nextAttemptAt),
      when(d.createdAt),
      d.status === 'delivered'
        ? ''
        : html`<form method="post" action="${PATH}/${endpointId}/deliveries/${d.deliveryId}/retry" class="inline">${csrfInput(ctx.csrf)}<button type="submit" class="secondary">Retry</button></form>`,
    ]);
    const main = html`${facts([
      ['URL', endpoint.url],
      ['Status', Number(endpoint.enabled) === 1 ? 'enabled' : `disabled: ${endpoint.disabled_reason ?? 'by a user'}`],
    ])}
<p><a href="${PATH}">All endpoints</a></p>
${table(
  'Deliveries',
  ['Event', 'Type', 'Status', 'Attempts', 'Last status code', 'Last error', 'Next attempt', 'Created', 'Actions'],
  rows,
  'No deliveries yet.',
)}
${pager(`${PATH}/${endpointId}`, { cursor: ctx.query.cursor }, page.cursor)}`;
    return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Webhook deliveries', main) };
  });
  router.post(`${PATH}/:endpointId/deliveries/:deliveryId/retry`, async (ctx) => {
    await retryDelivery(ctx.deps.store.db, ctx.caller, { deliveryId: ctx.params.deliveryId });
    return { redirect: `${PATH}/${ctx.params.endpointId}` };
  });
}
