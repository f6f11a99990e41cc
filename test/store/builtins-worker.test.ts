import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import { builtinsOnlyWorker } from '../../src/store/dialects/builtins-worker.ts';

const dir = mkdtempSync(join(tmpdir(), 'builtins-worker-'));
after(() => rmSync(dir, { recursive: true, force: true }));
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
  const reexport = moduleFile('reexport.ts', `export { x } from '../shared.ts';`);
  assert.throws(() => builtinsOnlyWorker(reexport, {}), /imports \.\.\/shared\.ts/);
  const effect = moduleFile('effect.ts', `import './setup.ts';`);
  assert.throws(() => builtinsOnlyWorker(effect, {}), /imports \.\/setup\.ts/);
  const dynamic = moduleFile('dynamic.ts', `const m = await import('./later.ts');\nconsole.log(m);`);
  assert.throws(() => builtinsOnlyWorker(dynamic, {}), /imports \.\/later\.ts/);
});

test("a worker's error names its file and line, and import.meta is not taken for an import", async () => {
  const url = moduleFile(
    'throws.ts',
    `const where: string = import.meta.url;\nconst x: number = 1;\nthrow new Error(\`from \${where.slice(0, 5)} \${x}\`);`,
  );
  const worker = builtinsOnlyWorker(url, {});
  const [err] = (await once(worker, 'error')) as [Error];
  assert.match(err.message, /^from data: 1$/);
  assert.match(err.stack ?? '', new RegExp(`${url.pathname.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:7`));
  assert.doesNotMatch(err.stack ?? '', /data:text/);
});
