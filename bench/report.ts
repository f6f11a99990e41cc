// What `npm run bench` (bench/run.ts) records and prints: each run, each case's summary over its rounds and
// its ratios to the two references (the limit and the Fastify baseline), the rows of the results table (the
// many-key cases add theirs, bench/many-keys.ts) and the verification lane's gain over Fastify's route.

import {
  BASELINE,
  LANE_CASE_ID,
  LIMIT,
  ROUTE_CASE_ID,
  V2_PAIRS,
  type AnsweredBy,
  type Case,
  type StoreKind,
  type Target,
} from './cases.ts';

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
  /** The median of the rounds' ratios (to the baseline). */
  ratio: number;
  ratios: number[];
  /** Each round's server CPU µs per request, in round order (absent when not measured). */
  cpus?: number[];
  /** ratio over the limit's ratio (relateToLimit). */
  ratioToLimit?: number;
  /** serverCpuUsPerRequest over the limit's (relateToLimit). */
  cpuRatioToLimit?: number;
  target?: Target;
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
    ratio: median(ratios),
    ratios,
    cpus: cpu === undefined ? undefined : rounds.map((r) => r.serverCpuUsPerRequest!),
    target: kase.target?.[store],
    non2xx: rounds.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0),
  };
}

/** The baseline over all its runs on the store (its ratio to itself is 1). */
export function summarizeBaseline(store: StoreKind, runs: RunResult[]): CaseSummary {
  const baseline = runs.filter((r) => r.case === BASELINE.id);
  const summary = summarize(
    store,
    BASELINE,
    baseline.map((r) => ({ ...r, ratio: 1, baselineRequestsPerSec: r.requestsPerSec })),
  );
  return summary;
}

/** Sets each summary's ratios to the limit of its store (case ratio / limit ratio, both to the baseline) and whether it met its target. */
export function relateToLimit(summaries: CaseSummary[]): void {
  for (const s of summaries) {
    const limit = summaries.find((l) => l.case === LIMIT.id && l.store === s.store);
    if (limit) {
      s.ratioToLimit = s.ratio / limit.ratio;
      if (s.serverCpuUsPerRequest !== undefined && limit.serverCpuUsPerRequest)
        s.cpuRatioToLimit = s.serverCpuUsPerRequest / limit.serverCpuUsPerRequest;
    }
    const ratio = s.target?.of === 'limit' ? s.ratioToLimit : s.ratio;
    s.met = s.target === undefined || ratio === undefined ? undefined : ratio >= s.target.min;
  }
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

/**
 * Per store and V2_PAIRS pair where both were measured: v2's keys.verifyKey over v1's of the same kind of key, as
 * the median over the rounds of the two runs of one round (next to each other in time), for throughput (each run's
 * ratio to its baseline) and server CPU; and whether the throughput ratio meets the pair's least.
 */
export function v2VsV1(
  summaries: CaseSummary[],
): Array<{ store: StoreKind; v2: string; v1: string; throughput: number; cpu?: number; v2Cpu?: number; v1Cpu?: number; min: number }> {
  const perRound = (a: number[], b: number[]) => median(a.slice(0, b.length).map((x, i) => x / b[i]));
  return V2_PAIRS.flatMap((pair) =>
    summaries
      .filter((s) => s.case === pair.v2)
      .flatMap((v2) => {
        const v1 = summaries.find((s) => s.case === pair.v1 && s.store === v2.store);
        if (!v1) return [];
        const [v2Cpu, v1Cpu] = [v2.serverCpuUsPerRequest, v1.serverCpuUsPerRequest];
        const cpu = v2.cpus && v1.cpus ? perRound(v2.cpus, v1.cpus) : undefined;
        return [
          { store: v2.store, v2: pair.v2, v1: pair.v1, throughput: perRound(v2.ratios, v1.ratios), cpu, v2Cpu, v1Cpu, min: pair.min },
        ];
      }),
  );
}

/** The root-key cache of a store's server over its whole run (/metrics after the last case). */
export interface RootKeyCacheRate {
  store: StoreKind;
  lookups: number;
  hitRate: number;
}
