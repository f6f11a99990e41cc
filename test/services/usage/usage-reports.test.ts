import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { HTTP, type CloudEvent } from 'cloudevents';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { startWebhookWorker } from '../../helpers/webhook-world.ts';
import { until, webhookReceiver, type Received } from '../../helpers/webhook-receiver.ts';
import type { Worker } from '../../../src/jobs/worker.ts';
import type { WebhookSettings } from '../../../src/config/webhooks.ts';
import { reportDuePeriods } from '../../../src/services/usage/period-claims.ts';
import { recordId } from '../../../src/services/usage/requests.ts';
import { openStore } from '../../../src/store/store.ts';
import { windowWithRoom } from '../../helpers/timing.ts';
import { loadRetentionConfig } from '../../../src/config/retention.ts';

/**
 * Usage exports against real receivers on loopback: an OpenMeter-shaped one whose every batch the official
 * `cloudevents` SDK parses (strictly: an invalid event throws), and a Stripe-shaped one whose form fields are read.
 * Verifications are made through the API; the periods are then reported by calling the scan with a clock past
 * their close (the app's own scan is off), and the reports sent by a job worker.
 */

const SETTINGS: WebhookSettings = { allowPrivate: true, timeoutMs: 2000, retrySchedule: [0, 200, 200] };
const HOUR = 3_600_000;

type Data = { count: number; credits: number; periodStart: string; periodEnd: string };

/** Every CloudEvent of the batches received, parsed by the cloudevents SDK. */
function cloudEvents(got: Received[]): CloudEvent<Data>[] {
  return got.flatMap((r) => {
    const parsed = HTTP.toEvent<Data>({ headers: r.headers as Record<string, string>, body: r.body });
    assert.ok(Array.isArray(parsed), 'a batch');
    return parsed as CloudEvent<Data>[];
  });
}

/**
 * Waits, if need be, for a minute with `needMs` left: a test whose verifications must fall in one period (the exports'
 * period is the minute) cannot then straddle a minute's end. The margin is many times what each test takes in CI.
 */
const oneMinute = (needMs = 5_000) => windowWithRoom(60_000, needMs);

const stripeForms = (got: Received[]) => got.map((r) => Object.fromEntries(new URLSearchParams(r.body)));

/** The world and a worker sending reports; each test works in a workspace of its own (a period's usage is the workspace's). */
function suite(dialect: 'sqlite' | 'postgres', body: (fresh: () => Promise<Tenant>) => void) {
  let w: World;
  let worker: Worker;
  before(async () => {
    w = await world(dialect, { app: { webhooks: SETTINGS, usage: { settleMs: 0, scanIntervalMs: HOUR } } });
    worker = startWebhookWorker(w, SETTINGS, 2);
  });
  after(async () => {
    await worker.stop();
    await w.close();
  });
  body(async () => {
    const { workspaceId, root } = await w.otherWorkspace();
    return { w, workspaceId, root, apiId: await w.createApi('billing', root) };
  });
}

interface Tenant {
  w: World;
  workspaceId: string;
  root: string;
  apiId: string;
}

/** Verifies `key` `n` times; returns how many were VALID. */
async function verify({ w }: Tenant, key: string, n: number): Promise<number> {
  let valid = 0;
  for (let i = 0; i < n; i++) {
    const r = await w.post<{ valid: boolean }>('/v1/keys.verifyKey', { key }, null);
    if (r.json.valid) valid++;
  }
  return valid;
}

/** Waits until the minute roll-ups of the workspace hold `total` verifications (analytics are written in batches). */
async function recorded({ w, workspaceId }: Tenant, total: number): Promise<void> {
  await until(
    `${total} verifications in the roll-ups`,
    async () => {
      const row = await w.store.db
        .selectFrom('analytics_key_verifications_per_minute_by_key')
        .select((eb) => eb.fn.sum<number>('count').as('n'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst();
      return Number(row?.n ?? 0) === total;
    },
    10_000,
  );
}

async function createExport({ w, root }: Tenant, body: Record<string, unknown>): Promise<string> {
  const r = await w.post<{ exportId: string }>('/v1/usage.createExport', { token: 'om_secret_token', period: 'minute', ...body }, root);
  assert.equal(r.status, 200, r.body);
  return r.json.exportId;
}

async function reports({ w, root }: Tenant, exportId: string) {
  const r = await w.get<{ reports: Array<Record<string, unknown>> }>('/v1/usage.listReports', { exportId }, root);
  assert.equal(r.status, 200, r.body);
  return r.json.reports;
}

/** Reports every closed period of the exports, as a scan two minutes from now would. */
const reportAll = ({ w }: Tenant) => reportDuePeriods(w.store.db, { settleMs: 0 }, Date.now() + 2 * 60_000);

/** The id of the tenant's identity `externalId`: a record's id is made from it. */
async function identityId({ w, workspaceId }: Tenant, externalId: string): Promise<string> {
  const row = await w.store.db
    .selectFrom('identities')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('external_id', '=', externalId)
    .executeTakeFirstOrThrow();
  return row.id;
}

const keyFor = ({ w, root, apiId }: Tenant, body: Record<string, unknown> = {}) => w.createKey({ apiId, ...body }, root);

for (const dialect of DIALECTS) {
  describe(`usage exports to OpenMeter and Stripe (${dialect})`, () =>
    suite(dialect, (fresh) => {
      test('OpenMeter: per identity, CloudEvents the SDK accepts; the failed first batch comes again with the same ids', async (ctx) => {
        await oneMinute();
        const t = await fresh();
        const { w, root } = t;
        const rx = await webhookReceiver((n) => ({ status: n === 1 ? 500 : 202 }));
        ctx.after(() => rx.close());
        const exportId = await createExport(t, { destination: 'openmeter', url: rx.url, eventType: 'api-calls' });
        const made = new Map<string, number>();
        let total = 0;
        for (const [externalId, times] of [
          ['user_a', 3],
          ['user_b', 5],
        ] as const) {
          const { key } = await keyFor(t, { externalId });
          made.set(externalId, await verify(t, key, times));
          total += times;
        }
        const lone = await keyFor(t); // no identity: belongs to no subject
        total += await verify(t, lone.key, 2);
        const spent = await keyFor(t, { externalId: 'user_c', remaining: 1 });
        made.set('user_c', await verify(t, spent.key, 3)); // 1 VALID, 2 USAGE_EXCEEDED
        total += 3;
        await recorded(t, total);
        assert.ok((await reportAll(t)) >= 1);
        await until('the batch twice', () => rx.got.length === 2);
        assert.equal(rx.got[0].headers['content-type'], 'application/cloudevents-batch+json');
        assert.equal(rx.got[0].headers.authorization, 'Bearer om_secret_token');
        assert.equal(rx.got[0].body, rx.got[1].body, 'the resend is the same batch');
        const events = cloudEvents([rx.got[1]]);
        const counts = Object.fromEntries(events.map((e) => [e.subject, e.data?.count]));
        assert.deepEqual(counts, Object.fromEntries(made));
        const [report] = await reports(t, exportId);
        for (const e of events) {
          assert.equal(e.specversion, '1.0');
          assert.equal(e.type, 'api-calls');
          assert.equal(e.source, `http://127.0.0.1/workspaces/${t.workspaceId}`);
          assert.equal(e.id, recordId(exportId, Number(report.periodStart), await identityId(t, e.subject!)));
          assert.equal(e.time, new Date(Number(report.periodEnd)).toISOString());
          assert.equal(Number(report.periodEnd) - Number(report.periodStart), 60_000);
          assert.deepEqual(Object.keys(e.data!).sort(), ['count', 'credits', 'periodEnd', 'periodStart']);
        }
        assert.equal(events.find((e) => e.subject === 'user_c')?.data?.credits, 1);
        await until('delivered', async () => (await reports(t, exportId))[0]?.status === 'delivered');
        const [done] = await reports(t, exportId);
        assert.deepEqual([done.subjects, done.skipped, done.attempts, done.requests, done.requestsSent], [3, 0, 2, 1, 1]);
        assert.ok(!JSON.stringify(await reports(t, exportId)).includes('om_secret_token'));
        // Nothing more to report: another scan sends nothing.
        await reportAll(t);
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(rx.got.length, 2);
        await w.post('/v1/usage.deleteExport', { exportId }, root);
      });

      test('OpenMeter by key: 120 keys go in two batches (100 + 20), each key counted once', async (ctx) => {
        await oneMinute(20_000);
        const t = await fresh();
        const { w, root } = t;
        const rx = await webhookReceiver(() => ({ status: 200 }));
        ctx.after(() => rx.close());
        const exportId = await createExport(t, {
          destination: 'openmeter',
          url: rx.url,
          subject: 'key',
          outcomes: ['VALID', 'RATE_LIMITED'],
        });
        const keyIds: string[] = [];
        for (let i = 0; i < 120; i++) {
          const { key, keyId } = await keyFor(t);
          await verify(t, key, 1);
          keyIds.push(keyId);
        }
        await recorded(t, 120);
        await reportAll(t);
        await until('two batches', () => rx.got.length === 2);
        const events = cloudEvents(rx.got);
        assert.deepEqual(
          rx.got.map((r) => (JSON.parse(r.body) as unknown[]).length),
          [100, 20],
        );
        assert.deepEqual(events.map((e) => e.subject).sort(), [...keyIds].sort());
        assert.ok(events.every((e) => e.data?.count === 1));
        assert.equal(new Set(events.map((e) => e.id)).size, 120);
        await w.post('/v1/usage.deleteExport', { exportId }, root);
      });

      test('Stripe: one meter event per customer, form fields as Stripe takes them; identities without a customer skipped', async (ctx) => {
        await oneMinute();
        const t = await fresh();
        const { w, root } = t;
        const rx = await webhookReceiver(() => ({ status: 200 }));
        ctx.after(() => rx.close());
        const exportId = await createExport(t, {
          destination: 'stripe',
          url: rx.url,
          token: 'sk_test_usage',
          eventName: 'api_requests',
          stripeCustomerField: 'stripe',
        });
        const ids = await w.post('/v1/identities.createIdentity', { externalId: 'acme', meta: { stripe: 'cus_ACME' } }, root);
        assert.equal(ids.status, 200, ids.body);
        await w.post('/v1/identities.createIdentity', { externalId: 'nocustomer', meta: { plan: 'free' } }, root);
        const paying = await keyFor(t, { externalId: 'acme' });
        const free = await keyFor(t, { externalId: 'nocustomer' });
        const valid = await verify(t, paying.key, 4);
        await verify(t, free.key, 2);
        await recorded(t, 6);
        await reportAll(t);
        await until('a meter event', () => rx.got.length === 1);
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(rx.got.length, 1);
        const [form] = stripeForms(rx.got);
        assert.equal(rx.got[0].headers['content-type'], 'application/x-www-form-urlencoded');
        assert.equal(rx.got[0].headers.authorization, 'Bearer sk_test_usage');
        const [report] = await reports(t, exportId);
        assert.deepEqual(form, {
          event_name: 'api_requests',
          'payload[stripe_customer_id]': 'cus_ACME',
          'payload[value]': String(valid),
          identifier: recordId(exportId, Number(report.periodStart), await identityId(t, 'acme')),
          timestamp: String(Number(report.periodEnd) / 1000),
        });
        assert.ok(form.identifier.length <= 100);
        await until('delivered', async () => (await reports(t, exportId))[0]?.status === 'delivered');
        const [done] = await reports(t, exportId);
        assert.deepEqual([done.subjects, done.skipped], [1, 1]);
        await w.post('/v1/usage.deleteExport', { exportId }, root);
      });

      test('a receiver that keeps failing: attempts on the retry schedule, then failed, and listReports says why', async (ctx) => {
        await oneMinute();
        const t = await fresh();
        const { w, root } = t;
        const rx = await webhookReceiver(() => ({ status: 503 }));
        ctx.after(() => rx.close());
        const exportId = await createExport(t, { destination: 'openmeter', url: rx.url });
        const { key } = await keyFor(t, { externalId: 'user_fail' });
        await verify(t, key, 1);
        await recorded(t, 1);
        await reportAll(t);
        await until('failed', async () => (await reports(t, exportId))[0]?.status === 'failed');
        const [r] = await reports(t, exportId);
        assert.deepEqual([r.attempts, r.lastStatusCode, r.lastError, r.requestsSent], [3, 503, 'answered 503', 0]);
        assert.equal(rx.got.length, 3);
        assert.equal(new Set(rx.got.map((g) => g.body)).size, 1);
        const metrics = (await w.app.inject({ method: 'GET', url: '/metrics' })).body;
        assert.match(metrics, /keyhold_usage_report_attempts_total\{outcome="failed"\} [1-9]/);
        assert.ok(!metrics.includes('om_secret_token'));
        await w.post('/v1/usage.deleteExport', { exportId }, root);
      });

      test('Stripe: a customer refused for good (400) is recorded as rejected and the others still go; nothing is sent twice', async (ctx) => {
        await oneMinute();
        const t = await fresh();
        const { w, root } = t;
        const rx = await webhookReceiver((n) => ({ status: n === 1 ? 400 : 200 }));
        ctx.after(() => rx.close());
        const exportId = await createExport(t, { destination: 'stripe', url: rx.url });
        for (const [externalId, customer] of [
          ['a_refused', 'cus_GONE'],
          ['b_paying', 'cus_OK'],
        ]) {
          await w.post('/v1/identities.createIdentity', { externalId, meta: { stripeCustomerId: customer } }, root);
          await verify(t, (await keyFor(t, { externalId })).key, 1);
        }
        await recorded(t, 2);
        await reportAll(t);
        await until('delivered', async () => (await reports(t, exportId))[0]?.status === 'delivered');
        assert.deepEqual(
          stripeForms(rx.got).map((f) => f['payload[stripe_customer_id]']),
          ['cus_GONE', 'cus_OK'],
        );
        const [r] = await reports(t, exportId);
        assert.deepEqual(
          [r.requests, r.requestsSent, r.rejected, r.attempts, r.lastStatusCode, r.lastError],
          [2, 2, 1, 1, 400, 'answered 400'],
        );
      });

      test('two servers claiming at once after an outage: each missed period reported once, oldest first', async () => {
        const t = await fresh();
        const { w } = t;
        const exportId = await createExport(t, { destination: 'openmeter', url: 'https://93.184.216.34/api/v1/events', subject: 'key' });
        const now = Date.now();
        const first = now - (now % 60_000) - 10 * 60_000;
        await w.store.db
          .updateTable('usage_exports')
          .set({ next_period_start: first, next_period_end: first + 60_000 })
          .where('id', '=', exportId)
          .execute();
        for (let m = 0; m < 10; m++) await rollup(t, first + m * 60_000, `key_${m}`, m + 1);
        const other = openStore(w.url);
        try {
          const claimed = await Promise.all([
            reportDuePeriods(w.store.db, { settleMs: 0 }, now),
            reportDuePeriods(other.db, { settleMs: 0 }, now),
            reportDuePeriods(w.store.db, { settleMs: 0 }, now),
            reportDuePeriods(other.db, { settleMs: 0 }, now),
          ]);
          assert.equal(
            claimed.reduce((a, b) => a + b, 0),
            10,
            'the 10 closed periods, each claimed by one scan',
          );
        } finally {
          await other.close();
        }
        const rows = await w.store.db.selectFrom('usage_reports').selectAll().where('export_id', '=', exportId).orderBy('id').execute();
        assert.deepEqual(
          rows.map((r) => Number(r.period_start)),
          Array.from({ length: 10 }, (_, m) => first + m * 60_000),
          'one report per period, written oldest first',
        );
        assert.deepEqual(
          rows.map((r) => (JSON.parse(r.content) as { records: unknown[][] }).records.map((x) => x.slice(1, 4))),
          Array.from({ length: 10 }, (_, m) => [[`key_${m}`, m + 1, 0]]),
        );
        const view = await w.get<{ reportedUntil: number }>('/v1/usage.getExport', { exportId }, t.root);
        assert.equal(view.json.reportedUntil, first + 10 * 60_000);
      });

      test('periods whose roll-ups are past their retention are passed over; a disabled export claims nothing until enabled', async () => {
        const t = await fresh();
        const { w, root } = t;
        const exportId = await createExport(t, {
          destination: 'openmeter',
          url: 'https://93.184.216.34/api/v1/events',
          subject: 'key',
          period: 'day',
        });
        const now = Date.now();
        const day = 86_400_000;
        const today = now - (now % day);
        const long = today - 9 * day;
        await w.store.db
          .updateTable('usage_exports')
          .set({ next_period_start: long, next_period_end: long + day })
          .where('id', '=', exportId)
          .execute();
        const kept = today - 2 * day;
        await rollup(t, long, 'key_pruned', 1, 'day');
        await rollup(t, kept, 'key_kept', 2, 'day');
        assert.equal((await w.post('/v1/usage.updateExport', { exportId, enabled: false }, root)).status, 200);
        const retention = { ...loadRetentionConfig({}), analyticsDayDays: 7 };
        assert.equal(await reportDuePeriods(w.store.db, { settleMs: 0, retention }, now), 0, 'disabled: nothing claimed');
        assert.equal((await w.post('/v1/usage.updateExport', { exportId, enabled: true }, root)).status, 200);
        while ((await reportDuePeriods(w.store.db, { settleMs: 0, retention }, now)) > 0);
        const rows = await w.store.db.selectFrom('usage_reports').selectAll().where('export_id', '=', exportId).execute();
        assert.deepEqual(
          rows.map((r) => [Number(r.period_start), (JSON.parse(r.content) as { records: string[][] }).records[0][1]]),
          [[kept, 'key_kept']],
        );
        const view = await w.get<{ reportedUntil: number }>('/v1/usage.getExport', { exportId }, root);
        assert.equal(view.json.reportedUntil, today, 'every closed day claimed, the first kept one (6 days ago) on');
      });
    }));
}

/** A `by_key` roll-up row of the tenant's: `count` VALID verifications of `keyId` (no identity) in the bucket `time` of `grain`. */
async function rollup(
  { w, workspaceId, apiId }: Tenant,
  time: number,
  keyId: string,
  count: number,
  grain: 'minute' | 'day' = 'minute',
): Promise<void> {
  await w.store.db
    .insertInto(`analytics_key_verifications_per_${grain}_by_key`)
    .values({
      ...{ workspace_id: workspaceId, time, key_space_id: apiId, key_id: keyId, identity_id: '', external_id: '' },
      ...{ outcome: 'VALID', count, spent_credits: 0, latency_sum: 0 },
    })
    .execute();
}
