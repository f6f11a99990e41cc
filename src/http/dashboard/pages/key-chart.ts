import type { KeyVerificationBucket } from '../../../services/analytics/key-verifications.ts';
import { DAY_MS, floorTo } from '../../../services/analytics/hourly-sums.ts';
import type { PageContext } from '../context.ts';
import { barChart } from '../chart.ts';
import { formError, table } from '../components.ts';
import { html, type Html } from '../html.ts';

export type Range = '24h' | '30d';

const RANGES: Record<Range, { label: string; granularity: 'hour' | 'day'; step: number; buckets: number }> = {
  '24h': { label: 'Last 24 hours', granularity: 'hour', step: DAY_MS / 24, buckets: 24 },
  '30d': { label: 'Last 30 days', granularity: 'day', step: DAY_MS, buckets: 30 },
};

/** The outcomes a verification of a key can have, [member of the bucket, name shown]. */
const OUTCOMES: Array<[Exclude<keyof KeyVerificationBucket, 'time' | 'total'>, string]> = [
  ['success', 'Valid'],
  ['rateLimited', 'Rate limited'],
  ['usageExceeded', 'Usage exceeded'],
  ['forbidden', 'Forbidden'],
  ['disabled', 'Disabled'],
  ['insufficientPermissions', 'Insufficient permissions'],
  ['expired', 'Expired'],
];

const bucketLabel = (t: number, granularity: 'hour' | 'day'): string =>
  granularity === 'hour' ? `${new Date(t).toISOString().slice(0, 13).replace('T', ' ')}:00 UTC` : new Date(t).toISOString().slice(0, 10);

/**
 * The key's verifications over the range (keys.getVerifications, as the API answers it): valid ones and the
 * rest, per hour or day, every bucket drawn (the operation lists only those with verifications), with a
 * table of the totals per outcome.
 */
export async function verificationsSection(ctx: PageContext, keyId: string, path: string, range: Range): Promise<Html> {
  const r = RANGES[range];
  const now = Date.now();
  const first = floorTo(now, r.granularity) - (r.buckets - 1) * r.step;
  const outcome = await ctx.perform<{ verifications: KeyVerificationBucket[] }>('GET', 'keys.getVerifications', {
    keyId,
    start: first,
    end: now,
    granularity: r.granularity,
  });
  const buckets = outcome.ok ? outcome.data.verifications : [];
  const byTime = new Map(buckets.map((b) => [b.time, b]));
  const times = Array.from({ length: r.buckets }, (_, i) => first + i * r.step);
  const valid = times.map((t) => byTime.get(t)?.success ?? 0);
  const denied = times.map((t) => {
    const b = byTime.get(t);
    return b ? b.total - b.success : 0;
  });
  const totals = OUTCOMES.map(([member, name]) => [name, buckets.reduce((sum, b) => sum + b[member], 0)]);
  const links = (Object.keys(RANGES) as Range[]).map((id) =>
    id === range
      ? html`<a href="${path}?range=${id}" aria-current="true">${RANGES[id].label}</a>`
      : html`<a href="${path}?range=${id}">${RANGES[id].label}</a>`,
  );
  return html`<section aria-labelledby="verifications-title">
<h2 id="verifications-title">Verifications, ${r.label.toLowerCase()}</h2>
<nav class="pager" aria-label="Range">${links}</nav>
${outcome.ok ? '' : formError(outcome.error, [])}
${barChart(
  'Verifications',
  times.map((t) => bucketLabel(t, r.granularity)),
  [
    { name: 'valid', className: 's-valid', values: valid },
    { name: 'denied', className: 's-denied', values: denied },
  ],
)}
${table('Verifications by outcome', ['Outcome', 'Verifications'], totals, '')}
<p class="hint">Counts are written within a second or so of the verification.</p>
</section>`;
}
