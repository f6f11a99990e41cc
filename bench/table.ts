// The results table of `npm run bench` (bench/run.ts), in markdown (printed, and written to bench/out/latest.md
// for docs/performance.md): one row per case and store, from the autocannon cases' summaries (report.ts) and the
// many-key cases' own rows (many-keys.ts).

import type { CaseSummary } from './report.ts';
import { fmt, laneVsRoute, v2VsV1, type RootKeyCacheRate } from './report.ts';

export interface Row {
  case: string;
  store: string;
  requestsPerSec?: number;
  ratioToLimit?: number;
  ratioToBaseline?: number;
  cpuUsPerRequest?: number;
  /** cpuUsPerRequest over the limit's. */
  cpuRatioToLimit?: number;
  /** The target, with the measured value where the row's numbers do not show it (e.g. "0.84 s (≤ 1.0 s)"). */
  target?: string;
  met?: boolean;
  /** More about the measurement, in the JSON only (e.g. a many-key pass: latencies, key-cache counts). */
  detail?: unknown;
}

/** The rows of the autocannon cases (the references first on each store). */
export function rowsOf(summaries: CaseSummary[]): Row[] {
  return summaries.map((s) => ({
    case: s.label,
    store: s.store,
    requestsPerSec: s.requestsPerSec,
    ratioToLimit: s.ratioToLimit,
    ratioToBaseline: s.ratio,
    cpuUsPerRequest: s.serverCpuUsPerRequest,
    cpuRatioToLimit: s.cpuRatioToLimit,
    target: s.target && `≥ ${fmt(s.target.min, 2)} of ${s.target.of === 'limit' ? 'limit' : 'baseline'}`,
    met: s.met,
  }));
}

const num = (n: number | undefined, digits: number) => (n === undefined || !Number.isFinite(n) ? '-' : fmt(n, digits));

function cells(r: Row): string[] {
  const cpu =
    r.cpuUsPerRequest === undefined
      ? '-'
      : `${fmt(r.cpuUsPerRequest, 0)}${r.cpuRatioToLimit === undefined ? '' : ` (${fmt(r.cpuRatioToLimit, 2)}× limit)`}`;
  return [
    r.case,
    r.store,
    num(r.requestsPerSec, 0),
    num(r.ratioToLimit, 2),
    num(r.ratioToBaseline, 2),
    cpu,
    r.target ?? '-',
    r.met === undefined ? '-' : r.met ? 'yes' : '**no**',
  ];
}

export function markdownTable(rows: Row[]): string {
  const header = ['case', 'store', 'req/s', 'ratio to limit', 'ratio to Fastify baseline', 'server CPU µs/req', 'target', 'met?'];
  const body = rows.map(cells);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const numeric = new Set([2, 3, 4, 5]);
  const line = (cs: string[]) => `| ${cs.map((c, i) => (numeric.has(i) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (numeric.has(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(header), rule, ...body.map(line)].join('\n');
}

/** Lines under the table: the lane's gain over Fastify's route, and how many targets were met. */
export function notes(summaries: CaseSummary[], rows: Row[], rootKeyCacheRates: RootKeyCacheRate[] = []): string[] {
  const lines = laneVsRoute(summaries).map(
    (c) =>
      `Lane vs Fastify's route (${c.store}): ${fmt(c.throughput, 2)}× the throughput` +
      (c.cpu === undefined
        ? ''
        : `, ${fmt(c.cpu, 2)}× the server CPU (${fmt(c.laneCpuUsPerRequest!, 0)} vs ${fmt(c.routeCpuUsPerRequest!, 0)} µs/req)`),
  );
  for (const c of v2VsV1(summaries))
    lines.push(
      `${c.v2} vs ${c.v1} (${c.store}): ${fmt(c.throughput, 2)}× the throughput (target ≥ ${c.min}: ${c.throughput >= c.min ? 'met' : 'missed'})` +
        (c.cpu === undefined ? '' : `, ${fmt(c.cpu, 2)}× the server CPU per request (${fmt(c.v2Cpu!, 0)} vs ${fmt(c.v1Cpu!, 0)} µs)`),
    );
  for (const r of rootKeyCacheRates)
    lines.push(
      `Root-key cache (${r.store}): ${fmt(100 * r.hitRate, 2)}% of ${fmt(r.lookups, 0)} authentications answered without a store read`,
    );
  const withTarget = rows.filter((r) => r.met !== undefined);
  const missed = withTarget.filter((r) => !r.met);
  lines.push(
    `Targets met: ${withTarget.length - missed.length} of ${withTarget.length}${missed.length ? ` (missed: ${missed.map((r) => `${r.case} on ${r.store}`).join('; ')})` : ''}`,
  );
  return lines;
}
