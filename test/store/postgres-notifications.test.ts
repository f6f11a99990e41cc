import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { listenForNotifications, NOTIFY_CHANNEL, type Notifications } from '../../src/store/dialects/postgres-notifications.ts';
import { TcpProxy, viaPort } from '../helpers/outages.ts';
import { sleep } from '../helpers/timing.ts';

const POSTGRES = process.env.KEYHOLD_TEST_POSTGRES_URL;

/** Resolves once `pred()` holds, checking every 10 ms; rejects after `ms`. */
async function within(ms: number, pred: () => boolean, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(10);
  }
}

/**
 * A LISTEN connection that goes silent (the network drops its packets: no reset, no end) hears nothing and
 * would never learn it on its own; the heartbeat (a `select 1` every 5 s, 2 s to answer) finds it and replaces
 * it, and the new connection says so (onConnected: the caller catches up from the change feed).
 */
describe('the LISTEN connection', { skip: !POSTGRES }, () => {
  let proxy: TcpProxy;
  let admin: pg.Client;
  let listener: Notifications;
  const schema = `notify_test_${process.pid}`;
  const heard: string[] = [];
  let connections = 0;
  before(async () => {
    const upstream = new URL(POSTGRES!);
    proxy = await TcpProxy.start(upstream.hostname, Number(upstream.port || 5432));
    admin = new pg.Client({ connectionString: POSTGRES });
    await admin.connect();
    listener = listenForNotifications(viaPort(POSTGRES!, proxy.port), schema, {
      onPayload: (p) => heard.push(p),
      onConnected: () => connections++,
    });
    await within(3000, () => connections === 1, 'the first connection');
  });
  after(async () => {
    await listener.stop();
    await admin.end();
    await proxy.close();
  });

  const notify = (payload: string) => admin.query('select pg_notify($1, $2)', [NOTIFY_CHANNEL, `${schema} ${payload}`]);

  test('hears its schema', async () => {
    await notify('first');
    await within(1000, () => heard.includes('first'), 'the notification');
  });

  test('that goes silent is found by the heartbeat and replaced within about 7.5 s, and hears again', async () => {
    const pid = listener.backendPid;
    proxy.freeze();
    const frozenAt = Date.now();
    await notify('while silent');
    await within(10_000, () => connections === 2, 'a new connection after the heartbeat failed');
    const replacedAfter = Date.now() - frozenAt;
    // Heartbeat interval (5 s) + its deadline (2 s) + the pause before reconnecting (0.5 s), and some slack.
    assert.ok(replacedAfter <= 9_000, `replaced after ${replacedAfter} ms`);
    assert.ok(!heard.includes('while silent'), 'nothing passes a silent connection: only the catch-up can bring it');
    assert.notEqual(listener.backendPid, pid);
    await notify('after');
    await within(1000, () => heard.includes('after'), 'a notification on the new connection');
  });
});
