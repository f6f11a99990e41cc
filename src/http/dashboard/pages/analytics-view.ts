import type { RecordedCode } from '../../../services/verification/verification-recorder.ts';
import { USAGE_RANGES, type UsageRange, type UsageSummary } from '../../../services/analytics/usage-summary.ts';
import { barChart, rankChart, type Series } from '../chart.ts';
import { table } from '../components.ts';
import { html, type Html, type Part } from '../html.ts';

const LABELS: Record<UsageRange, string> = { '1h': 'Last hour', '24h': 'Last 24 hours', '7d': 'Last 7 days', '30d': 'Last 30 days' };

/** Each recorded outcome: the name shown and the class of dashboard.css that colours it. */
const OUTCOMES: Array<[RecordedCode, string, string]> = [
  ['VALID', 'Valid', 's-valid'],
  ['RATE_LIMITED', 'Rate limited', 's-rate-limited'],
  ['USAGE_EXCEEDED', 'Usage exceeded', 's-usage-exceeded'],
  ['FORBIDDEN', 'Forbidden', 's-forbidden'],
  ['DISABLED', 'Disabled', 's-disabled'],
  ['INSUFFICIENT_PERMISSIONS', 'Insufficient permissions', 's-insufficient-permissions'],
  ['EXPIRED', 'Expired', 's-expired'],
];

/** A bucket's name: `YYYY-MM-DD HH:MM UTC` (minute), `YYYY-MM-DD HH:00 UTC` (hour), `YYYY-MM-DD` (day). */
function bucketLabel(t: number, grain: UsageSummary['grain']): string {
  const iso = new Date(t).toISOString();
  if (grain === 'day') return iso.slice(0, 10);
  return `${iso.slice(0, 10)} ${grain === 'hour' ? `${iso.slice(11, 13)}:00` : iso.slice(11, 16)} UTC`;
}

/** Which rankings a view shows: a key's page has no top keys, a key's or an identity's no top identities. */
export interface ViewOptions {
  /** The Analytics page's own address (range links add `?range=`). */
  path: string;
  keys: boolean;
  identities: boolean;
}

/**
 * The usage summary as a page section: the range links, the totals, verifications over time by outcome, the top
 * keys, identities and tags, and credits spent; every chart with a table of its data beside it.
 */
export function analyticsView(s: UsageSummary, options: ViewOptions): Html {
  const links = (Object.keys(USAGE_RANGES) as UsageRange[]).map(
    (id) => html`<a href="${options.path}?range=${id}"${id === s.range ? html` aria-current="true"` : ''}>${LABELS[id]}</a>`,
  );
  return html`<nav class="pager" aria-label="Range">${links}</nav>
<div class="counts" aria-label="Totals, ${LABELS[s.range].toLowerCase()}" role="group">
<div>Verifications<strong>${s.total}</strong></div>
<div>Valid<strong>${s.outcomes.VALID}</strong></div>
<div>Not valid<strong>${s.total - s.outcomes.VALID}</strong></div>
<div>Credits spent<strong>${s.spentCredits}</strong></div>
</div>
${overTime(s)}
${options.keys ? topKeys(s) : ''}
${options.identities ? topIdentities(s) : ''}
${topTags(s)}
${credits(s)}
<p class="hint">Counts are written within a second or so of the verification; times are UTC buckets of the per-${s.grain} roll-up.</p>`;
}

/** A section: a heading, then the chart and its table side by side (or `empty` when there is nothing to show). */
function section(id: string, title: string, body: Html | false, empty: string): Html {
  return html`<section aria-labelledby="${id}-title">
<h2 id="${id}-title">${title}</h2>
${body === false ? html`<p class="muted">${empty}</p>` : html`<div class="chart-pair">${body}</div>`}
</section>`;
}

/** A table in a scrollable region (long series), reachable with the keyboard. */
const scrolling = (caption: string, columns: string[], rows: Part[][]): Html =>
  html`<div class="scroll" tabindex="0" role="region" aria-label="${caption}">${table(caption, columns, rows, '')}</div>`;

function overTime(s: UsageSummary): Html {
  const shown = OUTCOMES.filter(([code]) => code === 'VALID' || s.outcomes[code] > 0);
  const labels = s.buckets.map((b) => bucketLabel(b.time, s.grain));
  const series: Series[] = shown.map(([code, name, className]) => ({
    name: name.toLowerCase(),
    className,
    values: s.buckets.map((b) => b.outcomes[code]),
  }));
  const rows = s.buckets.flatMap((b, i) => (b.total ? [[labels[i], ...shown.map(([code]) => b.outcomes[code]), b.total] as Part[]] : []));
  const body =
    s.total > 0 &&
    html`${barChart('Verifications over time', labels, series)}
${scrolling(`Verifications per ${s.grain}`, ['Time', ...shown.map(([, name]) => name), 'Total'], rows)}`;
  return section('over-time', `Verifications by outcome, ${LABELS[s.range].toLowerCase()}`, body, 'No verifications in this range.');
}

function topKeys(s: UsageSummary): Html {
  const label = (k: UsageSummary['topKeys'][number]) => k.name ?? (k.start ? `${k.start}…` : k.keyId);
  const rows = s.topKeys.map((k) => [
    k.live
      ? html`<a href="/dashboard/keys/${encodeURIComponent(k.keyId)}">${label(k)}</a>`
      : html`${label(k)} <span class="muted">(deleted)</span>`,
    k.count,
    k.valid,
    k.spentCredits,
  ]);
  const body =
    rows.length > 0 &&
    html`${rankChart(
      'Top keys',
      s.topKeys.map((k) => ({ label: label(k), value: k.count })),
    )}
${table('Top keys', ['Key', 'Verifications', 'Valid', 'Credits spent'], rows, '')}`;
  return section('top-keys', 'Top keys', body, 'No key was verified in this range.');
}

function topIdentities(s: UsageSummary): Html {
  const rows = s.topIdentities.map((i) => [
    i.live
      ? html`<a href="/dashboard/identities/${encodeURIComponent(i.identityId)}">${i.externalId}</a>`
      : html`${i.externalId} <span class="muted">(deleted)</span>`,
    i.count,
    i.valid,
    i.spentCredits,
  ]);
  const body =
    rows.length > 0 &&
    html`${rankChart(
      'Top identities',
      s.topIdentities.map((i) => ({ label: i.externalId, value: i.count })),
    )}
${table('Top identities', ['External ID', 'Verifications', 'Valid', 'Credits spent'], rows, '')}`;
  return section('top-identities', 'Top identities', body, 'No verification in this range was of a key with an identity.');
}

function topTags(s: UsageSummary): Html {
  const body =
    s.topTags.length > 0 &&
    html`${rankChart(
      'Top tags',
      s.topTags.map((t) => ({ label: t.tag, value: t.count })),
    )}
${table(
  'Top tags',
  ['Tag', 'Verifications'],
  s.topTags.map((t) => [html`<code>${t.tag}</code>`, t.count]),
  '',
)}`;
  return section('top-tags', 'Top tags', body, 'No verification in this range carried tags.');
}

function credits(s: UsageSummary): Html {
  const labels = s.buckets.map((b) => bucketLabel(b.time, s.grain));
  const rows = s.buckets.flatMap((b, i) => (b.spentCredits ? [[labels[i], b.spentCredits]] : []));
  const body =
    s.spentCredits > 0 &&
    html`${barChart('Credits spent over time', labels, [{ name: 'credits', className: 's-credits', values: s.buckets.map((b) => b.spentCredits) }])}
${scrolling(`Credits spent per ${s.grain}`, ['Time', 'Credits spent'], rows)}`;
  return section('credits', 'Credits spent', body, 'No credits were spent in this range.');
}
