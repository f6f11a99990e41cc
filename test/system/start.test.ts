import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/store.ts';
import { newRootKey, serverEnv, ServerProcess } from '../helpers/server-process.ts';
import { freePort } from '../helpers/processes.ts';

/**
 * The server process' start (src/main.ts, and `npm start`): every start failure is one line on stderr naming
 * the setting and the fix, exit code 1, before anything is created; the bootstrap root key never reaches the
 * log stream; SIGTERM during the start ends it at once; `npm start` stops entirely on SIGTERM or SIGINT sent to npm alone.
 */

const PG_URL = process.env.KEYHOLD_TEST_POSTGRES_URL;
const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;

/** A temp dir for one test's data, removed after the test; `db` is the SQLite URL of a database in `data/` inside it (not created). */
function scratch(t: TestContext): { dir: string; dataDir: string; db: string } {
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-start-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  return { dir, dataDir, db: `sqlite:${join(dataDir, 'keyhold.db')}` };
}

/** Starts a server that must fail: exit 1, one line on stderr naming `setting`, no stack trace, no root key anywhere. */
async function failedStart(vars: Record<string, string>, setting: RegExp): Promise<ServerProcess> {
  const server = new ServerProcess(serverEnv({ LOG_LEVEL: 'warn', PORT: String(await freePort()), ...vars }));
  const { code } = await server.exit();
  assert.equal(code, 1, server.output);
  const lines = server.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line, got:\n${server.stderr}`);
  assert.match(lines[0], /^keyhold cannot start: /);
  assert.match(lines[0], setting);
  assert.doesNotMatch(server.output, /\n\s+at |kh_root_|bootstrap/i, 'no stack trace, no root key, no bootstrap');
  return server;
}

describe('a start that cannot go on: one line naming the setting, exit 1, nothing created', { concurrency: 3 }, () => {
  test('PORT already in use', async (t) => {
    const s = scratch(t);
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const server = await failedStart({ HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: s.db }, new RegExp(`PORT ${port}.*in use`));
      assert.match(server.stderr, /set PORT \(or HOST\)/);
      assert.equal(existsSync(s.dataDir), false, 'not even the data directory was created');
    } finally {
      holder.close();
    }
  });

  test('HOST that is not an address of this machine (a name that does not resolve: test/start/checks.test.ts)', async (t) => {
    const s = scratch(t);
    await failedStart({ HOST: '192.0.2.1', DATABASE_URL: s.db }, /HOST 192\.0\.2\.1 is not an address of this machine/);
    assert.equal(existsSync(s.dataDir), false);
  });

  test('SQLite data directory that cannot be written', async (t) => {
    const s = scratch(t);
    writeFileSync(join(s.dir, 'file'), ''); // a directory inside a file cannot be made, even by root
    await failedStart(
      { DATABASE_URL: `sqlite:${join(s.dir, 'file', 'data', 'keyhold.db')}` },
      /DATABASE_URL: the SQLite data directory .* cannot be created or written \(ENOTDIR\)/,
    );
  });

  test('PostgreSQL unreachable: DATABASE_URL named, its password never printed', async () => {
    const server = await failedStart(
      { DATABASE_URL: 'postgres://keyhold:s3cret-Pa55@127.0.0.1:1/keyhold' },
      /DATABASE_URL: cannot reach PostgreSQL at 127\.0\.0\.1:1 \(ECONNREFUSED\)/,
    );
    assert.doesNotMatch(server.output, /s3cret-Pa55/);
  });

  test('PostgreSQL with a wrong user or a wrong database', { skip: !PG_URL && 'KEYHOLD_TEST_POSTGRES_URL is not set' }, async () => {
    const wrongUser = new URL(PG_URL!);
    wrongUser.username = 'keyhold_no_such_user';
    wrongUser.password = 'hunter2-secret';
    const user = await failedStart(
      { DATABASE_URL: wrongUser.toString() },
      /DATABASE_URL: PostgreSQL at .* refused user "keyhold_no_such_user"/,
    );
    assert.doesNotMatch(user.output, /hunter2-secret/);
    const wrongDb = new URL(PG_URL!);
    wrongDb.pathname = '/keyhold_no_such_db';
    await failedStart(
      { DATABASE_URL: wrongDb.toString() },
      /DATABASE_URL: database "keyhold_no_such_db" does not exist .*\(createdb keyhold_no_such_db\)/,
    );
  });

  test('Redis that refuses the connection (wrong password): nothing bootstrapped', {
    skip: !REDIS_URL && 'KEYHOLD_TEST_REDIS_URL is not set',
  }, async (t) => {
    const s = scratch(t);
    const refused = new URL(REDIS_URL!);
    refused.username = 'keyhold_no_such_user';
    refused.password = 'redis-secret';
    const server = await failedStart(
      { DATABASE_URL: s.db, REDIS_URL: refused.toString() },
      /REDIS_URL: Redis at .* refused the connection \(WRONGPASS/,
    );
    assert.doesNotMatch(server.output, /redis-secret/);
    const store = openStore(s.db);
    try {
      assert.deepEqual(await store.db.selectFrom('workspaces').select('id').execute(), [], 'no workspace was bootstrapped');
      assert.deepEqual(await store.db.selectFrom('root_keys').select('id').execute(), [], 'no root key was created');
    } finally {
      await store.close();
    }
    assert.equal(existsSync(join(s.dataDir, 'bootstrap-root-key')), false);
  });

  test('an invalid REDIS_URL is a configuration error (exit 2) that names it', async () => {
    const server = new ServerProcess(serverEnv({ REDIS_URL: 'redis://[bad' }));
    assert.equal((await server.exit()).code, 2);
    assert.match(server.stderr, /^keyhold cannot start: REDIS_URL must be a valid URL/);
  });
});

describe('start', { concurrency: 2 }, () => {
  test('Redis unreachable at start: one warning naming REDIS_URL, and the server starts', async (t) => {
    const s = scratch(t);
    const server = new ServerProcess(serverEnv({ PORT: String(await freePort()), DATABASE_URL: s.db, REDIS_URL: 'redis://127.0.0.1:1' }));
    await server.waitFor(/keyhold listening/);
    assert.match(server.stdout, /REDIS_URL: cannot reach Redis at 127\.0\.0\.1:1 \(ECONNREFUSED\); starting without it/);
    server.proc.kill('SIGTERM');
    await server.exit();
  });

  test('a generated bootstrap key goes to a 0600 file beside the database, never to the logs', async (t) => {
    const s = scratch(t);
    const port = await freePort();
    const server = new ServerProcess(serverEnv({ PORT: String(port), DATABASE_URL: s.db, LOG_LEVEL: 'debug' }));
    await server.waitFor(/keyhold listening/);
    const file = join(s.dataDir, 'bootstrap-root-key');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const rootKey = readFileSync(file, 'utf8').trim();
    assert.match(rootKey, /^kh_root_/);
    const res = await server.post('/v1/apis.createApi', { name: 'from-the-file' }, rootKey);
    assert.equal(res.status, 200, 'the key in the file is the * root key');
    server.proc.kill('SIGTERM');
    assert.equal((await server.exit()).code, 0);
    assert.ok(server.stdout.includes(file), 'the log says where the key is');
    assert.equal(server.output.includes(rootKey), false, 'the key itself is in no log line');
    assert.equal(server.output.includes(rootKey.slice(8, 20)), false);
  });

  test('KEYHOLD_BOOTSTRAP_ROOT_KEY is never printed (access log on) and no key file is written', async (t) => {
    const s = scratch(t);
    const port = await freePort();
    const rootKey = newRootKey();
    const server = new ServerProcess(
      serverEnv({
        PORT: String(port),
        DATABASE_URL: s.db,
        LOG_LEVEL: 'debug',
        KEYHOLD_ACCESS_LOG: 'true',
        KEYHOLD_BOOTSTRAP_ROOT_KEY: rootKey,
      }),
    );
    await server.waitFor(/keyhold listening/);
    assert.equal((await server.get('/v1/apis.getApi', { apiId: 'api_nothing' }, rootKey)).status, 404);
    await server.waitFor(/"route":"\/v1\/apis.getApi"/);
    server.proc.kill('SIGTERM');
    await server.exit();
    assert.equal(server.output.includes(rootKey.slice(8)), false);
    assert.equal(existsSync(join(s.dataDir, 'bootstrap-root-key')), false);
  });

  test('SIGTERM during the start ends it at once with 143 (also as PID 1, in a container); the next start completes', async (t) => {
    const s = scratch(t);
    const env = serverEnv({ PORT: String(await freePort()), DATABASE_URL: s.db, KEYHOLD_BOOTSTRAP_ROOT_KEY: newRootKey() });
    const first = new ServerProcess(env);
    await first.waitFor(/schema migrations applied/);
    first.proc.kill('SIGTERM');
    const { code, signal } = await first.exit(5_000);
    // Exit 143 from the start's handler, or 0 when the graceful stop was registered first: never killed by the signal.
    assert.equal(signal, null, first.output);
    assert.ok(code === 143 || (code === 0 && /shutting down/.test(first.stdout)), `exit ${code}:\n${first.output}`);
    const second = new ServerProcess(env);
    await second.waitFor(/keyhold listening/);
    second.proc.kill('SIGTERM');
    assert.equal((await second.exit()).code, 0, second.output);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`npm start leaves no process behind on ${signal} sent to npm alone`, async (t) => {
      const s = scratch(t);
      const port = await freePort();
      const npm = new ServerProcess(serverEnv({ PORT: String(port), DATABASE_URL: s.db, KEYHOLD_BOOTSTRAP_ROOT_KEY: newRootKey() }), {
        viaNpm: true,
      });
      await npm.waitFor(/keyhold listening/, 30_000);
      npm.proc.kill(signal); // npm's pid only, not its process group
      await npm.exit(10_000);
      // Within a bound: the group (npm and everything it started) is empty and the port is free.
      const deadline = Date.now() + 5_000;
      while (groupAlive(npm.proc.pid!) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(groupAlive(npm.proc.pid!), false, `a process of npm's group is left:\n${npm.output}`);
      const probe = createServer();
      await new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.listen(port, '127.0.0.1', resolve);
      });
      probe.close();
    });
  }
});

/** Whether any process of the process group `pgid` is still alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
