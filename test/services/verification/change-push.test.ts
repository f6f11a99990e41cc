import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { freshStore } from '../../helpers/harness.ts';
import { sleep } from '../../helpers/timing.ts';
import { openStore, type Store } from '../../../src/store/store.ts';
import { NOTIFY_CHANNEL } from '../../../src/store/dialects/postgres-notifications.ts';
import { writeChangeFeed, type Change } from '../../../src/services/changes.ts';
import { createRuntime, type Runtime } from '../../../src/services/verification/runtime.ts';

const POSTGRES = process.env.KEYHOLD_TEST_POSTGRES_URL;

/** Resolves once `pred()` holds, checking every 5 ms; rejects after `ms`. */
async function within(ms: number, pred: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(5);
  }
}

describe('changes pushed by PostgreSQL NOTIFY', { skip: !POSTGRES }, () => {
  let store: Store;
  let url: string;
  let close: () => Promise<void>;
  let runtime: Runtime;
  let schema: string;
  const heard: Change[] = [];
  let admin: pg.Client;
  before(async () => {
    ({ store, url, close } = await freshStore('postgres'));
    schema = new URL(url).searchParams.get('schema')!;
    // The poll is an hour away: whatever arrives here was pushed (or read by the catch-up after a (re)connection).
    runtime = await createRuntime(store, { changePollMs: 3_600_000, caches: [{ invalidate: (c) => heard.push(...c) }] });
    admin = new pg.Client({ connectionString: POSTGRES });
    await admin.connect();
    await within(2000, () => runtime.notifications?.backendPid !== undefined, 'LISTEN connection up');
  });
  after(async () => {
    await runtime.close();
    await admin.end();
    await close();
  });

  /** What another process' writeChangeFeed sends: its own origin, this schema first. */
  const notifyFromAnotherProcess = (change: Change) =>
    admin.query('select pg_notify($1, $2)', [
      NOTIFY_CHANNEL,
      `${schema} ${JSON.stringify({ o: 'another', c: [[change.kind, change.id]] })}`,
    ]);

  test("another process' change arrives pushed, in well under a second; other schemas' are ignored", async () => {
    await admin.query('select pg_notify($1, $2)', [
      NOTIFY_CHANNEL,
      `other_schema ${JSON.stringify({ o: 'x', c: [['root-key', 'rk_other']] })}`,
    ]);
    const started = Date.now();
    await notifyFromAnotherProcess({ kind: 'root-key', id: 'rk_pushed' });
    await within(1000, () => heard.some((c) => c.id === 'rk_pushed'), 'the pushed change');
    assert.ok(Date.now() - started < 1000);
    assert.ok(!heard.some((c) => c.id === 'rk_other'), "another schema's change is not ours");
  });

  test('writeChangeFeed notifies only when its transaction commits', async () => {
    const listener = new pg.Client({ connectionString: POSTGRES });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (m) => payloads.push(m.payload ?? ''));
    await listener.query(`LISTEN ${NOTIFY_CHANNEL}`);
    try {
      await store.db
        .transaction()
        .execute(async (tx) => {
          await writeChangeFeed(tx, [{ kind: 'root-key', id: 'rk_rolledback' }]);
          throw new Error('roll back');
        })
        .catch(() => {});
      await store.db.transaction().execute((tx) => writeChangeFeed(tx, [{ kind: 'root-key', id: 'rk_committed' }]));
      await within(1000, () => payloads.some((p) => p.includes('rk_committed')), 'the committed change');
      assert.ok(!payloads.some((p) => p.includes('rk_rolledback')), 'a rolled back change is never sent');
      // The channel is the database's: other schemas' stores (other test files running at the same time) notify on it too.
      const ours = payloads.filter((p) => p.includes('rk_committed'));
      assert.ok(ours.length > 0 && ours.every((p) => p.startsWith(`${schema} `)), 'the notification names its schema first');
    } finally {
      await listener.end();
    }
  });

  test('a LISTEN connection that dies is replaced, catches up from the feed, and fails no statement meanwhile', async () => {
    const pid = runtime.notifications!.backendPid!;
    // A change committed while the connection is away: only the catch-up read of the feed can bring it.
    await admin.query('select pg_terminate_backend($1)', [pid]);
    await store.db.transaction().execute((tx) => writeChangeFeed(tx, [{ kind: 'root-key', id: 'rk_while_away' }]));
    await store.db.selectFrom('root_keys').select('id').limit(1).execute(); // the pool is untouched
    await within(
      5000,
      () => runtime.notifications?.backendPid !== undefined && runtime.notifications.backendPid !== pid,
      'a new LISTEN connection',
    );
    await within(2000, () => heard.some((c) => c.id === 'rk_while_away'), 'caught up from the change feed');
    await notifyFromAnotherProcess({ kind: 'root-key', id: 'rk_after_reconnect' });
    await within(1000, () => heard.some((c) => c.id === 'rk_after_reconnect'), 'pushed again after the reconnection');
  });

  test('a runtime whose PostgreSQL cannot be reached closes promptly', async () => {
    const unreachable = openStore('postgres://postgres@127.0.0.1:1/none');
    const r = await createRuntime(unreachable, { changePollMs: 50 });
    await sleep(100);
    const started = Date.now();
    await r.close();
    await unreachable.close();
    assert.ok(Date.now() - started < 3000, `closed in ${Date.now() - started} ms`);
  });
});
