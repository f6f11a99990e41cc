import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDirectory } from '../../src/store/make-directory.ts';

// `mkdir -p` without Node's recursive mkdir, which spins forever under /proc (issue 20).

test('makes a directory and its missing parents; one that exists is left as it is', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-mkdir-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  makeDirectory(join(dir, 'a', 'b', 'c'));
  assert.ok(statSync(join(dir, 'a', 'b', 'c')).isDirectory());
  makeDirectory(join(dir, 'a', 'b', 'c'));
  makeDirectory(join(dir, 'a'));
  assert.ok(statSync(join(dir, 'a', 'b', 'c')).isDirectory());
});

test('a file on the way, or the path itself a file, is ENOTDIR', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-mkdir-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'file'), '');
  assert.throws(() => makeDirectory(join(dir, 'file', 'sub')), { code: 'ENOTDIR' });
  assert.throws(() => makeDirectory(join(dir, 'file')), { code: 'ENOTDIR' });
});

test('a directory that refuses children with ENOENT (/proc) fails at once instead of looping', () => {
  assert.throws(() => makeDirectory('/proc/keyhold-nope/data'), { code: 'ENOENT' });
  assert.throws(() => makeDirectory('/proc/keyhold-nope'), { code: 'ENOENT' });
});
