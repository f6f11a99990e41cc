import { AppError, type FieldProblem } from '../../../domain/errors.ts';
import { getApi } from '../../../services/apis/apis.ts';
import { getKey } from '../../../services/keys/keys.ts';
import type { KeyView } from '../../../services/keys/key-view.ts';
import type { PageContext, PageResult, PageRouter } from '../context.ts';
import type { Outcome } from '../operations.ts';
import { confirmAction, csrfInput, formError, leakedBadge, numeric } from '../components.ts';
import { leakedKeyUrls } from '../../../services/leaks/leaked-keys.ts';
import { html, type Html } from '../html.ts';
import { layout } from '../layout.ts';
import type { FailedForm } from '../form-values.ts';
import { attributesSection, creditsSection, rateLimitsSection, rbacSection } from './key-sections.ts';
import { verificationsSection } from './key-chart.ts';

const KEYS = '/dashboard/keys';
const keyPath = (keyId: string): string => `${KEYS}/${encodeURIComponent(keyId)}`;
const apiPath = (apiId: string): string => `/dashboard/apis/${encodeURIComponent(apiId)}`;

interface State {
  /** The "Set credits" form sent back with what was entered and what the operation refused. */
  credits?: FailedForm;
  /** A failed action outside a form (enable, disable, delete). */
  error?: { detail: string; errors?: FieldProblem[] };
}

/**
 * A key's page: its attributes, roles and permissions, credits (set them), rate limits, enabling and
 * disabling it, deleting it, and a chart of its verifications. Every change is the key's v1 operation.
 */
export default function keyPages(router: PageRouter): void {
  router.get(`${KEYS}/:keyId`, (ctx) => render(ctx, {}));
  router.post(`${KEYS}/:keyId/enabled`, async (ctx) => {
    const outcome = await ctx.perform('POST', 'keys.updateKey', { keyId: ctx.params.keyId, enabled: ctx.form.enabled === 'true' });
    return outcome.ok ? { redirect: keyPath(ctx.params.keyId) } : render(ctx, { error: failure(outcome) });
  });
  router.post(`${KEYS}/:keyId/credits`, async (ctx) => {
    // An empty field sets no limit: `null` makes the key unlimited, as the operation defines.
    const value = numeric(ctx.form.remaining) ?? null;
    const outcome = await ctx.perform('POST', 'keys.updateRemaining', { keyId: ctx.params.keyId, op: 'set', value });
    return outcome.ok ? { redirect: keyPath(ctx.params.keyId) } : render(ctx, { credits: { values: ctx.form, error: failure(outcome) } });
  });
  router.post(`${KEYS}/:keyId/delete`, async (ctx) => {
    const key = await loadKey(ctx);
    const outcome = await ctx.perform('POST', 'keys.deleteKey', { keyId: key.id });
    return outcome.ok ? { redirect: apiPath(key.apiId) } : render(ctx, { error: failure(outcome) });
  });
}

/** The key named by the address, in the session's workspace: another workspace's key is a 404 page. */
const loadKey = (ctx: PageContext): Promise<KeyView> => getKey(ctx.deps.store.db, ctx.caller, ctx.params.keyId, false);

/**
 * The error of a failed operation, for the page to show; a key that is not there (deleted meanwhile, or of
 * another workspace) is the 404 page, as reading it would be.
 */
function failure(outcome: Outcome<unknown>): { detail: string; errors?: FieldProblem[] } {
  if (outcome.ok) throw new Error('not a failure');
  if (outcome.status === 404) throw new AppError('data/key-not-found', outcome.error.detail);
  return outcome.error;
}

async function render(ctx: PageContext, state: State): Promise<PageResult> {
  const key = await loadKey(ctx);
  const api = await getApi(ctx.deps.store.db, ctx.caller, key.apiId);
  const range = ctx.query.range === '30d' ? '30d' : '24h';
  const path = keyPath(key.id);
  const leakedAt = (await leakedKeyUrls(ctx.deps.store.db, ctx.caller.workspaceId, [key.id])).get(key.id);
  const main = html`<p><a href="${apiPath(api.id)}">Back to the API ${api.name}</a> · <a href="${path}/analytics">Analytics</a></p>
${state.error ? formError(state.error, []) : ''}
${leakedAt === undefined ? '' : html`<p class="error" id="leaked">${leakedBadge(leakedAt)}<br>This key was reported as leaked (see the audit log): replace it and delete it.</p>`}
<div class="actions">${enabledForm(ctx.csrf, path, key.enabled)}${confirmAction({
    id: 'delete-key',
    label: 'Delete',
    action: `${path}/delete`,
    csrf: ctx.csrf,
    question: `Delete the key ${key.name ?? key.start}?`,
    detail: 'Verifications of it fail from the next request on. This cannot be undone here.',
  })}</div>
${attributesSection(key, { name: api.name, href: apiPath(api.id) })}
${await verificationsSection(ctx, key.id, path, range)}
${creditsSection(key, { csrf: ctx.csrf, action: `${path}/credits`, form: state.credits })}
${rbacSection(key)}
${rateLimitsSection(key)}`;
  return { page: layout({ session: ctx.session, csrf: ctx.csrf, path: apiPath(api.id) }, `Key ${key.name ?? key.start}`, main) };
}

/** Disabling is undone with one click (Enable), so it asks for no confirmation. */
function enabledForm(csrf: string, path: string, enabled: boolean): Html {
  return html`<form method="post" action="${path}/enabled" class="inline">${csrfInput(csrf)}<input type="hidden" name="enabled" value="${enabled ? 'false' : 'true'}"><button type="submit"${enabled ? html` class="secondary"` : ''}>${enabled ? 'Disable' : 'Enable'}</button></form>`;
}
