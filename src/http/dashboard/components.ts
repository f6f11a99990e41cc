import type { FieldProblem } from '../../domain/errors.ts';
import { CSRF_FIELD } from './session-cookie.ts';
import { html, type Html, type Part } from './html.ts';
import type { FailedForm } from './form-values.ts';
import { TOTAL_CAP } from '../../services/pagination.ts';

export const csrfInput = (csrf: string): Html => html`<input type="hidden" name="${CSRF_FIELD}" value="${csrf}">`;

/** A time as `<time>` in UTC, or a dash when there is none. */
export function when(ms: number | null | undefined): Html {
  if (ms === null || ms === undefined) return html`<span class="muted">—</span>`;
  // A time beyond what a Date holds (stored before its bound was enforced) is shown as its number.
  if (!Number.isFinite(new Date(ms).getTime())) return html`<span>${ms}</span>`;
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** A data table with a caption (its accessible name); `empty` replaces the body when there are no rows. */
export function table(caption: string, columns: string[], rows: Part[][], empty: string): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<div class="table-wrap"><table>
<caption>${caption}</caption>
<thead><tr>${columns.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${r.map((cell) => html`<td>${cell}</td>`)}</tr>`)}</tbody>
</table></div>`;
}

/** Links to the first page and, when there is one, to the next (cursor pagination: newest or oldest first, as the list is). */
export function pager(path: string, query: Record<string, string | undefined>, next: string | undefined): Html {
  const at = (cursor?: string) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '' && k !== 'cursor') q.set(k, v);
    if (cursor) q.set('cursor', cursor);
    const s = q.toString();
    return s ? `${path}?${s}` : path;
  };
  if (!next && !query.cursor) return html``;
  return html`<nav class="pager" aria-label="Pages">${query.cursor ? html`<a href="${at()}">First page</a>` : ''}${next ? html`<a href="${at(next)}">Next page</a>` : ''}</nav>`;
}

/** The problems of one field: those whose JSON path is `/<name>` or lies under it. */
export const problemsAt = (problems: FieldProblem[] | undefined, path: string): FieldProblem[] =>
  (problems ?? []).filter((p) => p.path === path || p.path.startsWith(`${path}/`));

export interface FieldSpec {
  label: string;
  name: string;
  /** The JSON path of the operation's member this field fills (default `/<name>`). */
  path?: string;
  type?: 'text' | 'number' | 'datetime-local' | 'textarea' | 'password';
  value?: string;
  required?: boolean;
  hint?: string;
}

/** A labelled input, with the operation's problems for its member shown beneath it (and announced). */
export function field(spec: FieldSpec, problems?: FieldProblem[]): Html {
  const id = `f-${spec.name.replace(/[^a-zA-Z0-9_-]/g, '-')}`;
  const mine = problemsAt(problems, spec.path ?? `/${spec.name}`);
  const described = [spec.hint ? `${id}-hint` : '', mine.length ? `${id}-error` : ''].filter(Boolean).join(' ');
  const attrs = html`id="${id}" name="${spec.name}"${spec.required ? html` required` : ''}${mine.length ? html` aria-invalid="true"` : ''}${described ? html` aria-describedby="${described}"` : ''}`;
  const input =
    spec.type === 'textarea'
      ? html`<textarea ${attrs} rows="3">${spec.value ?? ''}</textarea>`
      : html`<input type="${spec.type ?? 'text'}" ${attrs} value="${spec.value ?? ''}"${spec.type === 'number' ? html` step="any"` : ''}>`;
  return html`<div class="field"><label for="${id}">${spec.label}</label>${input}${spec.hint ? html`<p class="hint" id="${id}-hint">${spec.hint}</p>` : ''}${
    mine.length ? html`<p class="field-error" id="${id}-error">${mine.map((p) => p.message).join('; ')}</p>` : ''
  }</div>`;
}

/** The failure of a form's operation: its detail, and the problems no field of the form shows. */
export function formError(error: { detail: string; errors?: FieldProblem[] } | undefined, fieldPaths: string[]): Html {
  if (!error) return html``;
  const rest = (error.errors ?? []).filter((p) => !fieldPaths.some((f) => p.path === f || p.path.startsWith(`${f}/`)));
  return html`<div class="error" role="alert"><p>${error.detail}</p>${rest.length ? html`<ul>${rest.map((p) => html`<li><code>${p.path}</code> ${p.message}</li>`)}</ul>` : ''}</div>`;
}

/**
 * A destructive action: a button that opens a dialog asking for confirmation; the dialog's form posts to
 * `action` (with the CSRF token), its submit button named `label` as well.
 */
export function confirmAction(spec: { id: string; label: string; action: string; csrf: string; question: string; detail?: string }): Html {
  return html`<button type="button" class="danger" data-dialog-open="${spec.id}">${spec.label}</button>
<dialog id="${spec.id}" aria-labelledby="${spec.id}-title">
<h2 id="${spec.id}-title">${spec.question}</h2>
${spec.detail ? html`<p>${spec.detail}</p>` : ''}
<form method="post" action="${spec.action}">${csrfInput(spec.csrf)}
<button type="button" class="secondary" data-dialog-close>Cancel</button>
<button type="submit" class="danger">${spec.label}</button>
</form>
</dialog>`;
}

/** A button that shows a form hidden until then (`?form=<name>` without JavaScript). */
export function opener(label: string, name: string, path: string): Html {
  return html`<form method="get" action="${path}" class="inline"><input type="hidden" name="form" value="${name}"><button type="submit">${label}</button></form>`;
}

/** Definitions: a list of [term, description]. */
export const facts = (items: Array<[string, Part]>): Html =>
  html`<dl class="facts">${items.map(([t, d]) => html`<dt>${t}</dt><dd>${d}</dd>`)}</dl>`;

/** The value of a single-valued form field, trimmed; undefined when absent or empty. */
export function text(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  const t = v?.trim();
  return t ? t : undefined;
}

/** Every value of a form field (checkboxes), without empties. */
export const list = (value: string | string[] | undefined): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter((v) => v !== '');

/**
 * A number field as the operation receives it: a number when the text is one, else the text itself, so that the
 * operation's schema reports the problem at the field's path; undefined when empty.
 */
export function numeric(value: string | string[] | undefined): number | string | undefined {
  const t = text(value);
  if (t === undefined) return undefined;
  const n = Number(t);
  return t !== '' && Number.isFinite(n) ? n : t;
}

/** The form creating something from its name alone (an API, a workspace), with what the operation refused. */
export function nameForm(title: string, action: string, csrf: string, form: FailedForm): Html {
  return html`<form method="post" action="${action}" class="panel" aria-labelledby="create-title">
<h2 id="create-title">${title}</h2>
${formError(form.error, ['/name'])}
${csrfInput(csrf)}
${field({ label: 'Name', name: 'name', value: text(form.values?.name), required: true }, form.error?.errors)}
<div class="actions"><button type="submit">Create</button><a href="${action}">Cancel</a></div>
</form>`;
}

/** Where a leak was found: a link for a web address, plain text otherwise (a `file://` place from `keys scan`). */
export const leakPlace = (url: string): Html =>
  /^https?:\/\//i.test(url)
    ? html`<a href="${url}" rel="noopener noreferrer" class="leak-url">${url}</a>`
    : html`<code class="leak-url">${url}</code>`;

/** The "Leaked" badge of a key or root key reported as leaked, with where it was found. */
export const leakedBadge = (url: string): Html => html`<span class="badge-leaked">Leaked</span> ${leakPlace(url)}`;

/** A list's total as counted (services/pagination.ts: exact up to TOTAL_CAP, TOTAL_CAP + 1 meaning more). */
export const countText = (total: number | undefined): string =>
  total === undefined ? '' : total > TOTAL_CAP ? `more than ${TOTAL_CAP.toLocaleString('en-US')}` : String(total);
