import { auditEvents, listAuditLogsFor, type AuditLogView } from '../../../services/audit/list-audit-logs.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import { pager, table, text, when } from '../components.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';

const PATH = '/dashboard/audit-log';
const PAGE_SIZE = 50;

/** The audit log: newest first, filtered by event and by target id, 50 records a page. */
export default function auditLogPages(router: PageRouter): void {
  router.get(PATH, render);
}

async function render(ctx: PageContext): Promise<PageResult> {
  const event = text(ctx.query.event);
  const targetId = text(ctx.query.targetId);
  const [events, page] = await Promise.all([
    auditEvents(ctx.deps.store.db, ctx.caller),
    listAuditLogsFor(ctx.deps.store.db, ctx.caller, { limit: PAGE_SIZE, cursor: text(ctx.query.cursor), event, targetId }),
  ]);
  const rows = page.logs.map((l) => [
    when(l.time),
    html`<code>${l.event}</code>`,
    actor(l),
    target(l),
    l.diff ? html`<code>${JSON.stringify(l.diff)}</code>` : '',
  ]);
  const options = events.map((e) => html`<option value="${e}"></option>`);
  const main = html`<form method="get" action="${PATH}" class="panel" aria-label="Filter">
<div class="field"><label for="f-event">Event</label><input id="f-event" name="event" list="audit-events" value="${event ?? ''}" aria-describedby="f-event-hint"><datalist id="audit-events">${options}</datalist><p class="hint" id="f-event-hint">Empty: every event.</p></div>
<div class="field"><label for="f-target">Target ID</label><input id="f-target" name="targetId" value="${targetId ?? ''}"></div>
<div class="actions"><button type="submit">Filter</button>${event || targetId ? html`<a href="${PATH}">Clear</a>` : ''}</div>
</form>
${table('Audit log', ['Time', 'Event', 'Actor', 'Target', 'Change'], rows, 'No audit records match.')}
${pager(PATH, { event, targetId, cursor: text(ctx.query.cursor) }, page.cursor)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: PATH }, 'Audit log', main) };
}

const actor = (l: AuditLogView) => html`${l.actor.type} <code>${l.actor.id}</code>`;

/** The target, linked to its page where the dashboard has one. */
function target(l: AuditLogView) {
  const href = TARGET_PAGES[l.target.type]?.(l.target.id);
  const id = href ? html`<a href="${href}"><code>${l.target.id}</code></a>` : html`<code>${l.target.id}</code>`;
  return html`${l.target.type} ${id}`;
}

const TARGET_PAGES: Record<string, (id: string) => string> = {
  api: (id) => `/dashboard/apis/${id}`,
  key: (id) => `/dashboard/keys/${id}`,
  role: (id) => `/dashboard/roles/${id}`,
  identity: (id) => `/dashboard/identities/${id}`,
  migration: (id) => `/dashboard/migrations/${id}`,
};
