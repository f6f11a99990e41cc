import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { groups } from './run.ts';
import { REPO_ROOT } from './helpers/repo.ts';

describe('npm test (test/run.ts)', () => {
  test('every test file is in exactly one group: test/system, test/dashboard (browser) and the others', () => {
    const all = groups([], '');
    assert.deepEqual(
      all.map((g) => [g.name, g.concurrency]),
      [
        ['other', 3],
        ['system', 1],
        ['browser', 1],
      ],
    );
    const files = all.flatMap((g) => g.files);
    assert.equal(new Set(files).size, files.length);
    assert.ok(files.includes('test/test-runner.test.ts'));
    assert.ok(all[1].files.every((f) => f.startsWith('test/system/')) && all[1].files.length > 5);
    assert.ok(all[2].files.every((f) => f.startsWith('test/dashboard/')) && all[2].files.length > 5);
    assert.ok(all[0].files.every((f) => f.endsWith('.test.ts') && !/^test\/(system|dashboard)\//.test(f)));
  });

  test('KEYHOLD_TEST_CONCURRENCY sets bounds per group, or 1 runs every file one at a time; anything else is refused', () => {
    assert.deepEqual(
      groups([], 'system=2, browser=3').map((g) => g.concurrency),
      [3, 2, 3],
    );
    const serial = groups([], '1');
    assert.equal(serial.length, 1);
    assert.equal(serial[0].concurrency, 1);
    assert.equal(serial[0].files.length, groups([], '').flatMap((g) => g.files).length);
    for (const bad of ['0', 'other=0', 'others=2', 'system=two', 'system']) {
      assert.throws(() => groups([], bad), /KEYHOLD_TEST_CONCURRENCY must be 1 or like other=3,system=1,browser=1/, bad);
    }
  });

  test('files given as arguments run in their groups', () => {
    assert.deepEqual(groups(['test/system/start.test.ts', 'test/docs.test.ts', 'test/config.test.ts'], ''), [
      { name: 'other', files: ['test/config.test.ts', 'test/docs.test.ts'], concurrency: 3 },
      { name: 'system', files: ['test/system/start.test.ts'], concurrency: 1 },
    ]);
  });

  describe('a run', () => {
    let dir: string;
    let answer: { code: number; stdout: string };
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'keyhold-runner-'));
      writeFileSync(join(dir, 'passes.test.ts'), "import { test } from 'node:test';\ntest('passes', () => {});\ntest('also', () => {});\n");
      writeFileSync(join(dir, 'fails.test.ts'), "import { test } from 'node:test';\ntest('fails', () => { throw new Error('no'); });\n");
      answer = await new Promise((resolve) =>
        execFile(
          process.execPath,
          ['--disable-warning=ExperimentalWarning', join(REPO_ROOT, 'test/run.ts'), 'passes.test.ts', 'fails.test.ts'],
          // Not as a child of this test run: node's runner reports to its parent in a test process (NODE_TEST_CONTEXT).
          { cwd: dir, env: { ...process.env, NODE_TEST_CONTEXT: undefined } },
          (err, stdout) => resolve({ code: err ? Number(err.code) : 0, stdout }),
        ),
      );
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    test("reports node's summary, the slowest files, and closes with `N passed, N failed`; a failure exits 1", () => {
      assert.equal(answer.code, 1);
      const lines = answer.stdout.trimEnd().split('\n');
      assert.equal(lines.at(-1), '2 passed, 1 failed');
      for (const line of ['ℹ tests 3', 'ℹ pass 2', 'ℹ fail 1', 'ℹ slowest test files (wall time):']) assert.ok(lines.includes(line), line);
      assert.ok(lines.some((l) => /^ℹ +\d+\.\d s {2}fails\.test\.ts \(other\)$/.test(l)));
      assert.ok(lines.some((l) => /^ℹ +\d+\.\d s {2}passes\.test\.ts \(other\)$/.test(l)));
      assert.ok(lines.some((l) => l.startsWith('✖ fails')));
    });

    test('reports every test of every file, and names each failure again at the end', () => {
      // A file's process can end (test:complete) before its tests' events are parsed: they are still reported.
      for (const name of ['passes', 'also']) assert.ok(answer.stdout.includes(`✔ ${name} (`), name);
      const failing = answer.stdout.indexOf('✖ failing tests:');
      assert.ok(failing > 0, 'a failing tests section');
      assert.match(answer.stdout.slice(failing), /✖ fails \(.*\n\s+Error: no/);
    });
  });
});
