// What OpenTelemetry traces cost a verification (not run by `npm run bench`):
//
//   node --disable-warning=ExperimentalWarning bench/tracing-overhead.ts [--seconds 10] [--rounds 3] [--api v2|v1]
//        [--connections 50] [--baseline NAME=DIR ...] [--cpu-prof-dir DIR] [--ratios 0.01,1.0]
//
// Three servers (src/main.ts, each on its own SQLite file, one cached key without credits) differ only in their
// traces: `off` (no OTLP endpoint: no OpenTelemetry module loaded), `ratio 0.01`
// (OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=0.01) and `ratio 1.0` (every request
// traced), the last two exporting over OTLP/HTTP (protobuf, the default) to a receiver in this process that
// accepts and discards. Each round loads each server in turn for `--seconds` (autocannon in its own process,
// bench/load-worker.ts) with keys.verifyKey (`--api v2`: v2's, with the root key; `v1`: v1's), and reports req/s
// and the server's CPU µs per request; at the end each traced case over `off` as the median of the rounds' own
// ratios (the three runs of a round are neighbours in time). Target (issue 33): ratio 0.01 at least 0.95 of off;
// ratio 1.0 is reported. `--ratios 0,0.01` compares other ratios (0: the SDK started, nothing sampled).
// `--baseline NAME=DIR` (repeatable) adds a case: a server started from the source tree DIR (a checkout of an
// earlier commit, e.g. from before traces existed, with node_modules), with traces off, to show what the code of
// traces costs when off (target: off at least 0.99 of it). Reported over `off` too.
// `--traced-baseline NAME=DIR` (repeatable): a server from DIR traced at the first `--ratios` ratio, reported
// over `off` as the traced cases are (an earlier commit's tracing against this one's, in one run).
// `--cpu-prof-dir DIR`: each server writes a CPU profile (node --cpu-prof) into DIR/<case>-<round> when it stops.
//
// Each round starts every case's server anew (and warms it for 1 s): two processes of the very same server
// differ by up to 16% in req/s on this machine (measured with `--baseline same=.`: 0.84–0.99 in four runs), a
// difference that lasts as long as the process, so one process per case would measure the processes, not the
// traces. `--same-processes` keeps one server per case for every round (the old way; a profile covers all rounds).

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VERIFY_PATH, VERIFY_V2_PATH } from './cases.ts';
import { addCleanup, processCpuTotalSeconds, runStandalone, stopChild } from './processes.ts';
import { scratchStore } from './scratch-store.ts';
import { autocannon, call, startServer, type Load, type Server } from './server.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    api: { type: 'string', default: 'v2' },
    connections: { type: 'string', default: '50' },
    baseline: { type: 'string', multiple: true, default: [] },
    'cpu-prof-dir': { type: 'string' },
    'same-processes': { type: 'boolean', default: false },
    ratios: { type: 'string', default: '0.01,1.0' },
    'traced-baseline': { type: 'string', multiple: true, default: [] },
  },
});
const SECONDS = Math.max(1, Number(args.seconds));
const ROUNDS = Math.max(1, Number(args.rounds));
const CONNECTIONS = Math.max(1, Number(args.connections));
const SAME_PROCESSES = args['same-processes'];
if (args.api !== 'v1' && args.api !== 'v2') throw new Error('--api is v1 or v2');
const V2 = args.api === 'v2';

/** `off`, then a traced case per `--ratios` sampling ratio (`ratio 0.01`, `ratio 1.0` by default). */
const TRACED = ['off', ...args.ratios.split(',').map((r) => `ratio ${r.trim()}`)];
/** NAME=DIR options: name → source tree. */
const trees = (option: string, values: string[]) =>
  new Map(
    values.map((b) => {
      const [name, dir] = b.split('=');
      if (!name || !dir) throw new Error(`--${option} is NAME=DIR (got ${b})`);
      return [name, dir] as const;
    }),
  );
/** `--baseline` cases (traces off) and `--traced-baseline` cases (traced at the first `--ratios` ratio). */
const BASELINES = trees('baseline', args.baseline);
const TRACED_BASELINES = trees('traced-baseline', args['traced-baseline']);
const CASES: string[] = [...TRACED, ...BASELINES.keys(), ...TRACED_BASELINES.keys()];
type CaseName = string;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The server's environment for a case: the endpoint blank when off (whatever this process' environment says). */
function tracingEnv(name: CaseName, endpoint: string): Record<string, string> {
  if (name === 'off' || BASELINES.has(name)) return { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' };
  const ratio = TRACED_BASELINES.has(name) ? TRACED[1].slice('ratio '.length) : name.slice('ratio '.length);
  return { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: ratio };
}

/** A server of the case with one key, and the verification load on it (checked VALID once, so the key is cached). */
async function serverFor(name: CaseName, endpoint: string, round: number): Promise<{ server: Server; load: Load }> {
  const { url, cleanup } = scratchStore('sqlite');
  addCleanup(cleanup);
  const cpuProfDir = args['cpu-prof-dir'] && join(args['cpu-prof-dir'], `${name.replace(/[^a-z0-9.-]+/gi, '-')}-${round}`);
  const server = await startServer(url, {
    env: tracingEnv(name, endpoint),
    root: BASELINES.get(name) ?? TRACED_BASELINES.get(name),
    cpuProfDir,
  });
  const admin = (path: string, body: unknown) =>
    call(server, { method: 'POST', path, body: JSON.stringify(body), rootKey: server.rootKey, contentType: 'application/json' });
  const { json: api } = await admin('/v1/apis.createApi', { name: 'bench-tracing' });
  const { json: made } = await admin('/v1/keys.createKey', { apiId: api.apiId });
  const load: Load = V2
    ? { method: 'POST', path: VERIFY_V2_PATH, body: JSON.stringify({ key: made.key }), rootKey: server.rootKey }
    : { method: 'POST', path: VERIFY_PATH, body: JSON.stringify({ apiId: api.apiId, key: made.key }) };
  const check = await call(server, load);
  const valid = V2 ? check.json?.data?.valid : check.json?.valid;
  if (valid !== true) throw new Error(`setup (${name}): ${check.status} ${JSON.stringify(check.json)}`);
  return { server, load };
}

runStandalone(async () => {
  let exported = 0;
  const receiver = createServer((req, res) => {
    exported++;
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  addCleanup(() => new Promise<void>((r) => receiver.close(() => r())));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  let servers = new Map<CaseName, { server: Server; load: Load }>();
  const start = async (round: number) => {
    servers = new Map();
    for (const name of CASES) servers.set(name, await serverFor(name, endpoint, round));
  };
  // A graceful stop, so that --cpu-prof writes each server's profile.
  const stop = () => Promise.all([...servers.values()].map(({ server }) => stopChild(server.child)));
  const rates = new Map<CaseName, number[]>(CASES.map((c) => [c, []]));
  const cpu = new Map<CaseName, number[]>(CASES.map((c) => [c, []]));
  const loads: number[] = [];
  if (SAME_PROCESSES) await start(1);
  for (let round = 1; round <= ROUNDS; round++) {
    if (!SAME_PROCESSES) {
      await start(round);
      // Fresh processes: each warmed up (JIT) before it is measured.
      for (const { server, load } of servers.values()) await autocannon(server, load, 1, { connections: CONNECTIONS, pipelining: 1 });
    }
    for (const name of CASES) {
      const { server, load } = servers.get(name)!;
      const before = await processCpuTotalSeconds(server.child.pid);
      const r = await autocannon(server, load, SECONDS, { connections: CONNECTIONS, pipelining: 1 });
      if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      const perRequest = (((await processCpuTotalSeconds(server.child.pid)) - before) * 1e6) / (r.requests.average * SECONDS);
      rates.get(name)!.push(r.requests.average);
      cpu.get(name)!.push(perRequest);
      loads.push(loadavg()[0]);
      console.log(
        `round ${round} ${name.padEnd(10)} ${Math.round(r.requests.average)} req/s (p99 ${r.latency.p99} ms, server CPU ${Math.round(perRequest)} µs/request)`,
      );
    }
    if (!SAME_PROCESSES) await stop();
  }
  if (SAME_PROCESSES) await stop();

  const off = rates.get('off')!;
  const offCpu = cpu.get('off')!;
  console.log(`\n${V2 ? 'v2' : 'v1'} keys.verifyKey, cached key, SQLite, ${CONNECTIONS} connections, ${ROUNDS} round(s) of ${SECONDS} s:`);
  for (const name of CASES) {
    // A traced case over off; off over a baseline (what the code of traces costs when off).
    const baseline = BASELINES.has(name);
    const ratios = rates.get(name)!.map((rate, i) => (baseline ? off[i] / rate : rate / off[i]));
    const cpuRatios = cpu.get(name)!.map((us, i) => (baseline ? us / offCpu[i] : offCpu[i] / us));
    const label = baseline ? `off over ${name}` : 'over off';
    console.log(
      `  ${name.padEnd(10)} median ${Math.round(median(rates.get(name)!))} req/s, server CPU ${Math.round(median(cpu.get(name)!))} µs/request` +
        (name === 'off'
          ? ''
          : `; ${label}: ${median(ratios).toFixed(3)} by req/s (rounds ${ratios.map((x) => x.toFixed(3)).join(', ')}), ` +
            `${median(cpuRatios).toFixed(3)} by CPU µs/request`),
    );
  }
  console.log(`  exports received: ${exported}; load average ${Math.min(...loads).toFixed(1)}..${Math.max(...loads).toFixed(1)}`);
});
