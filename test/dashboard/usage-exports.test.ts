import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../src/domain/ids.ts';
import { PERIOD_MS } from '../../src/domain/usage-exports.ts';
import { setMember } from '../../src/services/dashboard/members.ts';
import { openUserSession, recordUser } from '../../src/services/dashboard/sso-sessions.ts';
import { DIALECTS, OPERATOR, world, type World } from '../helpers/harness.ts';
import { checkPage, dashboardSuite, sessionPage, signInWithLink } from '../helpers/browser.ts';
import { count, snapshot } from '../helpers/rows.ts';

/** Public addresses given as literals: nothing resolves them, and no report is sent to them by these worlds. */
const OPENMETER_URL = 'https://93.184.216.34/api/v1/events';
const STRIPE_URL = 'https://93.184.216.34/v1/billing/meter_events';
const TOKEN = 'om_token_never_shown_4d1c9a';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Reports of an export, written as the scan writes them (oldest period first, so ids sort as periods do). */
async function insertReports(w: World, exportId: string, n: number, from: number): Promise<void> {
  const now = Date.now();
  for (let i = 0; i < n; i++) {
    const start = from + i * PERIOD_MS.day;
    const last = i === n - 1;
    await w.store.db
      .insertInto('usage_reports')
      .values({
        id: newId('urep'),
        workspace_id: w.workspaceId,
        export_id: exportId,
        period_start: start,
        period_end: start + PERIOD_MS.day,
        status: last ? 'failed' : 'delivered',
        content: '{"records":[]}',
        subjects: last ? 150 : 3,
        skipped: last ? 2 : 0,
        requests_sent: last ? 1 : 1,
        attempts: last ? 4 : 1,
        last_status_code: last ? 503 : 200,
        last_error: last ? 'the receiver answered 503' : null,
        next_attempt_at: null,
        created_at: now,
        updated_at: now,
        delivered_at: last ? null : now,
      })
      .execute();
  }
}

for (const dialect of DIALECTS) {
  describe(`dashboard usage exports (${dialect})`, () => {
    const s = dashboardSuite(dialect);

    it('creates an export (its token never shown), lists it, disables and enables it, pages its reports and deletes it', async () => {
      const { page, errors } = await s.signedIn();
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Usage exports', exact: true }).click();
      await page.getByRole('button', { name: 'Create export' }).click();
      assert.equal(await page.getByRole('radio', { name: 'openmeter', exact: true }).isChecked(), true, 'the default destination');
      assert.equal(await page.getByRole('checkbox', { name: 'VALID', exact: true }).isChecked(), true, 'the default outcome');
      await page.getByRole('textbox', { name: 'URL' }).fill(OPENMETER_URL);
      await page.getByLabel('Token').fill(TOKEN);
      assert.equal(await page.getByLabel('Token').getAttribute('type'), 'password');
      await page.getByRole('radio', { name: 'day', exact: true }).check();
      await page.getByRole('checkbox', { name: 'RATE_LIMITED', exact: true }).check();
      await page.getByRole('textbox', { name: 'Event type' }).fill('api.calls');
      await checkPage(page, `${dialect}-usage-exports-create`);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.waitForURL('**/dashboard/usage-exports');

      const row = page.getByRole('row').filter({ hasText: OPENMETER_URL });
      const today = new Date(Math.floor(Date.now() / PERIOD_MS.day) * PERIOD_MS.day).toISOString().slice(0, 10);
      assert.match(
        (await row.textContent()) ?? '',
        new RegExp(`openmeter.*identity.*day.*VALID, RATE_LIMITED.*api\\.calls.*enabled.*${today} 00:00 UTC`, 's'),
      );
      assert.ok(!(await page.content()).includes(TOKEN), 'the token is nowhere in the page');
      const stored = await s.world.store.db.selectFrom('usage_exports').selectAll().executeTakeFirstOrThrow();
      assert.ok(!JSON.stringify(stored).includes(TOKEN), 'the token is stored encrypted');
      const audit = await s.world.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', stored.id).execute();
      assert.deepEqual(
        audit.map((a) => [a.event, a.actor_type]),
        [['usage.create_export', 'dashboard_session']],
      );
      assert.ok(!JSON.stringify(audit).includes(TOKEN));
      await checkPage(page, `${dialect}-usage-exports`);

      const status = () => row.getByRole('cell').nth(6).textContent();
      assert.equal(await status(), 'enabled');
      await row.getByRole('button', { name: 'Disable' }).click();
      await page.waitForURL('**/dashboard/usage-exports');
      assert.equal(await status(), 'disabled');
      assert.equal(Number((await s.world.store.db.selectFrom('usage_exports').select('enabled').executeTakeFirstOrThrow()).enabled), 0);
      await row.getByRole('button', { name: 'Enable' }).click();
      await page.waitForURL('**/dashboard/usage-exports');
      assert.equal(await status(), 'enabled');

      // Its reports: none yet, then 52 (newest first, 50 a page, as webhook deliveries).
      await page.getByRole('link', { name: OPENMETER_URL }).click();
      await page.waitForURL(`**/dashboard/usage-exports/${stored.id}`);
      assert.equal(await page.getByText('No reports yet').count(), 1);
      const from = Date.UTC(2026, 0, 1);
      await insertReports(s.world, stored.id, 52, from);
      await page.reload();
      const reports = page.getByRole('table', { name: 'Reports' }).getByRole('row');
      assert.equal(await reports.count(), 51); // the header and 50 reports
      assert.match(
        (await reports.nth(1).textContent()) ?? '',
        /2026-02-21 00:00 UTC.*2026-02-22 00:00 UTC\s*failed\s*150\s*2\s*1 \/ 2\s*4\s*503\s*the receiver answered 503/s,
      );
      assert.match((await reports.nth(2).textContent()) ?? '', /2026-02-20 00:00 UTC.*delivered\s*3\s*0\s*1 \/ 1\s*1\s*200/s);
      await checkPage(page, `${dialect}-usage-reports`);
      await page.getByRole('link', { name: 'Next page' }).click();
      await page.waitForURL(`**/dashboard/usage-exports/${stored.id}?cursor=*`);
      assert.equal(await reports.count(), 3);
      assert.match((await reports.nth(2).textContent()) ?? '', /2026-01-01 00:00 UTC/);
      assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0);
      await page.getByRole('link', { name: 'First page' }).click();
      await page.waitForURL(`**/dashboard/usage-exports/${stored.id}`);
      assert.equal(await reports.count(), 51);

      await page.getByRole('link', { name: 'All usage exports' }).click();
      await page.getByRole('row').filter({ hasText: OPENMETER_URL }).getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
      await page.waitForURL('**/dashboard/usage-exports');
      assert.equal(await page.getByRole('row').filter({ hasText: OPENMETER_URL }).count(), 0);
      assert.equal(await count(s.world.store.db, 'usage_exports'), 0);
      assert.equal(await count(s.world.store.db, 'usage_reports'), 0);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('shows the operation’s problems next to the fields, never the token again, and creates a Stripe export once they are fixed', async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/usage-exports?form=create`);
      await page.getByRole('radio', { name: 'stripe', exact: true }).check();
      await page.getByRole('textbox', { name: 'URL' }).fill('https://169.254.169.254/latest');
      await page.getByLabel('Token').fill(TOKEN);
      await page.getByRole('textbox', { name: 'Event type' }).fill('not.for.stripe');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.getByRole('alert').first().waitFor();
      assert.match((await page.locator('#f-eventType-error').textContent()) ?? '', /is for destination "openmeter" only/);
      assert.ok(!(await page.content()).includes(TOKEN), 'a refused form does not echo the token');
      assert.equal(await page.getByLabel('Token').inputValue(), '');
      assert.equal(await page.getByRole('radio', { name: 'stripe', exact: true }).isChecked(), true, 'what was sent stays');
      await checkPage(page, `${dialect}-usage-exports-invalid`);

      await page.getByRole('textbox', { name: 'Event type' }).fill('');
      await page.getByLabel('Token').fill(TOKEN);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      assert.match((await page.locator('#f-url-error').textContent()) ?? '', /link-local/);
      await page.getByRole('textbox', { name: 'Event name' }).fill('bad name!');
      await page.getByRole('textbox', { name: 'URL' }).fill(STRIPE_URL);
      await page.getByLabel('Token').fill(TOKEN);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      assert.match((await page.locator('#f-eventName-error').textContent()) ?? '', /pattern/);
      assert.equal(await count(s.world.store.db, 'usage_exports', ['destination', 'stripe']), 0);

      await page.getByRole('textbox', { name: 'Event name' }).fill('api_requests');
      await page.getByRole('textbox', { name: 'Customer id meta field' }).fill('stripe_customer');
      await page.getByRole('radio', { name: 'key', exact: true }).check();
      await page.getByLabel('Token').fill(TOKEN);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.waitForURL('**/dashboard/usage-exports');
      const row = page.getByRole('row').filter({ hasText: STRIPE_URL });
      assert.match((await row.textContent()) ?? '', /stripe.*key.*hour.*VALID.*api_requests.*meta\.stripe_customer.*enabled/s);
      assert.ok(!(await page.content()).includes(TOKEN));
      assert.deepEqual(errors, []);
      await page.close();
    });
  });

  describe(`dashboard usage exports: security (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const create = async (key: string, url = OPENMETER_URL): Promise<string> => {
      const r = await w.post<{ exportId: string }>('/v1/usage.createExport', { destination: 'openmeter', url, token: TOKEN }, key);
      assert.equal(r.status, 200, r.body);
      return r.json.exportId;
    };
    const enabledOf = async (exportId: string) =>
      Number((await w.store.db.selectFrom('usage_exports').select('enabled').where('id', '=', exportId).executeTakeFirstOrThrow()).enabled);
    const viewerSession = async (email: string) => {
      await setMember(w.store.db, { workspaceId: w.workspaceId, email, role: 'viewer' }, OPERATOR);
      const user = await recordUser(w.store.db, { issuer: 'https://idp.example', subject: email, email });
      return (await openUserSession(w.store.db, { user, operator: false, workspaceId: w.workspaceId, role: 'viewer' })).token;
    };

    it('without a session the pages are the sign-in page and a post changes nothing', async () => {
      const exportId = await create(w.root);
      for (const path of ['/dashboard/usage-exports', `/dashboard/usage-exports/${exportId}`]) {
        const res = await w.app.inject({ method: 'GET', url: path });
        assert.equal(res.statusCode, 401, path);
        assert.match(res.body, /<h1>Sign in<\/h1>/);
      }
      const res = await w.app.inject({ method: 'POST', url: `/dashboard/usage-exports/${exportId}/delete`, headers: FORM, payload: '' });
      assert.equal(res.statusCode, 401);
      assert.equal(await count(w.store.db, 'usage_exports', ['id', exportId]), 1);
      await w.post('/v1/usage.deleteExport', { exportId });
    });

    it('a viewer sees the exports and their reports without a control, and each change of theirs is a 403 that changes nothing', async () => {
      const exportId = await create(w.root);
      const { cookie, csrf, body } = await sessionPage(w, await viewerSession('viewer@example.com'), '/dashboard/usage-exports');
      assert.match(body, new RegExp(OPENMETER_URL));
      assert.doesNotMatch(body, /Create export|<form method="post" action="\/dashboard\/usage-exports|<dialog/);
      assert.ok(!body.includes(TOKEN));
      const reports = await w.app.inject({ method: 'GET', url: `/dashboard/usage-exports/${exportId}`, headers: { cookie } });
      assert.equal(reports.statusCode, 200);
      const before = await snapshot(w, ['usage_exports', 'usage_reports', 'audit_logs']);
      for (const [url, fields] of [
        ['/dashboard/usage-exports', { destination: 'openmeter', url: OPENMETER_URL, token: TOKEN }],
        [`/dashboard/usage-exports/${exportId}/disable`, {}],
        [`/dashboard/usage-exports/${exportId}/delete`, {}],
      ] as Array<[string, Record<string, string>]>) {
        const res = await w.app.inject({ method: 'POST', url, headers: { ...FORM, cookie }, payload: form({ _csrf: csrf, ...fields }) });
        assert.equal(res.statusCode, 403, url);
      }
      assert.deepEqual(await snapshot(w, ['usage_exports', 'usage_reports', 'audit_logs']), before);
      assert.equal(await enabledOf(exportId), 1);
      await w.post('/v1/usage.deleteExport', { exportId });
    });

    it('another workspace’s export is not listed, its reports page is a 404, and posts to it are 404s that change nothing', async () => {
      const other = await w.otherWorkspace();
      const theirs = await create(other.root, 'https://93.184.216.34/theirs/api/v1/events');
      const { cookie, csrf } = await signInWithLink(w, undefined, '/dashboard/usage-exports');
      const list = await w.app.inject({ method: 'GET', url: '/dashboard/usage-exports', headers: { cookie } });
      assert.equal(list.statusCode, 200);
      assert.doesNotMatch(list.body, new RegExp(`${theirs}|/theirs/`));
      const page = await w.app.inject({ method: 'GET', url: `/dashboard/usage-exports/${theirs}`, headers: { cookie } });
      assert.equal(page.statusCode, 404);
      assert.doesNotMatch(page.body, /theirs/);
      const before = await snapshot(w, ['usage_exports', 'audit_logs']);
      for (const action of ['disable', 'enable', 'delete']) {
        const res = await w.app.inject({
          method: 'POST',
          url: `/dashboard/usage-exports/${theirs}/${action}`,
          headers: { ...FORM, cookie },
          payload: form({ _csrf: csrf }),
        });
        assert.equal(res.statusCode, 404, action);
      }
      assert.deepEqual(await snapshot(w, ['usage_exports', 'audit_logs']), before);
      assert.equal(await enabledOf(theirs), 1);
    });

    it('a post without the CSRF token is a 403; input with a NUL character is a 400; neither writes anything', async () => {
      const { cookie, csrf } = await signInWithLink(w, undefined, '/dashboard/usage-exports');
      const before = await snapshot(w, ['usage_exports', 'audit_logs']);
      const fields = { destination: 'openmeter', url: OPENMETER_URL, token: TOKEN };
      const post = (payload: Record<string, string>) =>
        w.app.inject({ method: 'POST', url: '/dashboard/usage-exports', headers: { ...FORM, cookie }, payload: form(payload) });
      assert.equal((await post(fields)).statusCode, 403);
      assert.equal((await post({ ...fields, _csrf: csrf, token: 'a\0b' })).statusCode, 400);
      assert.deepEqual(await snapshot(w, ['usage_exports', 'audit_logs']), before);
    });

    it('the eleventh export is refused with the operation’s 412, shown as the dashboard shows a refused request', async () => {
      const { cookie, csrf } = await signInWithLink(w, undefined, '/dashboard/usage-exports');
      const post = () =>
        w.app.inject({
          method: 'POST',
          url: '/dashboard/usage-exports',
          headers: { ...FORM, cookie },
          payload: form({ _csrf: csrf, destination: 'openmeter', url: OPENMETER_URL, token: TOKEN, period: 'day' }),
        });
      const existing = await count(w.store.db, 'usage_exports', ['workspace_id', w.workspaceId]);
      for (let i = existing; i < 10; i++) assert.equal((await post()).statusCode, 303);
      const refused = await post();
      assert.equal(refused.statusCode, 412);
      assert.match(refused.body, /<h1>Request failed<\/h1>/);
      assert.match(refused.body, /has 10 usage exports, the most it may/);
      assert.equal(await count(w.store.db, 'usage_exports', ['workspace_id', w.workspaceId]), 10);
      assert.ok(!refused.body.includes(TOKEN));
    });
  });
}
