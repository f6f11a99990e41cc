import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import { builtinsOnlyWorker } from '../../src/store/dialects/builtins-worker.ts';

const dir = mkdtempSync(join(tmpdir(), 'builtins-worker-'));
const moduleFile = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return pathToFileURL(path);
};

test('a TypeScript worker importing node: builtins runs as JavaScript, with its workerData', async () => {
  const url = moduleFile(
    'typed.ts',
    `import { parentPort, workerData } from 'node:worker_threads';
import type { Worker } from 'node:worker_threads';
interface Job { n: number }
const { n } = workerData as Job;
const twice = (x: number): number => x * 2;
parentPort!.postMessage({ answer: twice(n), typed: typeof (undefined as unknown as Worker) });`,
  );
  const worker = builtinsOnlyWorker(url, { workerData: { n: 21 } });
  const [message] = await once(worker, 'message');
  assert.deepEqual(message, { answer: 42, typed: 'undefined' });
  await worker.terminate();
});

test('a worker module importing anything but node: builtins is refused, naming the import', () => {
  const relative = moduleFile('relative.ts', `import { x } from './other.ts';\nconsole.log(x);`);
  assert.throws(
    () => builtinsOnlyWorker(relative, {}),
    /imports \.\/other\.ts: a worker started as JavaScript imports node: builtins only/,
  );
  const bare = moduleFile('bare.ts', `import {\n  sql,\n} from 'kysely';\nconsole.log(sql);`);
  assert.throws(() => builtinsOnlyWorker(bare, {}), /imports kysely/);
});
