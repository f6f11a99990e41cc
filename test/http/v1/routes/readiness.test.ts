import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { DIALECTS, world, freshStore, type World } from '../../../helpers/harness.ts';
import { TcpProxy, eventually, viaPort } from '../../../helpers/outages.ts';
import { sleep } from '../../../helpers/timing.ts';
import { openStore } from '../../../../src/store/store.ts';
import { buildApp } from '../../../../src/app.ts';

const REDIS_URL = process.env.KEYHOLD_TEST_REDIS_URL;
/** The readiness deadline (1 s) plus a generous margin for a loaded machine. */
const BOUND_MS = 3_000;

for (const dialect of DIALECTS) {
  describe(`GET /v1/readiness (${dialect})`, () => {
    let w: World;
    /** PostgreSQL: the world's store reaches the server through it, so the test can cut it. */
    let proxy: TcpProxy | undefined;
    before(async () => {
      if (dialect === 'postgres') {
        const pgPort = Number(new URL(process.env.KEYHOLD_TEST_POSTGRES_URL!).port || 5432);
        proxy = await TcpProxy.start('127.0.0.1', pgPort);
      }
      w = await world(dialect, { openStore: (url) => openStore(proxy ? viaPort(url, proxy.port) : url) });
    });
    after(async () => {
      await w.close();
      await proxy?.close();
    });

    test('200 ready with the store up; no root key needed (a bad one is ignored)', async () => {
      for (const key of [null, 'not-a-root-key']) {
        const res = await w.get('/v1/readiness', {}, key);
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, { status: 'ready', checks: { store: 'up' } });
        assert.match(String(res.headers['x-request-id']), /^req_/);
      }
    });

    test('503 store/unavailable, naming the store, when it does not answer within 1 s; 200 again once it does', async () => {
      // Make the store silent: PostgreSQL behind a frozen proxy (its connections open, nothing passing); SQLite's
      // writer held by a long transaction.
      let release: Promise<unknown> | undefined;
      if (proxy) proxy.freeze();
      else release = w.store.db.transaction().execute(() => sleep(1_500));
      const started = performance.now();
      const res = await w.get('/v1/readiness', {}, null);
      const took = performance.now() - started;
      assert.equal(res.status, 503, res.body);
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/store/unavailable');
      assert.equal(res.json.meta.requestId, res.headers['x-request-id']);
      assert.equal(res.json.error.title, 'Service Unavailable');
      assert.equal(res.json.error.code, 'SERVICE_UNAVAILABLE');
      assert.match(res.json.error.detail, /store did not answer within 1000 ms/);
      assert.ok(took < BOUND_MS, `readiness took ${Math.round(took)} ms`);
      assert.equal((await w.get('/v1/liveness', {}, null)).status, 200, 'liveness does not depend on the store');
      proxy?.restore();
      await release;
      await eventually('readiness 200 after the store came back', async () => (await w.get('/v1/readiness', {}, null)).status === 200);
    });

    test('readinessTimeoutMs: a longer deadline waits for a store that answers late, and answers 200', async () => {
      // The store answers after about 1.5 s, past the default deadline: SQLite's writer held by a transaction;
      // PostgreSQL's pool (10 connections) busy with statements of that length, on a store of its own whose pool
      // waits up to 10 s for a connection (the default 2 s would bound the wait, not the deadline under test).
      const store = dialect === 'sqlite' ? w.store : openStore(w.url, { postgres: { connectMs: 10_000 } });
      const app = await buildApp({ store }, { readinessTimeoutMs: 5_000 });
      try {
        const busy =
          dialect === 'sqlite'
            ? [store.db.transaction().execute(() => sleep(1_500))]
            : Array.from({ length: 10 }, () => sql`select pg_sleep(1.5)`.execute(store.db));
        await sleep(100);
        const started = performance.now();
        const res = await app.inject({ method: 'GET', url: '/v1/readiness' });
        const took = performance.now() - started;
        await Promise.all(busy);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json(), { status: 'ready', checks: { store: 'up' } });
        assert.ok(took > 1_000, `answered after ${Math.round(took)} ms, within the default deadline: the store was not busy`);
      } finally {
        await app.close();
        if (store !== w.store) await store.close();
      }
    });

    test('a store that fails at once is 503 without its cause (no address, no driver message)', {
      skip: dialect === 'sqlite' ? 'a SQLite file refuses no connection' : false,
    }, async () => {
      // PostgreSQL behind a proxy of its own that stops listening: connections are refused, at once.
      const pgPort = Number(new URL(process.env.KEYHOLD_TEST_POSTGRES_URL!).port || 5432);
      const own = await TcpProxy.start('127.0.0.1', pgPort);
      const store = openStore(viaPort(w.url, own.port));
      const app = await buildApp({ store });
      try {
        assert.equal((await app.inject({ method: 'GET', url: '/v1/readiness' })).statusCode, 200);
        await own.close();
        const res = await app.inject({ method: 'GET', url: '/v1/readiness' });
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(res.json().error.detail, 'Not ready: the store failed a trivial statement');
        assert.doesNotMatch(res.body, new RegExp(`127\\.0\\.0\\.1|${own.port}|ECONN|postgres`, 'i'));
      } finally {
        await app.close();
        await store.close();
      }
    });

    test('with Redis configured, its PING is checked too', { skip: REDIS_URL ? false : 'KEYHOLD_TEST_REDIS_URL is not set' }, async () => {
      const { store, close } = await freshStore(dialect);
      const app = await buildApp({ store }, { redisUrl: REDIS_URL });
      try {
        const res = await app.inject({ method: 'GET', url: '/v1/readiness' });
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json(), { status: 'ready', checks: { store: 'up', redis: 'up' } });
      } finally {
        await app.close();
        await close();
      }
    });
  });
}
