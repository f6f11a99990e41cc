// `npm run fuzz:model`: the long mode of the model-based tests (test/model/keys.test.ts and cluster.test.ts run
// the same properties, fewer times).
//
// For each dialect (SQLite; PostgreSQL too when KEYHOLD_TEST_POSTGRES_URL is set) and each variant (`keys`: one
// node, every answer compared with the model; `cluster`: two nodes on one store), it runs KEYHOLD_MODEL_RUNS
// random sequences on a fresh world, in batches of 500 (a fresh world each, so that what earlier batches created
// does not slow the next), printing each batch. A failure is shrunk by fast-check, printed with its seed and path,
// and saved in test/model/regressions/ (the CI tests replay every file there); the run exits 1.
//
// Settings (environment):
//   KEYHOLD_MODEL_RUNS      sequences per variant and dialect (default 10000; the cluster variant runs a tenth)
//   KEYHOLD_MODEL_SEED      the run's seed (default: the time; printed); batch i runs from seed + i
//   KEYHOLD_MODEL_PATH      with KEYHOLD_MODEL_SEED: replay one failure (fast-check's path) instead of a run
//   KEYHOLD_MODEL_VARIANTS  comma-separated subset of keys,cluster
//   KEYHOLD_MODEL_DIALECTS  comma-separated subset of the dialects (e.g. postgres)

import { DIALECTS } from '../helpers/harness.ts';
import { clusterWorld } from './cluster-world.ts';
import { modelWorld, type ModelWorld } from './model-world.ts';
import { describeFailure, runSequences, saveRegression, type Variant } from './sequences.ts';
import { clusterVariant, keysVariant } from './variants.ts';

const env = process.env;
const RUNS = Number(env.KEYHOLD_MODEL_RUNS ?? 10_000);
const SEED = Number(env.KEYHOLD_MODEL_SEED ?? Date.now() % 2 ** 31);
const PATH = env.KEYHOLD_MODEL_PATH;
const BATCH = 500;
const dialects = DIALECTS.filter((d) => !env.KEYHOLD_MODEL_DIALECTS || env.KEYHOLD_MODEL_DIALECTS.split(',').includes(d));
const variants = ([keysVariant, clusterVariant] as Variant<object>[]).filter(
  (v) => !env.KEYHOLD_MODEL_VARIANTS || env.KEYHOLD_MODEL_VARIANTS.split(',').includes(v.name),
);
if (!Number.isInteger(RUNS) || RUNS < 1 || !Number.isInteger(SEED)) {
  console.error('KEYHOLD_MODEL_RUNS must be a positive integer and KEYHOLD_MODEL_SEED an integer');
  process.exit(2);
}

console.log(
  `fuzz:model: ${RUNS} sequences per variant and dialect, seed ${SEED}, dialects ${dialects.join(', ')}${PATH ? `, replaying path ${PATH}` : ''}`,
);
const started = Date.now();
let failures = 0;
let current: ModelWorld | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    console.log(`\n${signal}: stopping`);
    void (current?.close() ?? Promise.resolve()).finally(() => process.exit(130));
  });

const totals: string[] = [];
for (const dialect of dialects)
  for (const v of variants) {
    const runs = v.name === 'cluster' ? Math.max(1, Math.round(RUNS / 10)) : RUNS;
    const t = { sequences: 0, requests: 0, ms: 0, failed: 0 };
    for (let batch = 0; t.sequences < runs && !(PATH && batch > 0); batch++) {
      current = v.name === 'cluster' ? await clusterWorld(dialect) : await modelWorld(dialect);
      const numRuns = Math.min(BATCH, runs - t.sequences);
      const seed = SEED + batch;
      const replay = PATH ? { variant: v.name, dialect, seed: SEED, path: PATH, counterexample: '', error: '' } : undefined;
      const run = await runSequences(current, v, { numRuns, seed, replay }).finally(() => current?.close());
      current = undefined;
      Object.assign(t, {
        sequences: t.sequences + (PATH ? run.sequences : numRuns),
        requests: t.requests + run.requests,
        ms: t.ms + run.ms,
      });
      console.log(
        `${dialect.padEnd(8)} ${v.name.padEnd(8)} batch ${batch} (seed ${seed}): ${run.sequences} sequences run, ${run.requests} requests, ${(run.ms / 1000).toFixed(1)} s${run.failure ? '  FAILED' : ''}`,
      );
      if (run.failure) {
        failures++;
        t.failed++;
        console.log(describeFailure(run.failure));
        if (!PATH) console.log(`  saved: ${saveRegression(run.failure)}`);
      }
    }
    totals.push(
      `  ${dialect.padEnd(8)} ${v.name.padEnd(8)} ${t.sequences} sequences, ${t.requests} requests, ${(t.ms / 1000).toFixed(1)} s, ${t.failed} failure(s)`,
    );
  }
console.log(
  `\ntotals (seed ${SEED}):\n${totals.join('\n')}\n  all in ${((Date.now() - started) / 1000).toFixed(1)} s; ${failures} failure(s)`,
);
process.exit(failures ? 1 : 0);
