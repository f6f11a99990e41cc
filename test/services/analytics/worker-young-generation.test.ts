import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// V8's --max-semi-space-size applies to every isolate of the process and wins over a worker's resourceLimits;
// withOwnYoungGeneration gives the analytics writer thread the young generation it asks for. Run in a process
// started with the server's flag, as `npm start` starts it.

const helper = fileURLToPath(new URL('../../../src/services/analytics/worker-young-generation.ts', import.meta.url));

/** new_space's size (MB) after churning young objects: in the main thread, and in a worker limited to 4 MB. */
const script = `
import { Worker } from 'node:worker_threads';
import v8 from 'node:v8';
import { withOwnYoungGeneration } from ${JSON.stringify(helper)};
const CHURN = "const a = []; for (let i = 0; i < 2e6; i++) { a.push({ i }); if (a.length > 1e5) a.length = 0 }";
const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
const code = "const v8 = process.getBuiltinModule('node:v8'); " + CHURN +
  "; process.getBuiltinModule('node:worker_threads').parentPort.postMessage((" + newSpace + ")())";
const inWorker = async (own) => {
  const make = () => new Worker(code, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
  const w = own ? withOwnYoungGeneration(make) : make();
  const mb = await new Promise((resolve) => w.once('message', resolve));
  await w.terminate();
  return mb;
};
const plain = await inWorker(false);
const own = await inWorker(true);
new Function(CHURN)();
console.log(JSON.stringify({ plain, own, main: newSpace() }));
`;

test('the writer thread gets its own young generation; the server keeps its 8 MB semi-spaces', () => {
  const out = execFileSync(
    process.execPath,
    ['--max-semi-space-size=8', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
    {
      encoding: 'utf8',
    },
  );
  const { plain, own, main } = JSON.parse(out) as { plain: number; own: number; main: number };
  assert.equal(plain, 16, 'without it, the flag wins over the worker limits (two 8 MB semi-spaces)');
  assert.ok(own <= 4, `the worker's new space is within its 4 MB limit, got ${own} MB`);
  assert.equal(main, 16, "the main thread's young generation is untouched");
});
