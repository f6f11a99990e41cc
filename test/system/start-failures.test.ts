import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { finished } from 'node:stream/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoUrl } from '../helpers/repo.ts';
import { runCli } from '../helpers/cli.ts';
import { serverEnv, ServerProcess } from '../helpers/server-process.ts';
import { freePort } from '../helpers/processes.ts';
import { openStore } from '../../src/store/store.ts';
import { START_FAILURE_CASES, type StartFailureCase } from './start-failure-cases.ts';

/**
 * Every setting of the configuration table (docs/configuration.md), started with bad values (start-failure-cases.ts)
 * as a real server process: it ends within 5 s, with exit code 2 for an invalid value and 1 for a valid one that
 * cannot be used, and one line on stderr that names the setting, without a stack trace or a secret. A setting added
 * to the table without a case fails here.
 */

const EXIT_WITHIN_MS = 5_000;
/** A start that has not ended by then is killed (and fails). */
const KILLED_AFTER_MS = 20_000;
const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;

/** The variables of the configuration table in docs/configuration.md (not the test suite's own). */
function documentedSettings(): string[] {
  const section = readFileSync(repoUrl('docs/configuration.md'), 'utf8');
  return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]).filter((name) => !name.startsWith('KEYHOLD_TEST_'));
}

describe('start failures: every setting of the configuration table', () => {
  test('every documented setting has at least one bad value below, and every case is a documented setting', () => {
    const settings = documentedSettings();
    assert.ok(settings.length >= 15, `read ${settings.length} settings from docs/configuration.md`);
    const covered = new Set(START_FAILURE_CASES.map((c) => c.setting));
    assert.deepEqual(
      settings.filter((s) => !covered.has(s)),
      [],
      'add a case to test/system/start-failure-cases.ts',
    );
    assert.deepEqual(
      [...covered].filter((s) => !settings.includes(s)),
      [],
    );
  });

  test('the CLI (which reads DATABASE_URL): the two cases of issue 20 are one line naming it, exit 2 and 1', async () => {
    const badPort = await runCli({ DATABASE_URL: 'postgres://alice:secret@127.0.0.1:notaport/keyhold' }, ['db', 'migrate', '--json']);
    assert.equal(badPort.code, 2);
    assert.match(badPort.json.error.detail, /^DATABASE_URL must give the port as a number/);
    assert.equal(JSON.stringify(badPort).includes('secret'), false);
    const proc = await runCli({ DATABASE_URL: 'sqlite:/proc/nope/keyhold.db' }, ['db', 'migrate', '--json']);
    assert.equal(proc.code, 1);
    assert.equal(proc.json.error.kind, 'store/unusable');
    assert.match(proc.json.error.detail, /^DATABASE_URL: cannot use the SQLite database \/proc\/nope\/keyhold\.db \(ENOENT/);
  });

  describe('each bad value ends the start', { concurrency: 3 }, () => {
    for (const c of START_FAILURE_CASES) {
      const skip = c.needs === 'redis' && !REDIS_URL && 'KEYHOLD_TEST_REDIS_URL is not set';
      test(`${c.setting}: ${c.what} (exit ${c.code})`, { skip }, () => failedStart(c));
      if (c.alsoViaNpm) test(`${c.setting}: ${c.what}, through npm start (exit ${c.code})`, () => failedStart(c, { viaNpm: true }));
    }
  });
});

async function failedStart(c: StartFailureCase, opts: { viaNpm?: boolean } = {}): Promise<void> {
  const first = await startOnce(c, opts, (server, db) => assertOneLine(c, server, db));
  await assertExitedInTime(c, opts, first);
}

/** Exit code, one line naming the setting, no stack trace, no secret; nothing bootstrapped for a key file that failed. */
async function assertOneLine(c: StartFailureCase, server: ServerProcess, db: string): Promise<void> {
  assert.equal((await server.exited).code, c.code, server.output);
  const lines = server.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${server.stderr}`);
  assert.match(lines[0], /^keyhold cannot start: /);
  assert.ok(lines[0].includes(c.setting), `the line names ${c.setting}: ${lines[0]}`);
  if (c.line) assert.match(lines[0], c.line);
  assert.doesNotMatch(server.output, /^\s+at /m, 'no stack trace');
  assert.doesNotMatch(server.output, /kh_root_[1-9A-HJ-NP-Za-km-z]{22}/, 'no root key');
  for (const secret of c.secrets ?? []) assert.equal(server.output.includes(secret), false, `the output holds the secret ${secret}`);
  if (c.setting === 'KEYHOLD_BOOTSTRAP_KEY_FILE') await assertNothingBootstrapped(db);
}

/** Starts the case's server in a scratch directory of its own, waits for its exit and output, checks it; the time it took. */
async function startOnce(
  c: StartFailureCase,
  opts: { viaNpm?: boolean },
  check: (server: ServerProcess, db: string) => Promise<void> = async () => {},
): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-start-failure-'));
  const holder = c.busyPort ? await holdPort() : undefined;
  try {
    mkdirSync(join(dir, 'data'));
    const db = `sqlite:${join(dir, 'data', 'keyhold.db')}`;
    await c.setup?.(dir, db);
    const port = holder?.port ?? (await freePort());
    const started = Date.now();
    const server = new ServerProcess(serverEnv({ LOG_LEVEL: 'warn', PORT: String(port), DATABASE_URL: db, ...c.env(dir, db) }), opts);
    await server.exit(KILLED_AFTER_MS).catch((err: unknown) => {
      // `npm start` runs in a process group of its own, and killing npm leaves a hung server running: kill the group.
      if (opts.viaNpm) killGroup(server.proc.pid!);
      throw err;
    });
    const tookMs = Date.now() - started;
    await allOutput(server);
    await check(server, db);
    return tookMs;
  } finally {
    holder?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Within 5 s of the server's own work. Starting Node and loading the server's modules is not its work, and on a
 * machine busy with other work that alone can take seconds. So a start slower than 5 s is started again (twice at
 * most) right after a control start that fails at once (an invalid PORT), and passes if one attempt took at most
 * 5 s more than its control. A start that hangs (issue 20: a path under /proc) never exits: it is killed, and fails.
 */
async function assertExitedInTime(c: StartFailureCase, opts: { viaNpm?: boolean }, firstMs: number): Promise<void> {
  const attempts = [`${firstMs} ms`];
  if (firstMs <= EXIT_WITHIN_MS) return;
  for (let retry = 0; retry < 2; retry++) {
    const started = Date.now();
    const control = new ServerProcess(serverEnv({ PORT: 'not-a-port' }), opts);
    assert.equal((await control.exit(KILLED_AFTER_MS)).code, 2, control.output);
    const controlMs = Date.now() - started;
    const tookMs = await startOnce(c, opts);
    if (tookMs <= EXIT_WITHIN_MS + controlMs) return;
    attempts.push(`${tookMs} ms (a start that fails at once: ${controlMs} ms)`);
  }
  assert.fail(`exited after ${attempts.join(', then ')}`);
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Resolves once the process' output is all read: when it has exited, the pipes may still hold some. */
async function allOutput(server: ServerProcess): Promise<void> {
  await Promise.all([server.proc.stdout!, server.proc.stderr!].map((s) => finished(s).catch(() => {})));
}

/** A socket listening on a free port of 127.0.0.1 (where the server listens by default). */
async function holdPort(): Promise<{ port: number; close(): void }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

/** A failed hand-over of the bootstrap key leaves no workspace and no root key: the next start bootstraps. */
async function assertNothingBootstrapped(db: string): Promise<void> {
  const store = openStore(db);
  try {
    assert.deepEqual(await store.db.selectFrom('workspaces').select('id').execute(), []);
    assert.deepEqual(await store.db.selectFrom('root_keys').select('id').execute(), []);
    assert.deepEqual(await store.db.selectFrom('settings').select('name').where('name', '=', 'bootstrap').execute(), []);
  } finally {
    await store.close();
  }
}
