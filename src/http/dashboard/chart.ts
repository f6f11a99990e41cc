import { html, type Html } from './html.ts';

export interface Series {
  name: string;
  /** A class of dashboard.css that colours it (`s-valid`, `s-denied`, …). */
  className: string;
  values: number[];
}

const WIDTH = 720;
const HEIGHT = 180;
const PAD = 24;

/**
 * A stacked bar chart drawn on the server (no script, nothing inline the CSP would refuse): one bar per
 * bucket, one colour per series, with an accessible name, a text summary and a legend. `labels` name the
 * buckets (their first and last are printed under the axis).
 */
export function barChart(name: string, labels: string[], series: Series[]): Html {
  const totals = labels.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const slot = (WIDTH - PAD * 2) / Math.max(1, labels.length);
  const barWidth = Math.max(1, slot * 0.8);
  const bars = labels.map((label, i) => {
    let top = HEIGHT - PAD;
    const parts = series.map((s) => {
      const h = ((s.values[i] ?? 0) / max) * (HEIGHT - PAD * 2);
      top -= h;
      return h > 0
        ? html`<rect class="${s.className}" x="${(PAD + i * slot).toFixed(1)}" y="${top.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${h.toFixed(1)}"><title>${label}: ${s.name} ${s.values[i]}</title></rect>`
        : '';
    });
    return parts;
  });
  const sums = series.map((s) => `${s.name} ${s.values.reduce((a, b) => a + b, 0)}`).join(', ');
  const summary = labels.length ? `${labels[0]} to ${labels[labels.length - 1]}: ${sums}` : 'no data';
  return html`<figure class="chart">
<svg role="img" aria-label="${name}" aria-describedby="${slug(name)}-summary" viewBox="0 0 ${WIDTH} ${HEIGHT}" preserveAspectRatio="none">
<line class="axis" x1="${PAD}" y1="${HEIGHT - PAD}" x2="${WIDTH - PAD}" y2="${HEIGHT - PAD}"></line>
${bars}
<text class="axis-label" x="${PAD}" y="${HEIGHT - 6}">${labels[0] ?? ''}</text>
<text class="axis-label" x="${WIDTH - PAD}" y="${HEIGHT - 6}" text-anchor="end">${labels[labels.length - 1] ?? ''}</text>
<text class="axis-label" x="${PAD}" y="14">max ${max}</text>
</svg>
<figcaption id="${slug(name)}-summary">${summary}. <span class="legend">${series.map((s) => html`<span class="swatch ${s.className}"></span>${s.name} `)}</span></figcaption>
</figure>`;
}

const ROW = 24;
const LABEL_WIDTH = 230;

/**
 * A ranking drawn on the server (top keys, identities, tags): one horizontal bar per item in the order given, its
 * label before it and its value after it, with an accessible name and a text summary. The page shows the same
 * items in a table beside it.
 */
export function rankChart(name: string, items: Array<{ label: string; value: number }>): Html {
  const height = PAD + items.length * ROW;
  const max = Math.max(1, ...items.map((i) => i.value));
  const room = WIDTH - LABEL_WIDTH - PAD - 60;
  const bars = items.map((item, i) => {
    const y = PAD / 2 + i * ROW;
    const width = Math.max(1, (item.value / max) * room);
    const label = item.label.length > 30 ? `${item.label.slice(0, 29)}…` : item.label;
    return html`<text class="bar-label" x="${LABEL_WIDTH - 8}" y="${(y + ROW * 0.65).toFixed(1)}" text-anchor="end">${label}</text>
<rect class="s-rank" x="${LABEL_WIDTH}" y="${(y + ROW * 0.15).toFixed(1)}" width="${width.toFixed(1)}" height="${(ROW * 0.7).toFixed(1)}"><title>${item.label}: ${item.value}</title></rect>
<text class="bar-value" x="${(LABEL_WIDTH + width + 6).toFixed(1)}" y="${(y + ROW * 0.65).toFixed(1)}">${item.value}</text>`;
  });
  const summary = items.length ? items.map((i) => `${i.label} ${i.value}`).join(', ') : 'no data';
  return html`<figure class="chart rank">
<svg role="img" aria-label="${name}" aria-describedby="${slug(name)}-summary" viewBox="0 0 ${WIDTH} ${height}">
${bars}
</svg>
<figcaption id="${slug(name)}-summary">${summary}.</figcaption>
</figure>`;
}

const slug = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]+/g, '-');
