// The measured runs of `npm run bench` (bench/run.ts) under autocannon's repeated request: every case once per round,
// each run followed by a run of the Fastify baseline (B C₁ B C₂ B … per round), the server's CPU time over each run, and a
// check after each run that the case still answers correctly.

import { loadavg } from 'node:os';
import { BASELINE, type StoreKind } from './cases.ts';
import { checkCase, type Prepared } from './prepare.ts';
import { fmt, summarize, summarizeBaseline, type CaseSummary, type RunResult } from './report.ts';
import { processCpuSeconds, sleep } from './processes.ts';
import { autocannon, type Server } from './server.ts';

const LIMIT_EXTRA_WARMUP = 2;

export interface MeasureSettings {
  duration: number;
  rounds: number;
  connections: number;
  pipelining: number;
  warmup: number;
}

/** Load before a measured run, not measured; fails on any error response. */
async function warmUp(server: Server, p: Prepared, label: string, settings: MeasureSettings): Promise<void> {
  // The limit server is a fresh process: its first seconds of load are JIT warm-up, and every ratio divides by it.
  const seconds = p.kase.limit ? settings.warmup + LIMIT_EXTRA_WARMUP : settings.warmup;
  const warm = await autocannon(server, p.load, seconds, settings);
  if (warm.non2xx || warm.errors || warm.timeouts) {
    throw new Error(
      `warm-up of "${label}" had ${warm.non2xx} non-2xx responses, ${warm.errors} errors, ${warm.timeouts} timeouts:\n${server.output.slice(-10).join('\n')}`,
    );
  }
}

/** One measured run of a case: autocannon's numbers and the server's CPU time over it. */
async function measure(
  real: Server,
  store: StoreKind,
  p: Prepared,
  label: string,
  warm: boolean,
  settings: MeasureSettings,
): Promise<RunResult> {
  const server = p.server ?? real; // the limit's load goes to the limit server, and its CPU time is the limit's
  if (warm && settings.warmup > 0) await warmUp(server, p, label, settings);
  const cpuBefore = await processCpuSeconds(server.child.pid);
  const r = await autocannon(server, p.load, settings.duration, settings);
  const cpuAfter = await processCpuSeconds(server.child.pid);
  if (server.child.exitCode !== null || server.child.signalCode !== null) {
    throw new Error(
      `the server died during "${label}" (${server.child.exitCode ?? server.child.signalCode}):\n${server.output.slice(-10).join('\n')}`,
    );
  }
  const perRequest = (seconds: number) => Math.round((seconds * 1e6 * 10) / r.requests.total) / 10;
  const cpu =
    cpuBefore && cpuAfter && r.requests.total > 0
      ? { user: perRequest(cpuAfter.user - cpuBefore.user), system: perRequest(cpuAfter.system - cpuBefore.system) }
      : undefined;
  const load1 = loadavg()[0];
  const checkedAfterRun =
    p.kase === BASELINE
      ? undefined
      : await checkCase(real, p, 1, 1).then(
          () => true,
          () => false,
        );
  const result: RunResult = {
    store,
    case: p.kase.id,
    label: p.kase.label,
    requestsPerSec: r.requests.average,
    latencyP50Ms: r.latency.p50,
    latencyP99Ms: r.latency.p99,
    latencyMeanMs: r.latency.mean,
    totalRequests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    serverCpuUsPerRequest: cpu && cpu.user + cpu.system,
    serverCpuUsPerRequestUserSystem: cpu,
    load1,
    checkedAfterRun,
  };
  console.log(runLine(label, result));
  await sleep(100); // let the sockets of the run close before the next one
  return result;
}

function runLine(label: string, r: RunResult): string {
  const cpu = r.serverCpuUsPerRequestUserSystem;
  return (
    `   ${label.padEnd(44)} ${fmt(r.requestsPerSec, 0).padStart(8)} req/s  p50 ${r.latencyP50Ms} ms  p99 ${r.latencyP99Ms} ms` +
    (r.non2xx ? `  non-2xx ${r.non2xx}` : '') +
    (cpu === undefined
      ? ''
      : `  server CPU ${fmt(cpu.user + cpu.system, 0)} µs/req (user ${fmt(cpu.user, 0)}, sys ${fmt(cpu.system, 0)})`) +
    `  (load avg ${fmt(r.load1, 1)})`
  );
}

/**
 * Round by round, every case once per round, each run followed by a baseline run (B C₁ B C₂ B … per round): a run is
 * compared with the mean of the two baseline runs around it. Cases compared with each other (v2 with v1) sit next to
 * each other in every round, so a drift of the machine over the run touches both alike.
 */
export async function measureCases(
  server: Server,
  store: StoreKind,
  prepared: Prepared[],
  settings: MeasureSettings,
): Promise<{ runs: RunResult[]; summaries: CaseSummary[] }> {
  const runs: RunResult[] = [];
  const [baseline, ...measured] = prepared;
  const rounds = new Map<Prepared, RunResult[]>(measured.map((p) => [p, []]));
  let before = await measure(server, store, baseline, BASELINE.label, true, settings);
  runs.push(before);
  for (let round = 1; round <= settings.rounds; round++) {
    for (const p of measured) {
      const r = await measure(server, store, p, `${p.kase.label} #${round}`, round === 1, settings);
      const after = await measure(server, store, baseline, BASELINE.label, false, settings);
      r.round = round;
      r.baselineRequestsPerSec = (before.requestsPerSec + after.requestsPerSec) / 2;
      r.ratio = r.requestsPerSec / r.baselineRequestsPerSec;
      rounds.get(p)!.push(r);
      runs.push(r, after);
      before = after;
    }
  }
  const summaries = measured.map((p) => summarize(store, p.kase, rounds.get(p)!));
  summaries.unshift(summarizeBaseline(store, runs));
  return { runs, summaries };
}
