import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { freshStore, scratchDatabase } from '../helpers/harness.ts';
import { freePort } from '../helpers/processes.ts';
import { TcpProxy, eventually, serve, tally, terminateBackends, underLoad, viaPort, type Served } from '../helpers/outages.ts';
import { sleep } from '../helpers/timing.ts';
import { newRootKey, ServerProcess, storeServerEnv } from '../helpers/server-process.ts';
import type { Answer } from '../helpers/json.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { POSTGRES_TIMEOUTS } from '../../src/store/dialects/postgres.ts';

/**
 * The store going away under a running server (docs/reliability.md): requests that need it are
 * answered 503 `store/unavailable` within the documented bound and never hang, nothing ends the process,
 * each outage is logged once when it starts and once when it ends, and everything recovers by itself.
 * Only the test's own proxy, sessions (by application_name) and SQLite connections are taken away.
 */

const PG = process.env.KEYHOLD_TEST_POSTGRES_URL;
/** A request meets a dead store within the connect timeout (no connection can be made); plus a generous margin. */
const BOUND_MS = POSTGRES_TIMEOUTS.connectMs + 2_000;
const MILLION = 1_000_000;

/** A key's credits, read through the API. */
async function remaining(s: Served, keyId: string): Promise<number> {
  const res = await s.call('GET', `/v1/keys.getKey?keyId=${keyId}`, undefined, s.root);
  assert.equal(res.status, 200, JSON.stringify(res.json));
  return Number(res.json.remaining);
}

async function createKey(s: Served, body: Record<string, unknown>): Promise<{ keyId: string; key: string }> {
  const res = await s.call('POST', '/v1/keys.createKey', { apiId: s.apiId, ...body }, s.root);
  assert.equal(res.status, 200, JSON.stringify(res.json));
  return { keyId: String(res.json.keyId), key: String(res.json.key) };
}

/** An answer as `underLoad` counts it: the verification code of a 200, else the error kind. */
const outcome = (res: { status: number; json: Answer }) => ({
  status: res.status,
  code:
    res.status === 200 ? (res.json.code === undefined ? 'OK' : String(res.json.code)) : String(res.json.error?.type).split('/errors/')[1],
});
const verify = async (s: Served, key: string) => outcome(await s.call('POST', '/v1/keys.verifyKey', { key }));
const getKey = async (s: Served, keyId: string) => outcome(await s.call('GET', `/v1/keys.getKey?keyId=${keyId}`, undefined, s.root));

/** Waits until every outage of the store logged as started is logged as ended, and returns how many there were. */
async function outagesEnded(s: Served): Promise<number> {
  await eventually('the outage logged as ended', async () => s.outages('store').started === s.outages('store').ended);
  return s.outages('store').started;
}

describe('PostgreSQL going away under a running server', { skip: PG ? false : 'KEYHOLD_TEST_POSTGRES_URL is not set' }, () => {
  let url: string;
  let closeScratch: () => Promise<void>;
  before(async () => {
    ({ url, close: closeScratch } = await freshStore('postgres'));
  });
  after(() => closeScratch());

  test('sessions killed (pg_terminate_backend) under concurrent load: every answer is 200 or 503, none hangs, it recovers', async (t) => {
    const appName = `kh_faults_${randomBytes(4).toString('hex')}`;
    const store = openStore(`${url}&application_name=${appName}`);
    const s = await serve(store);
    try {
      const { keyId, key } = await createKey(s, { remaining: MILLION });
      let killed = 0;
      const answers = await underLoad(
        6,
        (i) => (i % 2 ? verify(s, key) : getKey(s, keyId)),
        async () => {
          for (let round = 0; round < 5; round++) {
            await sleep(200);
            killed += await terminateBackends(PG!, appName);
          }
          await sleep(300);
        },
      );
      const counts = tally(answers);
      const slowest = Math.max(...answers.map((a) => a.ms));
      t.diagnostic(`killed ${killed} sessions; answers ${JSON.stringify(counts)}; slowest ${Math.round(slowest)} ms`);
      assert.ok(killed > 0, 'the load held sessions to kill');
      for (const a of answers) assert.ok(a.status === 200 || a.status === 503, `unexpected answer ${JSON.stringify(a)}`);
      assert.ok(slowest < BOUND_MS, `an answer took ${Math.round(slowest)} ms`);
      // Recovered: requests succeed again, and the credits spent are the VALID answers (give or take a spend
      // whose commit succeeded while its session was being killed, answered 503).
      const valid = answers.filter((a) => a.code === 'VALID').length;
      const unavailable = answers.filter((a) => a.status === 503).length;
      const spent = MILLION - (await remaining(s, keyId));
      assert.ok(spent >= valid && spent <= valid + unavailable, `spent ${spent}, ${valid} VALID, ${unavailable} × 503`);
      const outages = await outagesEnded(s);
      assert.ok(outages <= Math.max(1, unavailable), 'outages are logged once each, not once per failed request');
    } finally {
      await s.app.close();
      await store.close();
    }
  });

  test('a proxy in front of PostgreSQL cut and restored: 503 within the bound, cached keys still verify, readiness 503 then 200, recovery', async (t) => {
    const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(url).port || 5432));
    const store = openStore(viaPort(url, proxy.port));
    const s = await serve(store);
    try {
      const withCredits = await createKey(s, { remaining: MILLION });
      const cached = await createKey(s, {});
      assert.equal((await verify(s, cached.key)).code, 'VALID');
      assert.equal((await s.call('GET', '/v1/readiness')).status, 200);

      proxy.cut();
      const answers = await underLoad(
        4,
        (i) => (i === 0 ? verify(s, cached.key) : i === 1 ? verify(s, withCredits.key) : getKey(s, withCredits.keyId)),
        () => sleep(POSTGRES_TIMEOUTS.connectMs + 1_000), // past the connect timeout: a hanging request would show
      );
      const slowest = Math.max(...answers.map((a) => a.ms));
      t.diagnostic(`during the cut: ${JSON.stringify(tally(answers))}; slowest ${Math.round(slowest)} ms`);
      assert.ok(slowest < BOUND_MS, `an answer took ${Math.round(slowest)} ms`);
      for (const a of answers) {
        assert.ok(a.code === 'VALID' || (a.status === 503 && a.code === 'store/unavailable'), `unexpected answer ${JSON.stringify(a)}`);
      }
      assert.ok(answers.some((a) => a.status === 503));
      assert.ok(
        answers.some((a) => a.code === 'VALID'),
        'a cached key without credits verifies without the store',
      );
      const ready = await s.call('GET', '/v1/readiness');
      assert.equal(ready.status, 503);
      assert.equal(ready.json.error.type, 'https://keyhold.dev/errors/store/unavailable');
      assert.equal((await s.call('GET', '/v1/liveness')).status, 200);

      proxy.restore();
      await eventually('getKey answers 200 again', async () => (await getKey(s, withCredits.keyId)).status === 200);
      assert.equal((await s.call('GET', '/v1/readiness')).status, 200);
      assert.equal((await verify(s, withCredits.key)).code, 'VALID');
      assert.equal(await outagesEnded(s), 1, 'one line when the outage starts, one when it ends');
      assert.equal(s.entries.filter((e) => e.level >= 50).length, 0, 'no request failed as an internal error');
    } finally {
      await s.app.close();
      await store.close();
      await proxy.close();
    }
  });
});

describe('a server process (src/main.ts) whose PostgreSQL sessions are killed', {
  skip: PG ? false : 'KEYHOLD_TEST_POSTGRES_URL is not set',
}, () => {
  test('does not exit: it answers 200 or 503 meanwhile, recovers, and stops cleanly', async (t) => {
    const appName = `kh_faults_${randomBytes(4).toString('hex')}`;
    const scratch = scratchDatabase('postgres');
    const root = newRootKey();
    // Background workers on, as a deployed server runs them: their store calls meet the killed sessions too.
    const env = { LOG_LEVEL: 'info', KEYHOLD_WORKERS: 'true' };
    const server = new ServerProcess(storeServerEnv(await freePort(), `${scratch.url}&application_name=${appName}`, root, env), {
      sockets: 8,
    });
    const call = (method: 'GET' | 'POST', path: string, body?: unknown, key?: string) => server.request(method, path, body, key);
    try {
      await server.ready();
      const api = await call('POST', '/v1/apis.createApi', { name: 'faults' }, root);
      assert.equal(api.status, 200, JSON.stringify(api.json));
      const created = await call('POST', '/v1/keys.createKey', { apiId: api.json.apiId, remaining: MILLION }, root);
      const [key, keyId] = [String(created.json.key), String(created.json.keyId)];
      let killed = 0;
      const answers = await underLoad(
        4,
        async (i) =>
          outcome(
            i % 2
              ? await call('POST', '/v1/keys.verifyKey', { key })
              : await call('GET', `/v1/keys.getKey?keyId=${keyId}`, undefined, root),
          ),
        async () => {
          for (let round = 0; round < 5; round++) {
            await sleep(150);
            killed += await terminateBackends(PG!, appName);
          }
          await sleep(300);
        },
      );
      t.diagnostic(`killed ${killed} sessions; answers ${JSON.stringify(tally(answers))}`);
      assert.ok(server.alive, `the server exited:\n${server.output}`);
      for (const a of answers) assert.ok(a.status === 200 || a.status === 503, `unexpected answer ${JSON.stringify(a)}`);
      await eventually(
        'getKey answers 200 again',
        async () => (await call('GET', `/v1/keys.getKey?keyId=${keyId}`, undefined, root)).status === 200,
      );
      server.proc.kill('SIGTERM');
      assert.equal((await server.exit()).code, 0, server.output);
      assert.doesNotMatch(server.output, /Unhandled 'error' event|Emitted 'error' event/);
    } finally {
      if (server.alive) await server.kill();
      await scratch.cleanup();
    }
  });
});

describe('SQLite locked by another process beyond the busy timeout', () => {
  let store: Store;
  let url: string;
  let closeScratch: () => Promise<void>;
  before(async () => {
    ({ url, close: closeScratch } = await freshStore('sqlite'));
    store = openStore(url, { sqliteBusyTimeoutMs: 200 });
  });
  after(async () => {
    await store.close();
    await closeScratch();
  });

  test('a write answers 503 store/unavailable while the lock is held, and succeeds once it is released', async () => {
    const s = await serve(store);
    const holder = new DatabaseSync(url.replace(/^sqlite:/, ''));
    try {
      holder.exec('begin immediate');
      const refused = await s.call('POST', '/v1/apis.createApi', { name: 'locked-out' }, s.root);
      assert.equal(refused.status, 503, JSON.stringify(refused.json));
      assert.equal(refused.json.error.code, 'SERVICE_UNAVAILABLE');
      holder.exec('rollback');
      assert.equal((await s.call('POST', '/v1/apis.createApi', { name: 'let-in' }, s.root)).status, 200);
      assert.equal(await outagesEnded(s), 1);
    } finally {
      if (holder.isTransaction) holder.exec('rollback');
      holder.close();
      await s.app.close();
    }
  });
});
