// `npm run fuzz`: the long mode of the fuzz properties (test/fuzz/routes.test.ts runs the same ones, fewer).
//
// For each dialect (SQLite; PostgreSQL too when KEYHOLD_TEST_POSTGRES_URL is set) and each route of the OpenAPI
// document, it seeds a workspace in a fresh database and sends KEYHOLD_FUZZ_RUNS requests (default 10,000),
// checking the properties of test/fuzz/target.ts after each one. It prints each route's count, time and
// statuses as it goes, every failure with the seed that replays it, and the totals; it exits 1 when a
// property failed.
//
// Settings (environment):
//   KEYHOLD_FUZZ_RUNS   requests per route and dialect (default 10000)
//   KEYHOLD_FUZZ_SEED   the run's seed (default 424242, as the test); each route's seed is derived from it and its path
//   KEYHOLD_FUZZ_ROUTE  only the routes whose path contains this text (e.g. keys.createKey)
//   KEYHOLD_FUZZ_DIALECTS  comma-separated subset of the dialects (e.g. postgres)

import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { documentedOperations, FUZZ_WORLD, fuzzRoute, routeSeed, Target, type RouteRun } from './target.ts';

const RUNS = Number(process.env.KEYHOLD_FUZZ_RUNS ?? 10_000);
const SEED = Number(process.env.KEYHOLD_FUZZ_SEED ?? 424242);
const ONLY = process.env.KEYHOLD_FUZZ_ROUTE;
const dialects = DIALECTS.filter((d) => !process.env.KEYHOLD_FUZZ_DIALECTS || process.env.KEYHOLD_FUZZ_DIALECTS.split(',').includes(d));
if (!Number.isInteger(RUNS) || RUNS < 1 || !Number.isInteger(SEED)) {
  console.error('KEYHOLD_FUZZ_RUNS must be a positive integer and KEYHOLD_FUZZ_SEED an integer');
  process.exit(2);
}

console.log(
  `fuzz: ${RUNS} requests per route and dialect, seed ${SEED}, dialects ${dialects.join(', ')}${ONLY ? `, routes *${ONLY}*` : ''}`,
);
const failures: string[] = [];
const totals: Record<string, { cases: number; routes: number; ms: number }> = {};
const started = Date.now();
// Stopped (Ctrl-C), it removes the scratch database of the route it was running.
let current: World | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    console.log(`\n${signal}: stopping`);
    void (current?.close() ?? Promise.resolve()).finally(() => process.exit(130));
  });

// Every route runs on a fresh, freshly seeded world: what earlier routes created does not slow the counts.
const ops = (await documentedOperations()).filter((op) => !ONLY || op.path.includes(ONLY));
for (const dialect of dialects) {
  const total = { cases: 0, routes: 0, ms: 0 };
  totals[dialect] = total;
  for (const op of ops) {
    const t0 = Date.now();
    const seed = routeSeed(SEED, op.path);
    const w = await world(dialect, FUZZ_WORLD);
    current = w;
    let run: RouteRun;
    try {
      run = await fuzzRoute(await new Target(w).init(), op, RUNS, seed);
    } finally {
      current = undefined;
      await w.close();
    }
    const ms = Date.now() - t0;
    total.cases += run.cases;
    total.routes++;
    total.ms += ms;
    const statuses = Object.entries(run.statuses)
      .map(([s, n]) => `${s}:${n}`)
      .join(' ');
    console.log(
      `${dialect.padEnd(8)} ${`${op.method} ${op.path}`.padEnd(42)} ${String(run.cases).padStart(6)} cases ${(ms / 1000).toFixed(1).padStart(6)} s  ${statuses}${run.failure ? '  FAILED' : ''}`,
    );
    if (run.failure) {
      const replay = `KEYHOLD_FUZZ_SEED=${SEED} KEYHOLD_FUZZ_RUNS=${RUNS} KEYHOLD_FUZZ_ROUTE=${op.path.slice(4)} KEYHOLD_FUZZ_DIALECTS=${dialect} npm run fuzz`;
      failures.push(`[${dialect}] ${op.method} ${op.path} (route seed ${seed}; replay: ${replay})\n${run.failure}`);
      console.log(failures.at(-1));
    }
  }
}

console.log('\ntotals:');
for (const [dialect, t] of Object.entries(totals))
  console.log(
    `  ${dialect.padEnd(8)} ${t.routes} routes, ${t.cases} cases, ${(t.ms / 1000).toFixed(1)} s (${(t.cases / (t.ms / 1000)).toFixed(0)} cases/s)`,
  );
const all = Object.values(totals).reduce((n, t) => n + t.cases, 0);
console.log(`  all      ${all} cases in ${((Date.now() - started) / 1000).toFixed(1)} s; ${failures.length} failing route(s)`);
process.exit(failures.length ? 1 : 0);
