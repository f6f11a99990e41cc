import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { keysVariant } from './variants.ts';
import { describeFailure, runSequences, savedRegressions } from './sequences.ts';
import { modelWorld, type ModelWorld } from './model-world.ts';

/**
 * Model-based test of the key state machine: random sequences of v1 and v2 operations on keys (create,
 * verify, credits, enable/disable, permissions and roles, reroll, delete, get), each answer compared with the
 * in-memory model of test/model/key-model.ts, on every dialect. KEYHOLD_MODEL_RUNS sequences per dialect
 * (default 100) from KEYHOLD_MODEL_SEED; `npm run fuzz:model` is the long mode (test/model/run.ts), and the
 * failures it saves in test/model/regressions/ are replayed here.
 */

const RUNS = Number(process.env.KEYHOLD_MODEL_RUNS ?? 100);
const SEED = Number(process.env.KEYHOLD_MODEL_SEED ?? 424242);

for (const dialect of DIALECTS) {
  describe(`key model (${dialect})`, () => {
    let mw: ModelWorld;
    before(async () => {
      mw = await modelWorld(dialect);
    });
    after(() => mw.close());

    test(`${RUNS} random sequences of v1 and v2 key operations agree with the model`, async (t) => {
      const run = await runSequences(mw, keysVariant, { numRuns: RUNS, seed: SEED });
      t.diagnostic(
        `${run.sequences} sequences, ${run.requests} requests in ${(run.ms / 1000).toFixed(1)} s; verifications ${JSON.stringify(mw.codes)}`,
      );
      if (run.failure) assert.fail(describeFailure(run.failure));
    });

    for (const { file, regression } of savedRegressions('keys'))
      test(`regression ${file}`, async () => {
        const run = await runSequences(mw, keysVariant, { numRuns: 1, seed: regression.seed, replay: regression });
        if (run.failure) assert.fail(describeFailure(run.failure));
      });
  });
}
