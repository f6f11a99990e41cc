import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { HTTP, type CloudEvent } from 'cloudevents';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { until, webhookReceiver } from '../helpers/webhook-receiver.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';
import { windowWithRoom } from '../helpers/timing.ts';
import { recordId } from '../../src/services/usage/requests.ts';

/**
 * Usage reports across kill -9 and across servers, with real server processes and the real clock (a per-minute
 * export, settled at once: a test waits for its minute to close, up to about 65 s). (1) A server without a worker
 * claims the period and commits its report, and is killed with SIGKILL before anything sends it; a server started on
 * the same database sends it, and, its receiver failing the first request, sends it again with the same ids.
 * (2) PostgreSQL: two servers scanning one database, verifications made on both, report the period once.
 */

const MASTER = `test:${Buffer.alloc(32, 9).toString('base64')}`;
const env = (workers: number) => ({
  KEYHOLD_WORKERS: String(workers),
  KEYHOLD_MASTER_KEYS: MASTER,
  KEYHOLD_WEBHOOK_ALLOW_PRIVATE: 'true',
  KEYHOLD_WEBHOOK_RETRY_SCHEDULE: '0s,1s',
  KEYHOLD_USAGE_SETTLE_MS: '0',
});

type Data = { count: number; credits: number };
const eventsOf = (r: { headers: Record<string, unknown>; body: string }) =>
  HTTP.toEvent<Data>({ headers: r.headers as Record<string, string>, body: r.body }) as CloudEvent<Data>[];

/** A database of its own and the servers started on it, for one test (tests run at once: their minutes overlap). */
async function scene(t: TestContext, dialect: (typeof DIALECTS)[number], root: string) {
  const db = await freshStore(dialect);
  const servers: ServerProcess[] = [];
  t.after(async () => {
    for (const s of servers) await s.stop();
    await db.close();
  });
  const start = async (workers: number) => {
    const s = await ServerProcess.start(db.url, root, env(workers));
    servers.push(s);
    return s;
  };
  const reportsOf = (exportId: string) => db.store.db.selectFrom('usage_reports').selectAll().where('export_id', '=', exportId).execute();
  return { db, start, reportsOf };
}

// Every test waits for its minute to close: they run at once, each on its own database (a server scanning another
// test's database would send the report the killed server was to leave unsent).
describe('usage reports across kill -9 and servers', { concurrency: true }, () => {
  for (const dialect of DIALECTS) {
    describe(`usage reports across kill -9 and servers (${dialect})`, { concurrency: true }, () => {
      const root = newRootKey();

      /** An OpenMeter export of the workspace to `url`, and a key of the identity `externalId`. */
      const setUp = async (server: ServerProcess, url: string, externalId: string) => {
        const created = await server.post<{ exportId: string }>(
          '/v1/usage.createExport',
          { destination: 'openmeter', url, token: 'om_token', period: 'minute' },
          root,
        );
        assert.equal(created.status, 200, JSON.stringify(created.json));
        const api = await server.post<{ apiId: string }>('/v1/apis.createApi', { name: `usage-${externalId}` }, root);
        const key = await server.post<{ key: string }>('/v1/keys.createKey', { apiId: api.json.apiId, externalId }, root);
        assert.equal(key.status, 200, JSON.stringify(key.json));
        return { exportId: created.json.exportId, key: key.json.key };
      };
      const verify = async (server: ServerProcess, key: string, n: number) => {
        for (let i = 0; i < n; i++) assert.equal((await server.post<{ valid: boolean }>('/v1/keys.verifyKey', { key })).json.valid, true);
      };
      test('killed after the report was committed, before its send: the next server sends it, and resends the same ids', {
        timeout: 150_000,
      }, async (t) => {
        const { db, start, reportsOf } = await scene(t, dialect, root);
        const rx = await webhookReceiver((n) => ({ status: n === 1 ? 500 : 200 }));
        const first = await start(0);
        const { exportId, key } = await setUp(first, rx.url, 'cust_crash');
        await windowWithRoom(60_000, 5_000); // the verifications in one period (the minute): one report
        await verify(first, key, 3);
        await until('the report committed', async () => (await reportsOf(exportId)).length === 1, 90_000);
        await first.kill();
        assert.equal(rx.got.length, 0);
        const [report] = await reportsOf(exportId);
        assert.equal(report.status, 'pending');
        const second = await start(1);
        await until('the report sent twice', () => rx.got.length === 2, 20_000);
        assert.equal(rx.got[0].body, rx.got[1].body);
        const [event] = eventsOf(rx.got[1]);
        assert.equal(event.subject, 'cust_crash');
        const identity = await db.store.db
          .selectFrom('identities')
          .select('id')
          .where('external_id', '=', 'cust_crash')
          .executeTakeFirstOrThrow();
        assert.equal(event.id, recordId(exportId, Number(report.period_start), identity.id));
        assert.equal(event.data?.count, 3);
        await until('delivered', async () => (await reportsOf(exportId))[0].status === 'delivered', 10_000);
        await second.stop();
        await rx.close();
      });

      if (dialect === 'postgres')
        test('two servers on one PostgreSQL: verifications on both, the period reported once', { timeout: 150_000 }, async (t) => {
          const { start, reportsOf } = await scene(t, dialect, root);
          const rx = await webhookReceiver(() => ({ status: 200 }));
          const [a, b] = [await start(1), await start(1)];
          const { exportId, key } = await setUp(a, rx.url, 'cust_two');
          await windowWithRoom(60_000, 5_000); // the verifications in one period (the minute): all delivered at once
          await verify(a, key, 2);
          await verify(b, key, 3);
          await until('delivered', async () => (await reportsOf(exportId)).some((r) => r.status === 'delivered'), 90_000);
          await new Promise((r) => setTimeout(r, 6_000)); // another scan of each server
          const periods = (await reportsOf(exportId)).map((r) => Number(r.period_start));
          assert.equal(new Set(periods).size, periods.length, 'one report per period');
          const events = rx.got.flatMap(eventsOf);
          assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'each record sent once');
          assert.equal(
            events.reduce((sum, e) => sum + (e.data?.count ?? 0), 0),
            5,
          );
          await rx.close();
        });
    });
  }
});
