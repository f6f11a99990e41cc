import { describe, test, before, after, mock } from 'node:test';
import assert from 'node:assert/strict';
import dnsPromises from 'node:dns/promises';
import { syncBuiltinESMExports } from 'node:module';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { snapshot } from '../../../helpers/rows.ts';
import {
  DEFAULT_EVENT_NAME,
  DEFAULT_EVENT_TYPE,
  DEFAULT_STRIPE_CUSTOMER_FIELD,
  DEFAULT_STRIPE_URL,
  MAX_USAGE_EXPORTS,
  MAX_USAGE_NAME,
  MAX_USAGE_TOKEN,
  OPENMETER_BATCH,
  PERIOD_MS,
} from '../../../../src/domain/usage-exports.ts';
import { newId } from '../../../../src/domain/ids.ts';
import { createVault } from '../../../../src/crypto/vault.ts';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../../../src/config/webhooks.ts';

/** Public addresses given as literals: saving an export resolves nothing, and nothing is sent to them. */
const EVENTS_URL = 'https://93.184.216.34/api/v1/events';
const STRIPE_URL = 'https://93.184.216.35/v1/billing/meter_events';
const TABLES = ['usage_exports', 'usage_reports', 'data_keys', 'jobs', 'audit_logs'] as const;
/** The vault of test/helpers/harness.ts's worlds. */
const testVault = () => createVault([{ id: 'test', key: Buffer.alloc(32, 7) }]);

interface ExportView {
  exportId: string;
  destination: string;
  url: string;
  subject: string;
  period: string;
  outcomes: string[];
  eventType?: string;
  eventName?: string;
  stripeCustomerField?: string;
  enabled: boolean;
  reportedUntil: number;
  createdAt: number;
  updatedAt: number;
}

interface ReportView {
  reportId: string;
  exportId: string;
  periodStart: number;
  periodEnd: number;
  status: string;
  subjects: number;
  skipped: number;
  requests: number;
  requestsSent: number;
  attempts: number;
  lastStatusCode?: number;
  lastError?: string;
  nextAttemptAt?: number;
  createdAt: number;
  deliveredAt?: number;
}

const openmeter = (body: Record<string, unknown> = {}) => ({
  destination: 'openmeter',
  url: EVENTS_URL,
  token: 'om_secret_token',
  ...body,
});
const stripe = (body: Record<string, unknown> = {}) => ({ destination: 'stripe', url: STRIPE_URL, token: 'sk_test_secret', ...body });

async function create(w: World, body: Record<string, unknown>, key = w.root): Promise<string> {
  const r = await w.post<{ exportId: string }>('/v1/usage.createExport', body, key);
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(Object.keys(r.json), ['exportId']);
  return r.json.exportId;
}

async function getExport(w: World, exportId: string, key = w.root): Promise<ExportView> {
  const r = await w.get<Loose<ExportView>>('/v1/usage.getExport', { exportId }, key);
  assert.equal(r.status, 200, r.body);
  return r.json as ExportView;
}

const exportRow = (w: World, exportId: string) =>
  w.store.db.selectFrom('usage_exports').selectAll().where('id', '=', exportId).executeTakeFirstOrThrow();

/** The export's token as stored, opened with the test vault. */
async function storedToken(w: World, exportId: string): Promise<string> {
  const row = await exportRow(w, exportId);
  const [plain] = await testVault().decrypt(w.store.db, row.workspace_id, [
    { dataKeyId: row.token_data_key_id, ciphertext: row.token_ciphertext },
  ]);
  return plain;
}

const auditOf = (w: World, exportId: string) =>
  w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', exportId).orderBy('id').execute();

const badRequest = (r: { status: number; body: string; json: { error: { type: string } } }, member?: string) => {
  assert.equal(r.status, 400, r.body);
  assert.equal(r.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
  if (member) assert.ok(r.body.includes(member), `the 400 names ${member}: ${r.body}`);
};

/** The bodies of createExport whose URL the webhooks' outbound rules refuse (without allowPrivate). */
const REFUSED_URLS = [
  'http://93.184.216.34/api/v1/events',
  'https://127.0.0.1/api/v1/events',
  'https://10.0.0.1/api/v1/events',
  'https://192.168.1.1/api/v1/events',
  'https://169.254.169.254/latest/meta-data',
  'https://[::1]/api/v1/events',
  'https://[::ffff:127.0.0.1]/api/v1/events',
  'https://0.0.0.0/api/v1/events',
  'https://user:pw@93.184.216.34/api/v1/events',
  'not a url',
  'ftp://93.184.216.34/api/v1/events',
];

/** A report row written directly, as the period scan writes them; ids made in order, so the last is the newest. */
async function insertReport(
  w: World,
  exportId: string,
  r: { status: 'pending' | 'delivered' | 'failed'; subjects: number; skipped?: number; periodStart: number; workspaceId?: string },
): Promise<string> {
  const id = newId('urep');
  const now = Date.now();
  await w.store.db
    .insertInto('usage_reports')
    .values({
      ...{ id, workspace_id: r.workspaceId ?? w.workspaceId, export_id: exportId, period_start: r.periodStart },
      ...{ period_end: r.periodStart + PERIOD_MS.hour, status: r.status, content: JSON.stringify({ records: [] }) },
      ...{ subjects: r.subjects, skipped: r.skipped ?? 0, requests_sent: r.status === 'delivered' ? 1 : 0, attempts: 1 },
      ...{ last_status_code: r.status === 'pending' ? null : r.status === 'delivered' ? 200 : 500 },
      ...{ last_error: r.status === 'failed' ? 'HTTP 500' : null, next_attempt_at: r.status === 'pending' ? now + 60_000 : null },
      ...{ created_at: now, updated_at: now, delivered_at: r.status === 'delivered' ? now : null },
    })
    .execute();
  return id;
}

/**
 * The world seen from a new workspace of its own (its `*` root key the default key): a workspace holds at most
 * MAX_USAGE_EXPORTS exports, so each test has its own.
 */
async function own(w: World): Promise<World> {
  const other = await w.otherWorkspace();
  return {
    ...w,
    workspaceId: other.workspaceId,
    root: other.root,
    rootKey: (permissions, opts = {}) => w.rootKey(permissions, { workspaceId: other.workspaceId, ...opts }),
    post: (path, body, key = other.root) => w.post(path, body, key),
    get: (path, query, key = other.root) => w.get(path, query, key),
  } as World;
}

for (const dialect of DIALECTS) {
  describe(`usage exports (${dialect})`, () => {
    let shared: World;
    before(async () => {
      shared = await world(dialect);
    });
    after(() => shared.close());

    test('createExport (openmeter) with defaults: uexp_ id; the token stored only encrypted; defaults listed and got', async () => {
      const w = await own(shared);
      const t0 = Date.now();
      const exportId = await create(w, openmeter());
      assert.match(exportId, /^uexp_/);
      const row = await exportRow(w, exportId);
      assert.ok(!JSON.stringify(row).includes('om_secret_token'), 'the token is not stored in clear');
      assert.equal(await storedToken(w, exportId), 'om_secret_token');
      const got = await getExport(w, exportId);
      assert.ok(got.createdAt >= t0 && got.createdAt <= Date.now());
      assert.equal(got.updatedAt, got.createdAt);
      // Reported from the period in progress at creation on.
      assert.equal(got.reportedUntil, got.createdAt - (got.createdAt % PERIOD_MS.hour));
      assert.deepEqual(
        { ...got, createdAt: 0, updatedAt: 0, reportedUntil: 0 },
        {
          exportId,
          destination: 'openmeter',
          url: EVENTS_URL,
          subject: 'identity',
          period: 'hour',
          outcomes: ['VALID'],
          eventType: DEFAULT_EVENT_TYPE,
          enabled: true,
          reportedUntil: 0,
          createdAt: 0,
          updatedAt: 0,
        },
      );
      const listed = await w.get<Loose<{ exports: ExportView[] }>>('/v1/usage.listExports', {});
      assert.equal(listed.status, 200, listed.body);
      assert.deepEqual(
        listed.json.exports.find((e) => e.exportId === exportId),
        got,
      );
      assert.ok(!listed.body.includes('om_secret_token') && !listed.body.includes('token'));
      const audit = await auditOf(w, exportId);
      assert.deepEqual(
        audit.map((a) => [a.event, a.target_type]),
        [['usage.create_export', 'usageExport']],
      );
      assert.ok(!JSON.stringify(audit).includes('om_secret_token'));
    });

    test('createExport with every member, both destinations', async () => {
      const w = await own(shared);
      const om = await create(
        w,
        openmeter({
          subject: 'key',
          period: 'minute',
          outcomes: ['VALID', 'RATE_LIMITED', 'VALID'],
          eventType: 'api.calls',
          enabled: false,
        }),
      );
      const omView = await getExport(w, om);
      assert.deepEqual(
        { ...omView, createdAt: 0, updatedAt: 0, reportedUntil: 0 },
        {
          exportId: om,
          destination: 'openmeter',
          url: EVENTS_URL,
          subject: 'key',
          period: 'minute',
          outcomes: ['VALID', 'RATE_LIMITED'],
          eventType: 'api.calls',
          enabled: false,
          reportedUntil: 0,
          createdAt: 0,
          updatedAt: 0,
        },
      );
      assert.equal(omView.reportedUntil, omView.createdAt - (omView.createdAt % PERIOD_MS.minute));

      const st = await create(
        w,
        stripe({
          subject: 'identity',
          period: 'day',
          outcomes: ['VALID', 'USAGE_EXCEEDED'],
          eventName: 'api_requests',
          stripeCustomerField: 'billing.customer',
          enabled: false,
        }),
      );
      const stView = await getExport(w, st);
      assert.deepEqual(
        { ...stView, createdAt: 0, updatedAt: 0, reportedUntil: 0 },
        {
          exportId: st,
          destination: 'stripe',
          url: STRIPE_URL,
          subject: 'identity',
          period: 'day',
          outcomes: ['VALID', 'USAGE_EXCEEDED'],
          eventName: 'api_requests',
          stripeCustomerField: 'billing.customer',
          enabled: false,
          reportedUntil: 0,
          createdAt: 0,
          updatedAt: 0,
        },
      );
      assert.equal(stView.reportedUntil, stView.createdAt - (stView.createdAt % PERIOD_MS.day));
      assert.equal(await storedToken(w, st), 'sk_test_secret');
      const row = await exportRow(w, st);
      assert.ok(!JSON.stringify(row).includes('sk_test_secret'));
      // Stripe's defaults (with its URL given).
      const defaults = await getExport(w, await create(w, stripe()));
      assert.equal(defaults.eventName, DEFAULT_EVENT_NAME);
      assert.equal(defaults.stripeCustomerField, DEFAULT_STRIPE_CUSTOMER_FIELD);
      assert.equal(defaults.eventType, undefined);
      assert.deepEqual(defaults.outcomes, ['VALID']);
      assert.equal(defaults.subject, 'identity');
      assert.equal(defaults.period, 'hour');
      assert.equal(defaults.enabled, true);
      // listExports: oldest first, each as getExport shows it.
      const listed = await w.get<Loose<{ exports: ExportView[] }>>('/v1/usage.listExports', {});
      const ids = listed.json.exports.map((e) => e.exportId);
      assert.deepEqual(ids, [...ids].sort());
      assert.deepEqual(
        listed.json.exports.find((e) => e.exportId === st),
        stView,
      );
    });

    test("createExport (stripe) without url: Stripe's meter events endpoint, checked as any URL", async () => {
      const w = await own(shared);
      // The test machine may resolve no name: api.stripe.com resolves to a public address here, once.
      const lookup = mock.method(dnsPromises, 'lookup', async () => [{ address: '93.184.216.36', family: 4 }]);
      syncBuiltinESMExports();
      let exportId: string;
      try {
        exportId = await create(w, { destination: 'stripe', token: 'sk_test_default' });
        assert.ok(
          lookup.mock.calls.some((c) => c.arguments[0] === new URL(DEFAULT_STRIPE_URL).hostname),
          'the default URL is checked by its addresses',
        );
      } finally {
        lookup.mock.restore();
        syncBuiltinESMExports();
      }
      assert.equal((await getExport(w, exportId)).url, DEFAULT_STRIPE_URL);
    });

    test('createExport: each bad member is a 400 in the envelope that writes nothing', async () => {
      const w = await own(shared);
      const before = await snapshot(w, TABLES);
      for (const url of REFUSED_URLS) {
        badRequest(await w.post('/v1/usage.createExport', openmeter({ url })), '/url');
        badRequest(await w.post('/v1/usage.createExport', stripe({ url })), '/url');
      }
      const bodies: Array<[Record<string, unknown>, string]> = [
        [{ url: EVENTS_URL, token: 't' }, '/destination'],
        [openmeter({ destination: 'chargebee' }), '/destination'],
        [{ destination: 'openmeter', url: EVENTS_URL }, '/token'],
        [openmeter({ token: '' }), '/token'],
        [openmeter({ token: 'x'.repeat(MAX_USAGE_TOKEN + 1) }), '/token'],
        [openmeter({ token: 42 }), '/token'],
        [openmeter({ subject: 'user' }), '/subject'],
        [openmeter({ period: 'week' }), '/period'],
        [openmeter({ outcomes: [] }), '/outcomes'],
        [openmeter({ outcomes: ['SUCCESS'] }), '/outcomes'],
        [openmeter({ outcomes: 'VALID' }), '/outcomes'],
        [openmeter({ eventType: 'has space' }), '/eventType'],
        [openmeter({ eventType: '' }), '/eventType'],
        [openmeter({ eventType: 'e'.repeat(MAX_USAGE_NAME + 1) }), '/eventType'],
        [stripe({ eventName: 'a/b' }), '/eventName'],
        [stripe({ stripeCustomerField: 'meta field' }), '/stripeCustomerField'],
        [openmeter({ enabled: 'yes' }), '/enabled'],
        [openmeter({ url: `https://93.184.216.34/${'x'.repeat(3000)}` }), '/url'],
        // Members of the other destination, and OpenMeter's endpoint missing.
        [{ destination: 'openmeter', token: 't' }, '/url'],
        [openmeter({ eventName: 'calls' }), '/eventName'],
        [openmeter({ stripeCustomerField: 'customer' }), '/stripeCustomerField'],
        [stripe({ eventType: 'api.calls' }), '/eventType'],
        [{}, ''],
      ];
      for (const [body, member] of bodies) badRequest(await w.post('/v1/usage.createExport', body), member || undefined);
      // A schema problem and a rule's problem are listed together.
      const both = await w.post('/v1/usage.createExport', { destination: 'openmeter', token: '', eventName: 'x' });
      badRequest(both);
      for (const m of ['/url', '/token', '/eventName']) assert.ok(both.body.includes(m), `${m} in ${both.body}`);
      const notJson = await w.post('/v1/usage.createExport', 'not json');
      assert.equal(notJson.status, 400, notJson.body);
      assert.equal(notJson.json.error.type, 'https://keyhold.dev/errors/request/invalid-json');
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('private, loopback and http URLs are saved when KEYHOLD_WEBHOOK_ALLOW_PRIVATE is set', async () => {
      const open = await world(dialect, { app: { webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivate: true } } });
      try {
        for (const url of ['http://127.0.0.1:8888/api/v1/events', 'https://10.0.0.1/api/v1/events', 'https://[::1]/api/v1/events']) {
          const exportId = await create(open, openmeter({ url, enabled: false }), open.root);
          assert.equal((await getExport(open, exportId, open.root)).url, url);
        }
        const id = await create(open, openmeter({ enabled: false }), open.root);
        assert.equal(
          (await open.post('/v1/usage.updateExport', { exportId: id, url: 'http://192.168.1.2/events' }, open.root)).status,
          200,
        );
        // Still no credentials, and still a URL.
        badRequest(await open.post('/v1/usage.createExport', openmeter({ url: 'https://u:p@10.0.0.1/x' }), open.root), '/url');
        badRequest(await open.post('/v1/usage.createExport', openmeter({ url: 'ftp://10.0.0.1/x' }), open.root), '/url');
      } finally {
        await open.close();
      }
    });

    test('updateExport: each changeable member, absent ones stay; the token replaced, encrypted, never shown or audited', async () => {
      const w = await own(shared);
      const exportId = await create(w, openmeter({ enabled: false }));
      const first = await getExport(w, exportId);
      const changes: Array<[Record<string, unknown>, Partial<ExportView>]> = [
        [{ url: 'https://93.184.216.40/api/v1/events' }, { url: 'https://93.184.216.40/api/v1/events' }],
        [{ outcomes: ['VALID', 'FORBIDDEN', 'FORBIDDEN'] }, { outcomes: ['VALID', 'FORBIDDEN'] }],
        [{ eventType: 'billing.calls' }, { eventType: 'billing.calls' }],
        [{ enabled: true }, { enabled: true }],
        [{ enabled: false }, { enabled: false }],
      ];
      let expected: ExportView = first;
      for (const [change, shown] of changes) {
        const r = await w.post('/v1/usage.updateExport', { exportId, ...change });
        assert.equal(r.status, 200, r.body);
        assert.deepEqual(r.json, {});
        const now = await getExport(w, exportId);
        assert.ok(now.updatedAt >= expected.updatedAt);
        expected = { ...expected, ...shown, updatedAt: now.updatedAt };
        assert.deepEqual(now, expected, JSON.stringify(change));
      }
      assert.equal(await storedToken(w, exportId), 'om_secret_token');
      const r = await w.post('/v1/usage.updateExport', { exportId, token: 'om_rotated_token' });
      assert.equal(r.status, 200, r.body);
      assert.equal(await storedToken(w, exportId), 'om_rotated_token');
      const row = await exportRow(w, exportId);
      assert.ok(!JSON.stringify(row).includes('om_rotated_token'), 'the new token is not stored in clear');
      const view = await getExport(w, exportId);
      assert.deepEqual({ ...view, updatedAt: 0 }, { ...expected, updatedAt: 0 });
      const listed = await w.get('/v1/usage.listExports', {});
      assert.ok(!listed.body.includes('om_rotated_token') && !listed.body.includes('om_secret_token'));
      // An update names the members it changed; the token's value is in no audit record.
      const audit = await auditOf(w, exportId);
      assert.deepEqual(
        audit.map((a) => a.event),
        ['usage.create_export', ...changes.map(() => 'usage.update_export'), 'usage.update_export'],
      );
      const last = JSON.parse(audit.at(-1)!.diff!);
      assert.deepEqual(last.changed, ['token']);
      for (const secret of ['om_rotated_token', 'om_secret_token']) assert.ok(!JSON.stringify(audit).includes(secret), secret);
      assert.equal(
        await w.store.db.selectFrom('audit_logs').select('id').where('diff', 'like', '%om_rotated_token%').executeTakeFirst(),
        undefined,
      );

      // Stripe's members, on a Stripe export.
      const st = await create(w, stripe({ enabled: false }));
      assert.equal(
        (await w.post('/v1/usage.updateExport', { exportId: st, eventName: 'metered_calls', stripeCustomerField: 'stripe_id' })).status,
        200,
      );
      const stView = await getExport(w, st);
      assert.equal(stView.eventName, 'metered_calls');
      assert.equal(stView.stripeCustomerField, 'stripe_id');
      assert.equal(stView.destination, 'stripe');
    });

    test('updateExport: each bad member is a 400 that writes nothing; destination, subject and period are fixed', async () => {
      const w = await own(shared);
      const om = await create(w, openmeter({ enabled: false }));
      const st = await create(w, stripe({ enabled: false }));
      const rows = async () => [await exportRow(w, om), await exportRow(w, st)];
      const before = await snapshot(w, TABLES);
      const stored = await rows();
      for (const url of REFUSED_URLS) badRequest(await w.post('/v1/usage.updateExport', { exportId: om, url }), '/url');
      const bodies: Array<[Record<string, unknown>, string]> = [
        [{ exportId: om, token: '' }, '/token'],
        [{ exportId: om, token: 'x'.repeat(MAX_USAGE_TOKEN + 1) }, '/token'],
        [{ exportId: om, outcomes: [] }, '/outcomes'],
        [{ exportId: om, outcomes: ['NOPE'] }, '/outcomes'],
        [{ exportId: om, eventType: 'a b' }, '/eventType'],
        [{ exportId: om, enabled: 1 }, '/enabled'],
        [{ exportId: om, eventName: 'calls' }, '/eventName'],
        [{ exportId: om, stripeCustomerField: 'customer' }, '/stripeCustomerField'],
        [{ exportId: st, eventType: 'api.calls' }, '/eventType'],
        [{ exportId: '' }, '/exportId'],
        [{ enabled: true }, '/exportId'],
      ];
      for (const [body, member] of bodies) badRequest(await w.post('/v1/usage.updateExport', body), member || undefined);
      assert.deepEqual(await snapshot(w, TABLES), before);
      assert.deepEqual(await rows(), stored);
      // Members not of updateExport (its identity: destination, subject, period) are dropped, as unknown members are.
      const r = await w.post('/v1/usage.updateExport', { exportId: om, destination: 'stripe', subject: 'key', period: 'day' });
      assert.equal(r.status, 200, r.body);
      const after = await getExport(w, om);
      assert.deepEqual([after.destination, after.subject, after.period], ['openmeter', 'identity', 'hour']);
    });

    test('unknown exportId: 404 data/usage-export-not-found on every route that names one', async () => {
      const w = await own(shared);
      const before = await snapshot(w, TABLES);
      for (const r of [
        await w.get('/v1/usage.getExport', { exportId: 'uexp_nope' }),
        await w.post('/v1/usage.updateExport', { exportId: 'uexp_nope', enabled: true }),
        await w.post('/v1/usage.updateExport', { exportId: 'uexp_nope', token: 'x' }),
        await w.post('/v1/usage.deleteExport', { exportId: 'uexp_nope' }),
        await w.get('/v1/usage.listReports', { exportId: 'uexp_nope' }),
      ]) {
        assert.equal(r.status, 404, r.body);
        assert.equal(r.json.error.code, 'NOT_FOUND');
        assert.equal(r.json.error.type, 'https://keyhold.dev/errors/data/usage-export-not-found');
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test("deleteExport removes the export and its reports (not another export's), audited", async () => {
      const w = await own(shared);
      const gone = await create(w, openmeter({ enabled: false }));
      const kept = await create(w, openmeter({ enabled: false }));
      const hour = Date.now() - (Date.now() % PERIOD_MS.hour);
      for (const [i, status] of (['delivered', 'pending', 'failed'] as const).entries()) {
        await insertReport(w, gone, { status, subjects: 1, periodStart: hour - (i + 1) * PERIOD_MS.hour });
        await insertReport(w, kept, { status, subjects: 1, periodStart: hour - (i + 1) * PERIOD_MS.hour });
      }
      const r = await w.post('/v1/usage.deleteExport', { exportId: gone });
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(r.json, {});
      assert.equal((await w.get('/v1/usage.getExport', { exportId: gone })).status, 404);
      assert.equal((await w.post('/v1/usage.deleteExport', { exportId: gone })).status, 404);
      const left = async (exportId: string) =>
        (await w.store.db.selectFrom('usage_reports').select('id').where('export_id', '=', exportId).execute()).length;
      assert.equal(await left(gone), 0);
      assert.equal(await left(kept), 3);
      assert.equal(await w.store.db.selectFrom('usage_exports').select('id').where('id', '=', gone).executeTakeFirst(), undefined);
      const listed = await w.get<Loose<{ exports: ExportView[] }>>('/v1/usage.listExports', {});
      assert.ok(!listed.json.exports.some((e) => e.exportId === gone));
      assert.deepEqual(
        (await auditOf(w, gone)).map((a) => a.event),
        ['usage.create_export', 'usage.delete_export'],
      );
      assert.ok(!JSON.stringify(await auditOf(w, gone)).includes('om_secret_token'));
    });

    test('listReports: newest first, paged by limit and cursor, filtered by status; requests per destination', async () => {
      const w = await own(shared);
      const om = await create(w, openmeter({ enabled: false }));
      const st = await create(w, stripe({ enabled: false }));
      const hour = Date.now() - (Date.now() % PERIOD_MS.hour);
      const omReports = [
        { status: 'delivered', subjects: 1 },
        { status: 'failed', subjects: OPENMETER_BATCH },
        { status: 'pending', subjects: OPENMETER_BATCH + 1 },
        { status: 'delivered', subjects: 250 },
        { status: 'pending', subjects: 0, skipped: 0 },
      ] as const;
      const ids: string[] = [];
      for (const [i, r] of omReports.entries())
        ids.push(await insertReport(w, om, { ...r, periodStart: hour - (omReports.length - i) * PERIOD_MS.hour }));
      const stIds = [
        await insertReport(w, st, { status: 'delivered', subjects: 3, skipped: 1, periodStart: hour - 2 * PERIOD_MS.hour }),
        await insertReport(w, st, { status: 'pending', subjects: 0, skipped: 2, periodStart: hour - PERIOD_MS.hour }),
      ];
      const list = (query: Record<string, string | number>) =>
        w.get<Loose<{ reports: ReportView[]; cursor?: string }>>('/v1/usage.listReports', query);

      const all = await list({ exportId: om });
      assert.equal(all.status, 200, all.body);
      assert.deepEqual(
        all.json.reports.map((r) => r.reportId),
        [...ids].reverse(),
      );
      assert.equal(all.json.cursor, undefined);
      const rows = await w.store.db.selectFrom('usage_reports').selectAll().where('export_id', '=', om).execute();
      for (const r of all.json.reports) {
        const row = rows.find((x) => x.id === r.reportId)!;
        assert.equal(r.exportId, om);
        assert.equal(r.status, row.status);
        assert.equal(r.subjects, Number(row.subjects));
        assert.equal(r.periodStart, Number(row.period_start));
        assert.equal(r.periodEnd, Number(row.period_start) + PERIOD_MS.hour);
        // OpenMeter: CloudEvents in batches of 100, so subjects / 100 requests, rounded up.
        assert.equal(r.requests, Math.ceil(Number(row.subjects) / OPENMETER_BATCH), JSON.stringify(r));
        assert.equal(r.requestsSent, Number(row.requests_sent));
        assert.equal(r.attempts, 1);
        assert.equal(r.lastStatusCode, row.last_status_code === null ? undefined : Number(row.last_status_code));
        assert.equal(r.lastError, row.last_error ?? undefined);
        assert.equal(r.nextAttemptAt, row.next_attempt_at === null ? undefined : Number(row.next_attempt_at));
        assert.equal(r.deliveredAt, row.delivered_at === null ? undefined : Number(row.delivered_at));
        assert.ok(!('content' in r), 'the records are not shown');
      }
      assert.deepEqual(
        all.json.reports.map((r) => r.requests),
        [0, 3, 2, 1, 1],
      );

      // Pages of 2: the same reports in the same order, then no cursor.
      const paged: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await list({ exportId: om, limit: 2, ...(cursor ? { cursor } : {}) });
        assert.equal(page.status, 200, page.body);
        assert.ok(page.json.reports.length <= 2);
        paged.push(...page.json.reports.map((r) => r.reportId));
        cursor = page.json.cursor;
        pages++;
      } while (cursor && pages < 10);
      assert.equal(pages, 3);
      assert.deepEqual(paged, [...ids].reverse());

      // By status, newest first, paged too.
      const pending = await list({ exportId: om, status: 'pending' });
      assert.deepEqual(
        pending.json.reports.map((r) => r.reportId),
        [ids[4], ids[2]],
      );
      const firstPending = await list({ exportId: om, status: 'pending', limit: 1 });
      assert.deepEqual(
        firstPending.json.reports.map((r) => r.reportId),
        [ids[4]],
      );
      const nextPending = await list({ exportId: om, status: 'pending', limit: 1, cursor: firstPending.json.cursor! });
      assert.deepEqual(
        nextPending.json.reports.map((r) => r.reportId),
        [ids[2]],
      );
      assert.equal(nextPending.json.cursor, undefined);
      assert.deepEqual(
        (await list({ exportId: om, status: 'delivered' })).json.reports.map((r) => r.reportId),
        [ids[3], ids[0]],
      );
      assert.deepEqual(
        (await list({ exportId: om, status: 'failed' })).json.reports.map((r) => r.reportId),
        [ids[1]],
      );

      // Stripe: one request per customer sent (subjects), skipped ones none.
      const stripeList = await list({ exportId: st });
      assert.deepEqual(
        stripeList.json.reports.map((r) => [r.reportId, r.subjects, r.skipped, r.requests]),
        [
          [stIds[1], 0, 2, 0],
          [stIds[0], 3, 1, 3],
        ],
      );

      const bads: Array<Record<string, string | number>> = [
        { exportId: om, status: 'lost' },
        { exportId: om, limit: 0 },
        { exportId: om, limit: 101 },
        { exportId: om, limit: 'ten' },
        { exportId: om, cursor: '' },
        { exportId: '' },
      ];
      for (const bad of bads) badRequest(await w.get('/v1/usage.listReports', bad));
      badRequest(await w.get('/v1/usage.listReports', {}), 'exportId');
    });

    test('per-export permissions: a key for one export lists, reads and changes only that one', async () => {
      const w = await own(shared);
      const a = await create(w, openmeter({ enabled: false }));
      const b = await create(w, openmeter({ enabled: false }));
      const key = await w.rootKey([`usage.${a}.read_export`, `usage.${a}.update_export`]);
      const listed = await w.get<Loose<{ exports: ExportView[] }>>('/v1/usage.listExports', {}, key);
      assert.equal(listed.status, 200, listed.body);
      assert.deepEqual(
        listed.json.exports.map((e) => e.exportId),
        [a],
      );
      assert.equal((await w.get('/v1/usage.getExport', { exportId: a }, key)).status, 200);
      assert.equal((await w.get('/v1/usage.listReports', { exportId: a }, key)).status, 200);
      assert.equal((await w.post('/v1/usage.updateExport', { exportId: a, enabled: false }, key)).status, 200);
      for (const [r, permission] of [
        [await w.get('/v1/usage.getExport', { exportId: b }, key), `usage.${b}.read_export`],
        [await w.get('/v1/usage.listReports', { exportId: b }, key), `usage.${b}.read_export`],
        [await w.post('/v1/usage.updateExport', { exportId: b, enabled: false }, key), `usage.${b}.update_export`],
        [await w.post('/v1/usage.deleteExport', { exportId: a }, key), `usage.${a}.delete_export`],
        [await w.post('/v1/usage.createExport', openmeter(), key), 'usage.*.create_export'],
      ] as const) {
        assert.equal(r.status, 403, r.body);
        assert.ok(r.json.error.detail.includes(permission), `${r.json.error.detail} names ${permission}`);
      }
      // A key that may create (only) may not list.
      const creator = await w.rootKey(['usage.*.create_export']);
      assert.equal((await w.get('/v1/usage.listExports', {}, creator)).status, 403);
    });

    test(`at most ${MAX_USAGE_EXPORTS} exports per workspace: the next is a 412 that writes nothing`, async () => {
      const w = await own(shared);
      const other = await w.otherWorkspace();
      for (let i = 0; i < MAX_USAGE_EXPORTS; i++) await create(w, openmeter({ enabled: false }), other.root);
      const before = await snapshot(w, TABLES);
      const r = await w.post('/v1/usage.createExport', stripe(), other.root);
      assert.equal(r.status, 412, r.body);
      assert.equal(r.json.error.type, 'https://keyhold.dev/errors/state/precondition-failed');
      assert.deepEqual(await snapshot(w, TABLES), before);
      // Another workspace's exports do not count: this one still creates.
      assert.ok(await create(w, openmeter({ enabled: false })));
    });

    // One export per workspace serves every security case (the workspace bound stays far).
    const made = new Map<string, string>();
    const exportOf = async (wd: World, key: string) => {
      if (!made.has(key)) made.set(key, await create(wd, openmeter({ enabled: false }), key));
      return made.get(key)!;
    };
    describe('createExport security', () =>
      securityTests(() => shared, {
        permission: 'usage.*.create_export',
        request: async () => ({ method: 'POST', path: '/v1/usage.createExport', body: openmeter({ enabled: false }) }),
      }));
    describe('listExports security', () =>
      securityTests(() => shared, {
        permission: 'usage.*.read_export',
        request: async () => ({ method: 'GET', path: '/v1/usage.listExports' }),
      }));
    for (const [path, action] of [
      ['/v1/usage.getExport', 'read_export'],
      ['/v1/usage.listReports', 'read_export'],
      ['/v1/usage.updateExport', 'update_export'],
      ['/v1/usage.deleteExport', 'delete_export'],
    ] as const) {
      const requestFor = (exportId: string) =>
        path.endsWith('getExport') || path.endsWith('listReports')
          ? { method: 'GET' as const, path, query: { exportId } }
          : { method: 'POST' as const, path, body: { exportId, ...(path.endsWith('updateExport') ? { enabled: false } : {}) } };
      describe(`${path} security`, () =>
        securityTests(() => shared, {
          permission: action,
          request: async (wd) => requestFor(await exportOf(wd, wd.root)),
          foreign: async (wd, other) => requestFor(await exportOf(wd, other.root)),
        }));
    }
  });
}
