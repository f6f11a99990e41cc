import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { TcpProxy, terminateBackends, viaPort } from '../helpers/outages.ts';
import { freePort } from '../helpers/processes.ts';
import { sleep } from '../helpers/timing.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { isStoreUnavailable, StoreUnavailableError } from '../../src/store/errors.ts';
import type { AvailabilityListener } from '../../src/store/availability.ts';

const PG = process.env.KEYHOLD_TEST_POSTGRES_URL;

/** A listener that keeps what it was told, in order. */
function recorder(): AvailabilityListener & { seen: string[] } {
  const seen: string[] = [];
  return { seen, up: () => seen.push('up'), down: () => seen.push('down') };
}

for (const dialect of DIALECTS) {
  describe(`store availability (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
    });
    after(() => close());

    test('every statement reports the store up, a constraint violation too (the store answered); unsubscribing stops it', async () => {
      const listener = recorder();
      const stop = store.onAvailability(listener);
      await store.db.insertInto('workspaces').values({ id: 'ws_avail', name: 'a', created_at: 1 }).execute();
      await assert.rejects(store.db.insertInto('workspaces').values({ id: 'ws_avail', name: 'a', created_at: 1 }).execute());
      assert.ok(listener.seen.length >= 2);
      assert.ok(listener.seen.every((s) => s === 'up'));
      stop();
      const count = listener.seen.length;
      await store.ping(1_000);
      assert.equal(listener.seen.length, count);
    });

    test('ping resolves while the store answers', async () => {
      await store.ping(1_000);
    });

    if (dialect === 'sqlite') {
      test('a write that waits for another connection beyond the busy timeout fails as unavailable', async () => {
        const busy = openStore(url, { sqliteBusyTimeoutMs: 150 });
        const holder = new DatabaseSync(url.replace(/^sqlite:/, ''));
        const listener = recorder();
        busy.onAvailability(listener);
        try {
          holder.exec('begin immediate');
          const err = await busy.db
            .insertInto('workspaces')
            .values({ id: 'ws_busy', name: 'b', created_at: 1 })
            .execute()
            .then(
              () => assert.fail('the write went through a held lock'),
              (e: unknown) => e,
            );
          assert.equal(isStoreUnavailable(err), true, String(err));
          assert.deepEqual(listener.seen.at(-1), 'down');
          holder.exec('rollback');
          await busy.db.insertInto('workspaces').values({ id: 'ws_busy', name: 'b', created_at: 1 }).execute();
          assert.deepEqual(listener.seen.at(-1), 'up');
        } finally {
          if (holder.isTransaction) holder.exec('rollback');
          holder.close();
          await busy.close();
        }
      });
    }
  });
}

describe('PostgreSQL connections fail within their timeouts, without ending the process', {
  skip: PG ? false : 'KEYHOLD_TEST_POSTGRES_URL is not set',
}, () => {
  let url: string;
  let close: () => Promise<void>;
  before(async () => {
    ({ url, close } = await freshStore('postgres'));
  });
  after(() => close());

  test('sessions carry the statement and idle-in-transaction timeouts, named keyhold unless the URL names them', async () => {
    const store = openStore(url);
    try {
      const { rows } = await sql<{
        st: string;
        idle: string;
        app: string;
      }>`select current_setting('statement_timeout') as st, current_setting('idle_in_transaction_session_timeout') as idle, current_setting('application_name') as app`.execute(
        store.db,
      );
      assert.deepEqual(rows[0], { st: '5s', idle: '10s', app: 'keyhold' });
    } finally {
      await store.close();
    }
  });

  test('a refused connection is unavailable, reported down, and ping rejects', async () => {
    const store = openStore(viaPort(url, await freePort()));
    const listener = recorder();
    store.onAvailability(listener);
    try {
      const err = await sql`select 1`.execute(store.db).then(
        () => assert.fail('a closed port answered'),
        (e: unknown) => e,
      );
      assert.equal(isStoreUnavailable(err), true, String(err));
      assert.deepEqual(listener.seen, ['down']);
      await assert.rejects(store.ping(1_000));
    } finally {
      await store.close();
    }
  });

  test('a statement beyond statement_timeout is cancelled by the server, as unavailable', async () => {
    const store = openStore(url, { postgres: { statementMs: 200 } });
    try {
      const err = await sql`select pg_sleep(2)`.execute(store.db).then(
        () => assert.fail('pg_sleep(2) finished within a 200 ms statement timeout'),
        (e: unknown) => e,
      );
      assert.equal((err as { code?: string }).code, '57014');
      assert.equal(isStoreUnavailable(err), true);
      await sql`select 1`.execute(store.db); // the connection stays usable
    } finally {
      await store.close();
    }
  });

  test('a connection that goes silent fails its statement after the query deadline and is discarded; a dark network fails ping', async () => {
    const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(url).port || 5432));
    const store = openStore(viaPort(url, proxy.port), { postgres: { connectMs: 500, statementMs: 0, queryMs: 300 } });
    try {
      await sql`select 1`.execute(store.db);
      proxy.freeze();
      const err = await sql`select 1`.execute(store.db).then(
        () => assert.fail('a frozen connection answered'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof StoreUnavailableError, String(err));
      proxy.cut();
      await assert.rejects(store.ping(400), StoreUnavailableError);
      proxy.restore();
      // The frozen connection was discarded: the next statement gets a new one and an answer.
      for (let attempt = 0; ; attempt++) {
        try {
          await sql`select 1`.execute(store.db);
          break;
        } catch (e) {
          if (attempt === 20) throw e;
          await sleep(50);
        }
      }
    } finally {
      await store.close();
      await proxy.close();
    }
  });

  test('a session killed while its client is checked out (inside a transaction) fails that transaction; the process lives on', async () => {
    const appName = `kh_test_kill_${randomBytes(4).toString('hex')}`;
    const store = openStore(`${url}&application_name=${appName}`);
    try {
      const err = await store.db
        .transaction()
        .execute(async (tx) => {
          await sql`select 1`.execute(tx);
          assert.equal(await terminateBackends(PG!, appName), 1);
          await sleep(100); // the client's 'error' event arrives while it is checked out
          await sql`select 1`.execute(tx);
        })
        .then(
          () => assert.fail('a killed session answered'),
          (e: unknown) => e,
        );
      assert.equal(isStoreUnavailable(err), true, String(err));
      await sql`select 1`.execute(store.db);
    } finally {
      await store.close();
    }
  });
});
