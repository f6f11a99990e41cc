import { getRatelimitAnalytics } from '../../../services/analytics/ratelimit-analytics.ts';
import type { PageContext } from '../context.ts';
import { barChart } from '../chart.ts';
import { html, type Html } from '../html.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The chart's windows: the last 24 hours by hour (default), or `?range=30d`, the last 30 days by day (UTC). */
const RANGES = {
  '24h': { label: 'Last 24 hours', groupBy: 'hour' as const, size: HOUR, buckets: 24 },
  '30d': { label: 'Last 30 days', groupBy: 'day' as const, size: DAY, buckets: 30 },
};
type Range = keyof typeof RANGES;

export const rangeOf = (value: string | undefined): Range => (value === '30d' ? '30d' : '24h');

/** A bucket's name under the chart: `YYYY-MM-DD HH:00 UTC` for hours, `YYYY-MM-DD` for days. */
const bucketLabel = (t: number, range: Range): string => {
  const iso = new Date(t).toISOString();
  return range === '24h' ? `${iso.slice(0, 10)} ${iso.slice(11, 13)}:00 UTC` : iso.slice(0, 10);
};

/**
 * Passed and denied ratelimits.limit decisions of the namespace (ratelimits.getAnalytics' service, as the
 * session), one bar per bucket of the window, empty buckets included; links switch the window.
 */
export async function ratelimitChart(ctx: PageContext, namespaceId: string, path: string, range: Range): Promise<Html> {
  const r = RANGES[range];
  const now = Date.now();
  const first = Math.floor(now / r.size) * r.size - (r.buckets - 1) * r.size;
  const { analytics } = await getRatelimitAnalytics(
    ctx.deps.store.db,
    ctx.caller,
    { namespaceId, start: first, end: now, groupBy: r.groupBy },
    now,
  );
  const byTime = new Map(analytics.map((a) => [a.time, a]));
  const times = Array.from({ length: r.buckets }, (_, i) => first + i * r.size);
  const chart = barChart(
    'Rate limits',
    times.map((t) => bucketLabel(t, range)),
    [
      { name: 'passed', className: 's-valid', values: times.map((t) => byTime.get(t)?.passed ?? 0) },
      { name: 'denied', className: 's-denied', values: times.map((t) => byTime.get(t)?.denied ?? 0) },
    ],
  );
  const link = (key: Range) =>
    html`<a href="${key === '24h' ? path : `${path}?range=${key}`}"${key === range ? html` aria-current="true"` : ''}>${RANGES[key].label}</a>`;
  return html`<h2 id="chart-title">Passed and denied, ${r.label.toLowerCase()}</h2>
<nav class="pager" aria-label="Chart range">${link('24h')}${link('30d')}</nav>
${chart}`;
}
