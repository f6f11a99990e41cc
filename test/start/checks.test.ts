import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkDataDirectory, listenProblem, oneLine, StartError, storeProblem } from '../../src/start/checks.ts';

// The one-line messages of start failures; test/system/start.test.ts starts real processes with each bad setting.

const errno = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('start checks', () => {
  test('each listen failure names HOST or PORT and the fix', () => {
    assert.match(listenProblem(errno('EADDRINUSE'), '0.0.0.0', 80), /^PORT 80 on HOST 0\.0\.0\.0 is already in use: .*set PORT/);
    assert.match(listenProblem(errno('EACCES'), '0.0.0.0', 80), /^PORT 80 .* needs privileges.*set PORT to 1024 or above/);
    assert.match(listenProblem(errno('EADDRNOTAVAIL'), '10.9.9.9', 8080), /^HOST 10\.9\.9\.9 is not an address of this machine: set HOST/);
    assert.match(listenProblem(errno('ENOTFOUND'), 'nope', 8080), /^HOST "nope" does not resolve/);
    assert.match(listenProblem(errno('EWHATEVER'), 'h', 1), /check HOST and PORT/);
  });

  test('store failures name DATABASE_URL and never its password, even when a message quotes it', () => {
    const url = 'postgres://app:p%40ss-w0rd@db.internal:6543/keyhold?schema=k';
    const lines = [
      storeProblem(errno('28P01', 'password authentication failed for user "app"'), url),
      storeProblem(errno('3D000', 'database "keyhold" does not exist'), url),
      storeProblem(errno('42501', 'permission denied for database keyhold'), url),
      storeProblem(errno('ECONNREFUSED'), url),
      storeProblem(new Error('something odd about postgres://app:p@ss-w0rd@db.internal'), url),
    ];
    assert.match(lines[0], /^DATABASE_URL: PostgreSQL at db\.internal:6543 refused user "app" .*fix the user or password/);
    assert.match(
      lines[1],
      /^DATABASE_URL: database "keyhold" does not exist on PostgreSQL at db\.internal:6543: create it \(createdb keyhold\)/,
    );
    assert.match(lines[2], /^DATABASE_URL: user "app" may not create/);
    assert.match(lines[3], /^DATABASE_URL: cannot reach PostgreSQL at db\.internal:6543 \(ECONNREFUSED\): start it/);
    assert.match(lines[4], /^DATABASE_URL: PostgreSQL at db\.internal:6543 failed at start/);
    for (const line of lines) {
      assert.equal(line.includes('p@ss-w0rd'), false, line);
      assert.equal(line.includes('\n'), false, 'one line');
    }
    assert.match(
      storeProblem(errno('ERR', 'unable to open database file'), 'sqlite:/x/y.db'),
      /^DATABASE_URL: cannot use the SQLite database \/x\/y\.db/,
    );
  });

  test('a writable data directory is created and left as it was; an unwritable one is a StartError', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'keyhold-checks-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    checkDataDirectory(join(dir, 'data'));
    assert.deepEqual(readdirSync(join(dir, 'data')), [], 'the probe file is removed');
    writeFileSync(join(dir, 'file'), '');
    assert.throws(
      () => checkDataDirectory(join(dir, 'file', 'data')),
      (err: Error) =>
        err instanceof StartError &&
        /^DATABASE_URL: the SQLite data directory .* cannot be created or written \(ENOTDIR\)/.test(err.message),
    );
  });

  test('an unforeseen error is one line: its name, its first message line and where it was thrown, no stack', () => {
    const err = new TypeError('cannot read things\nsecond line');
    const line = oneLine(err);
    assert.match(line, /^unexpected error \(please report it\): TypeError: cannot read things \(at .*start\/checks\.test\.ts:\d+:\d+\)$/);
    assert.equal(line.includes('\n'), false);
    assert.match(oneLine('a string'), /^unexpected error \(please report it\): Error: a string$/);
  });
});
