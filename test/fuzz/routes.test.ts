import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { declaredRoutes } from '../helpers/routes.ts';
import { documentedOperations, FUZZ_WORLD, fuzzRoute, routeSeed, Target } from './target.ts';

/**
 * Property-based tests of every route (requests derived from the OpenAPI document: test/fuzz/requests.ts),
 * on every dialect: never a 5xx; every non-2xx is the error envelope with X-Request-Id; a rejected request
 * writes nothing; a 400 is at most 64 KiB. KEYHOLD_FUZZ_RUNS cases per route (default 200) from
 * KEYHOLD_FUZZ_SEED (default fixed); a failure prints the seed and path that replay it. `npm run fuzz` is
 * the long mode (test/fuzz/run.ts).
 */

const RUNS = Number(process.env.KEYHOLD_FUZZ_RUNS ?? 200);
const SEED = Number(process.env.KEYHOLD_FUZZ_SEED ?? 424242);

const ops = await documentedOperations();

test('every registered route is in the OpenAPI document, so it has a request generator', async () => {
  const w = await world('sqlite');
  try {
    const documented = new Set(ops.map((o) => `${o.method} ${o.path}`));
    const missing = declaredRoutes(w).filter((r) => r.method !== 'HEAD' && !documented.has(`${r.method} ${r.url}`));
    assert.deepEqual(missing, [], 'routes without a generator');
  } finally {
    await w.close();
  }
});

for (const dialect of DIALECTS) {
  describe(`fuzz: ${RUNS} requests per route (${dialect})`, () => {
    let w: World;
    let target: Target;
    before(async () => {
      w = await world(dialect, FUZZ_WORLD);
      target = await new Target(w).init();
    });
    after(() => w.close());

    for (const op of ops) {
      test(`${op.method} ${op.path}`, async () => {
        const seed = routeSeed(SEED, op.path);
        const run = await fuzzRoute(target, op, RUNS, seed);
        if (run.failure)
          assert.fail(
            `${run.failure}\nreplay: KEYHOLD_FUZZ_SEED=${SEED} KEYHOLD_FUZZ_RUNS=${RUNS} KEYHOLD_FUZZ_ROUTE=${op.path.slice(4)} npm run fuzz ` +
              `(route seed ${seed})`,
          );
        assert.equal(run.cases, RUNS);
      });
    }
  });
}
