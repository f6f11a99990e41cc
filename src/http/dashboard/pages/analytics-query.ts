import { AppError } from '../../../domain/errors.ts';
import { runApiAnalyticsQuery } from '../../../services/analytics/api-query.ts';
import type { UsageRange } from '../../../services/analytics/usage-summary.ts';
import { V2_ERROR_BASE, V2_KINDS } from '../../v2/errors.ts';
import type { PageContext } from '../context.ts';
import { csrfInput, table } from '../components.ts';
import { html, type Html, type Part } from '../html.ts';

/** What the query box holds until a query is sent: verifications of the last day by outcome. */
export const DEFAULT_QUERY = `SELECT outcome, count(*) AS verifications
FROM key_verifications_v1
WHERE time >= now() - INTERVAL 1 DAY
GROUP BY outcome
ORDER BY verifications DESC`;

/** Most result rows shown on the page (the API answers up to 10,000). */
export const ROWS_SHOWN = 1_000;

/** A query sent from the box, and what it answered: its rows, or the API's error. */
export interface QueryRun {
  query: string;
  rows?: Array<Record<string, unknown>>;
  error?: { title: string; detail: string; type: string };
}

/**
 * Runs the query the form sent over the API's verifications, as `POST /v2/analytics.getVerifications` would with
 * a root key holding only `api.<apiId>.read_analytics`. A refused query is its error in the API's terms; an
 * outage or a not-found API is the dashboard's error page, as anywhere else.
 */
export async function runQuery(ctx: PageContext, apiId: string): Promise<QueryRun> {
  const value = ctx.form.query;
  const query = (Array.isArray(value) ? value[0] : value) ?? '';
  try {
    return { query, rows: await runApiAnalyticsQuery(ctx.deps.store, ctx.caller, apiId, query) };
  } catch (err) {
    if (!(err instanceof AppError) || err.status === 404 || err.status >= 500) throw err;
    const kind = V2_KINDS[err.kind];
    return { query, error: { title: kind.title, detail: err.message, type: V2_ERROR_BASE + kind.type } };
  }
}

const cell = (value: unknown): Part =>
  value === null || value === undefined
    ? html`<span class="muted">NULL</span>`
    : typeof value === 'object'
      ? html`<code>${JSON.stringify(value)}</code>`
      : String(value);

function result(run: QueryRun): Html {
  if (run.error) {
    return html`<div class="error" role="alert" id="query-error"><p><strong>${run.error.title}</strong>: ${run.error.detail}</p><p><code>${run.error.type}</code></p></div>`;
  }
  const rows = run.rows ?? [];
  const columns = rows.length ? Object.keys(rows[0]) : [];
  const shown = rows.slice(0, ROWS_SHOWN).map((row) => columns.map((c) => cell(row[c])));
  const count =
    rows.length > ROWS_SHOWN
      ? `${rows.length} rows; the first ${ROWS_SHOWN} are shown.`
      : `${rows.length} ${rows.length === 1 ? 'row' : 'rows'}.`;
  return html`<p role="status">${count}</p>
${table('Query result', columns, shown, 'The query answered no rows.')}`;
}

/**
 * The query box of an API's Analytics page: one read-only SELECT in ClickHouse SQL, posted with the CSRF token
 * (a viewer may post it too: it changes nothing), and the last run's rows or error.
 */
export function queryBox(ctx: PageContext, action: string, range: UsageRange, run: QueryRun | undefined): Html {
  // The answer opens at the query box (#query): the page above it is as long as the summary.
  return html`<section id="query" aria-labelledby="query-title">
<h2 id="query-title">Query</h2>
<form method="post" action="${action}#query" class="panel query" aria-labelledby="query-title">
${csrfInput(ctx.csrf)}<input type="hidden" name="range" value="${range}">
<div class="field"><label for="f-query">SQL</label>
<textarea id="f-query" name="query" rows="7" spellcheck="false" aria-describedby="f-query-hint">${run?.query ?? DEFAULT_QUERY}</textarea>
<p class="hint" id="f-query-hint">One read-only SELECT in ClickHouse SQL over this API’s verifications: the tables <code>key_verifications_v1</code> and <code>key_verifications_per_{minute,hour,day,month}_v1</code>, answered as <code>POST /v2/analytics.getVerifications</code> answers it (docs/analytics.md).</p></div>
<div class="actions"><button type="submit">Run query</button></div>
</form>
${run ? result(run) : ''}
</section>`;
}
