import type { KeyView } from '../../../services/keys/key-view.ts';
import { csrfInput, facts, field, formError, table, text, when } from '../components.ts';
import { html, type Html } from '../html.ts';
import type { FailedForm } from '../form-values.ts';

// The read-only sections of a key's page (and its credits form), built from the v1 Key object.

const dash = html`<span class="muted">—</span>`;

/** What the key is: identity, API, metadata and its times. */
export function attributesSection(key: KeyView, api: { name: string; href: string }): Html {
  return html`<section aria-labelledby="attributes-title">
<h2 id="attributes-title">Attributes</h2>
${facts([
  ['ID', html`<code>${key.id}</code>`],
  ['Start', html`<code>${key.start}…</code>`],
  ['Name', key.name ?? dash],
  ['API', html`<a href="${api.href}">${api.name}</a> <code>${key.apiId}</code>`],
  ['Status', key.enabled ? 'Enabled' : 'Disabled'],
  ['External ID', key.identity ? html`<code>${key.identity.externalId}</code> (identity <code>${key.identity.id}</code>)` : dash],
  ['Environment', key.environment ?? dash],
  ['Meta', key.meta ? html`<pre><code>${JSON.stringify(key.meta, null, 2)}</code></pre>` : dash],
  ['Created', when(key.createdAt)],
  ['Updated', when(key.updatedAt)],
  ['Expires', key.expires === undefined ? 'never' : when(key.expires)],
  ['Last used', when(key.lastUsedAt)],
])}
</section>`;
}

/** Credits left and their refill, with the form that sets them (keys.updateRemaining, op `set`). */
export function creditsSection(key: KeyView, form: { csrf: string; action: string; form?: FailedForm }): Html {
  const refill = key.refill;
  const entered = form.form?.values ? text(form.form.values.remaining) : key.remaining?.toString();
  return html`<section aria-labelledby="credits-title">
<h2 id="credits-title">Credits</h2>
${facts([
  ['Remaining', key.remaining ?? 'unlimited'],
  [
    'Refill',
    refill
      ? `${refill.amount} ${refill.interval}${refill.refillDay !== undefined && refill.interval === 'monthly' ? `, on day ${refill.refillDay}` : ''}`
      : 'none',
  ],
  ['Last refill', when(refill?.lastRefillAt)],
])}
<form method="post" action="${form.action}" class="panel" aria-labelledby="set-credits-title">
<h3 id="set-credits-title">Set credits</h3>
${formError(form.form?.error, ['/value'])}
${csrfInput(form.csrf)}
${field({ label: 'Credits', name: 'remaining', path: '/value', type: 'number', value: entered, hint: 'Empty: unlimited.' }, form.form?.error?.errors)}
<div class="actions"><button type="submit">Set credits</button></div>
</form>
</section>`;
}

/** Roles, and the permissions the key has directly or through them. */
export function rbacSection(key: KeyView): Html {
  const items = (names: string[], none: string) =>
    names.length ? html`<ul>${names.map((n) => html`<li><code>${n}</code></li>`)}</ul>` : html`<p class="muted">${none}</p>`;
  return html`<section aria-labelledby="roles-title">
<h2 id="roles-title">Roles</h2>
${items(key.roles, 'No roles.')}
</section>
<section aria-labelledby="permissions-title">
<h2 id="permissions-title">Permissions</h2>
<p class="hint">Attached directly or through a role.</p>
${items(key.permissions, 'No permissions.')}
</section>`;
}

/** The key's rate limit (the `default` one verifications apply). */
export function rateLimitsSection(key: KeyView): Html {
  const rl = key.ratelimit;
  const rows = rl ? [['default', rl.limit, `${rl.duration} ms`, rl.type === 'fast' ? 'fast (async)' : 'consistent']] : [];
  return html`<section aria-labelledby="ratelimits-title">
<h2 id="ratelimits-title">Rate limits</h2>
${table('Rate limits', ['Name', 'Limit', 'Per', 'Type'], rows, 'No rate limit: verifications of this key are not limited.')}
</section>`;
}
