import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { clusterWorld } from './cluster-world.ts';
import type { ModelWorld } from './model-world.ts';
import { describeFailure, runSequences, savedRegressions } from './sequences.ts';
import { clusterVariant } from './variants.ts';

/**
 * The two-node variant of the model-based test (test/model/cluster-commands.ts): random steps sent to one of two
 * apps sharing one store (one PostgreSQL schema, or one SQLite file opened twice), checking that credits are
 * never over-spent and a revoked key is refused by both nodes from 1 s after its revocation. KEYHOLD_MODEL_CLUSTER_RUNS
 * sequences per dialect (default 20); `npm run fuzz:model` runs more and saves failures in test/model/regressions/,
 * which are replayed here.
 */

const RUNS = Number(process.env.KEYHOLD_MODEL_CLUSTER_RUNS ?? 20);
const SEED = Number(process.env.KEYHOLD_MODEL_SEED ?? 424242);

for (const dialect of DIALECTS) {
  describe(`key model, two nodes on one store (${dialect})`, () => {
    let mw: ModelWorld;
    before(async () => {
      mw = await clusterWorld(dialect);
    });
    after(() => mw.close());

    test(`${RUNS} random sequences over two nodes: credits never over-spent, revocations reach both nodes within 1 s`, async (t) => {
      const run = await runSequences(mw, clusterVariant, { numRuns: RUNS, seed: SEED });
      t.diagnostic(
        `${run.sequences} sequences, ${run.requests} requests in ${(run.ms / 1000).toFixed(1)} s; verifications ${JSON.stringify(mw.codes)}`,
      );
      if (run.failure) assert.fail(describeFailure(run.failure));
    });

    for (const { file, regression } of savedRegressions('cluster'))
      test(`regression ${file}`, async () => {
        const run = await runSequences(mw, clusterVariant, { numRuns: 1, seed: regression.seed, replay: regression });
        if (run.failure) assert.fail(describeFailure(run.failure));
      });
  });
}
