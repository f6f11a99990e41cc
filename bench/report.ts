// What `npm run bench` (bench/run.ts) records and prints: each run, each case's summary over its rounds,
// the results table and the verification lane's gain over Fastify's route.

import { LANE_CASE_ID, ROUTE_CASE_ID, type AnsweredBy, type Case, type StoreKind } from './cases.ts';

export interface RunResult {
  store: StoreKind;
  case: string;
  label: string;
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMeanMs: number;
  totalRequests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU time the server process used per request during the run (µs; Linux only, from /proc). */
  serverCpuUsPerRequest?: number;
  /** The same, split into user (JavaScript, V8, libuv) and system (kernel: sockets, files) time. */
  serverCpuUsPerRequestUserSystem?: { user: number; system: number };
  /** 1-minute load average of the machine right after the run (2 of it are the server and the load generator). */
  load1: number;
  /** Measured cases (not the baseline): the round (1-based). */
  round?: number;
  /** Measured cases: the mean req/s of the baseline runs just before and just after this one. */
  baselineRequestsPerSec?: number;
  /** requests/s over baselineRequestsPerSec. */
  ratio?: number;
  /** A check request after the run still passed the case's check (VALID, or success: true); absent for the baseline. */
  checkedAfterRun?: boolean;
}

/** One case on one store over all its rounds: medians, and the spread of the rounds' ratios. */
export interface CaseSummary {
  store: StoreKind;
  case: string;
  label: string;
  /** Which code answered the case's requests (verify cases, checked before it was measured). */
  answeredBy?: AnsweredBy;
  rounds: number;
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  serverCpuUsPerRequest?: number;
  baselineRequestsPerSec: number;
  /** The median of the rounds' ratios. */
  ratio: number;
  ratios: number[];
  target?: number;
  met?: boolean;
  non2xx: number;
}

/** The lane's cached-key case over the same request through Fastify's route, on one store. */
export interface LaneVsRoute {
  store: StoreKind;
  /** Lane ratio to the baseline over the route's: how many times the route's throughput the lane gives. */
  throughput: number;
  laneRatio: number;
  routeRatio: number;
  laneCpuUsPerRequest?: number;
  routeCpuUsPerRequest?: number;
  /** Lane CPU per request over the route's. */
  cpu?: number;
}

export function fmt(n: number, digits: number): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export function summarize(store: StoreKind, kase: Case, rounds: RunResult[]): CaseSummary {
  const of = (pick: (r: RunResult) => number | undefined) => median(rounds.map(pick).filter((x): x is number => x !== undefined));
  const ratios = rounds.map((r) => r.ratio!);
  const target = kase.target?.[store];
  const ratio = median(ratios);
  const cpu = rounds.every((r) => r.serverCpuUsPerRequest !== undefined) ? of((r) => r.serverCpuUsPerRequest) : undefined;
  return {
    store,
    case: kase.id,
    label: kase.label,
    answeredBy: kase.answeredBy,
    rounds: rounds.length,
    requestsPerSec: of((r) => r.requestsPerSec),
    latencyP50Ms: of((r) => r.latencyP50Ms),
    latencyP99Ms: of((r) => r.latencyP99Ms),
    serverCpuUsPerRequest: cpu,
    baselineRequestsPerSec: of((r) => r.baselineRequestsPerSec),
    ratio,
    ratios,
    target,
    met: target === undefined ? undefined : ratio >= target,
    non2xx: rounds.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0),
  };
}

/** Per store where both were measured: the lane's cached-key case against the same request through Fastify's route. */
export function laneVsRoute(summaries: CaseSummary[]): LaneVsRoute[] {
  const result: LaneVsRoute[] = [];
  for (const lane of summaries.filter((s) => s.case === LANE_CASE_ID)) {
    const route = summaries.find((s) => s.case === ROUTE_CASE_ID && s.store === lane.store);
    if (!route) continue;
    const laneCpu = lane.serverCpuUsPerRequest;
    const routeCpu = route.serverCpuUsPerRequest;
    result.push({
      store: lane.store,
      throughput: lane.ratio / route.ratio,
      laneRatio: lane.ratio,
      routeRatio: route.ratio,
      laneCpuUsPerRequest: laneCpu,
      routeCpuUsPerRequest: routeCpu,
      cpu: laneCpu !== undefined && routeCpu ? laneCpu / routeCpu : undefined,
    });
  }
  return result;
}

function table(summaries: CaseSummary[]): string {
  const header = [
    'case',
    'store',
    'req/s',
    'p50 ms',
    'p99 ms',
    'non-2xx',
    'srv CPU µs/req',
    'baseline req/s',
    'ratio',
    "rounds' ratios",
    'target',
    'met',
  ];
  const rows = summaries.map((r) => [
    r.label,
    r.store,
    fmt(r.requestsPerSec, 0),
    String(r.latencyP50Ms),
    String(r.latencyP99Ms),
    String(r.non2xx),
    r.serverCpuUsPerRequest === undefined ? '' : fmt(r.serverCpuUsPerRequest, 0),
    fmt(r.baselineRequestsPerSec, 0),
    fmt(r.ratio, 3),
    r.ratios.map((x) => fmt(x, 2)).join(' '),
    r.target === undefined ? '-' : `>= ${fmt(r.target, 2)}`,
    r.met === undefined ? '-' : r.met ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const numeric = new Set([2, 3, 4, 5, 6, 7, 8]);
  const line = (cells: string[]) => cells.map((c, i) => (numeric.has(i) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function laneVsRouteLine(c: LaneVsRoute): string {
  const cpu =
    c.cpu === undefined
      ? ''
      : `; server CPU ${fmt(c.laneCpuUsPerRequest!, 0)} vs ${fmt(c.routeCpuUsPerRequest!, 0)} µs/req (lane/route ${fmt(c.cpu, 2)})`;
  return `Lane vs Fastify's route (${c.store}): ratio ${fmt(c.laneRatio, 3)} vs ${fmt(c.routeRatio, 3)}, lane/route ${fmt(c.throughput, 2)}${cpu}`;
}

/** Prints the results table, the lane's gain, the targets and any case that stopped verifying. */
export function printResults(
  settings: { connections: number; pipelining: number; rounds: number; duration: number },
  summaries: CaseSummary[],
  runs: RunResult[],
): void {
  console.log(
    `\nResults (${settings.connections} connections, pipelining ${settings.pipelining}, ${settings.rounds} rounds of ${settings.duration} s per case; a round's ratio = its req/s / the mean of the baseline runs just before and after it; ratio = the median of the rounds' ratios; req/s, latency, srv CPU (server process CPU time per request) and baseline req/s are medians over the rounds; latency resolution 1 ms)\n`,
  );
  console.log(table(summaries));
  const gains = laneVsRoute(summaries);
  if (gains.length) console.log('');
  for (const gain of gains) console.log(laneVsRouteLine(gain));
  const withTarget = summaries.filter((r) => r.met !== undefined);
  const missed = withTarget.filter((r) => !r.met);
  console.log(
    `\nTargets met: ${withTarget.length - missed.length} of ${withTarget.length}${missed.length ? ` (missed: ${missed.map((r) => `${r.label} on ${r.store}`).join('; ')})` : ''}`,
  );
  const invalid = runs.filter((r) => r.checkedAfterRun === false);
  if (invalid.length)
    console.log(`Warning: failed its check after its run: ${invalid.map((r) => `${r.label} #${r.round} on ${r.store}`).join('; ')}`);
}
