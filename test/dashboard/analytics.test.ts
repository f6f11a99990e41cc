import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { DIALECTS, OPERATOR } from '../helpers/harness.ts';
import { checkPage, dashboardSuite, watchConsole } from '../helpers/browser.ts';
import { CSRF_FIELD } from '../../src/http/dashboard/session-cookie.ts';
import { setMember } from '../../src/services/dashboard/members.ts';
import { openUserSession, recordUser } from '../../src/services/dashboard/sso-sessions.ts';
import { VerificationRecorder } from '../../src/services/verification/verification-recorder.ts';

const DAY = 24 * 3_600_000;

/** The cells of a table's body rows, trimmed. */
async function cells(page: Page, name: string): Promise<string[][]> {
  const rows = page.getByRole('table', { name, exact: true }).locator('tbody tr');
  const out: string[][] = [];
  for (let i = 0; i < (await rows.count()); i++) out.push((await rows.nth(i).locator('td').allTextContents()).map((t) => t.trim()));
  return out;
}

/** The sums of a table's number columns (every column but the first, a time). */
const sums = (rows: string[][]): number[] => rows.reduce<number[]>((acc, row) => row.slice(1).map((v, i) => (acc[i] ?? 0) + Number(v)), []);

/** The page's totals as one line: `Verifications 5 Valid 4 Not valid 1 Credits spent 4`. */
const totals = async (page: Page): Promise<string> =>
  ((await page.getByRole('group', { name: /^Totals/ }).innerText()) ?? '').replace(/\s+/g, ' ').trim();

for (const dialect of DIALECTS) {
  describe(`dashboard Analytics (${dialect})`, () => {
    const s = dashboardSuite(dialect);
    let apiId: string;
    let otherApiId: string;
    let keyId: string;
    let identityId: string;
    const analytics = () => `${s.world.baseUrl}/dashboard/apis/${apiId}/analytics`;

    /** keys.verifyKey over real HTTP, with tags, as a client calls it. */
    const verify = async (key: string, tags: string[]) => {
      const res = await fetch(`${s.world.baseUrl}/v1/keys.verifyKey`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key, tags }),
      });
      assert.equal(res.status, 200);
      return ((await res.json()) as { code: string }).code;
    };
    const recorded = async (api: string) =>
      Number(
        (
          await s.world.store.db
            .selectFrom('analytics_key_verifications_per_minute')
            .select((eb) => eb.fn.sum<number | string>('count').as('n'))
            .where('key_space_id', '=', api)
            .executeTakeFirst()
        )?.n ?? 0,
      );

    before(async () => {
      apiId = await s.world.createApi('payments');
      otherApiId = await s.world.createApi('elsewhere');
      const first = await s.world.createKey({ apiId, name: 'checkout key', externalId: 'acme', remaining: 100 });
      const second = await s.world.createKey({ apiId, name: 'second key', remaining: 1 });
      const elsewhere = await s.world.createKey({ apiId: otherApiId, name: 'elsewhere key' });
      keyId = first.keyId;
      identityId = (await s.world.store.db.selectFrom('keys').select('identity_id').where('id', '=', keyId).executeTakeFirstOrThrow())
        .identity_id!;
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push(await verify(first.key, ['route=/pay', 'eu']));
      codes.push(await verify(second.key, ['eu']), await verify(second.key, ['eu']));
      assert.deepEqual(codes, ['VALID', 'VALID', 'VALID', 'VALID', 'USAGE_EXCEEDED']);
      assert.equal(await verify(elsewhere.key, ['eu']), 'VALID');
      // Five expired verifications three days ago: in the last 7 and 30 days, not in the last 24 hours.
      const past = new VerificationRecorder(s.world.store.db);
      for (let i = 0; i < 5; i++) {
        past.record({
          keyId,
          workspaceId: s.world.workspaceId,
          apiId,
          identityId,
          externalId: 'acme',
          code: 'EXPIRED',
          time: Date.now() - 3 * DAY,
        });
      }
      await past.flush();
      // The server's recorder writes about once a second.
      const deadline = Date.now() + 10_000;
      while ((await recorded(apiId)) < 10 || (await recorded(otherApiId)) < 1) {
        assert.ok(Date.now() < deadline, 'the verifications were recorded within 10 s');
        await new Promise((r) => setTimeout(r, 100));
      }
    });

    it("shows an API's verifications by outcome, top keys, identities and tags and credits; the range switches", async () => {
      const { page, errors } = await s.signedIn();
      await page.getByRole('link', { name: 'payments' }).click();
      await page.getByRole('link', { name: 'Analytics' }).click();
      await page.waitForURL(`**/dashboard/apis/${apiId}/analytics`);
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Analytics: payments');
      assert.equal(await page.getByRole('link', { name: 'Last 24 hours' }).getAttribute('aria-current'), 'true');
      assert.equal(await totals(page), 'Verifications 5 Valid 4 Not valid 1 Credits spent 4');
      assert.match((await page.locator('#verifications-over-time-summary').textContent()) ?? '', /valid 4, usage exceeded 1\./);
      assert.ok((await page.getByRole('img', { name: 'Verifications over time' }).locator('rect').count()) >= 2);
      // Valid, usage exceeded, total: in one row, or two when the verifications straddled an hour.
      const hours = await cells(page, 'Verifications per hour');
      assert.match(hours[0][0], /^\d{4}-\d\d-\d\d \d\d:00 UTC$/);
      assert.deepEqual(sums(hours), [4, 1, 5]);
      assert.deepEqual(await cells(page, 'Top keys'), [
        ['checkout key', '3', '3', '3'],
        ['second key', '2', '1', '1'],
      ]);
      assert.deepEqual(await cells(page, 'Top identities'), [['acme', '3', '3', '3']]);
      assert.deepEqual(await cells(page, 'Top tags'), [
        ['eu', '5'],
        ['route=/pay', '3'],
      ]);
      assert.match((await page.locator('#top-tags-summary').textContent()) ?? '', /eu 5, route=\/pay 3/);
      assert.deepEqual(sums(await cells(page, 'Credits spent per hour')), [4]);
      await checkPage(page, `${dialect}-analytics-api`);

      await page.getByRole('link', { name: 'Last 7 days' }).click();
      await page.waitForURL('**/analytics?range=7d');
      assert.equal(await totals(page), 'Verifications 10 Valid 4 Not valid 6 Credits spent 4');
      // Valid, usage exceeded, expired, total: three days ago first, then now.
      const week = await cells(page, 'Verifications per hour');
      assert.deepEqual(week[0].slice(1), ['0', '0', '5', '5']);
      assert.deepEqual(sums(week.slice(1)), [4, 1, 0, 5]);
      assert.deepEqual((await cells(page, 'Top keys'))[0], ['checkout key', '8', '3', '3']);
      await checkPage(page, `${dialect}-analytics-api-7d`);

      await page.getByRole('link', { name: 'Last hour' }).click();
      await page.waitForURL('**/analytics?range=1h');
      assert.equal(await totals(page), 'Verifications 5 Valid 4 Not valid 1 Credits spent 4');
      assert.match((await cells(page, 'Verifications per minute'))[0][0], /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);

      await page.getByRole('link', { name: 'Last 30 days' }).click();
      await page.waitForURL('**/analytics?range=30d');
      assert.equal(await totals(page), 'Verifications 10 Valid 4 Not valid 6 Credits spent 4');
      const days = await cells(page, 'Verifications per day');
      assert.deepEqual(days[0].slice(1), ['0', '0', '5', '5']);
      assert.deepEqual(sums(days), [4, 1, 5, 10]);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('the query box answers as POST /v2/analytics.getVerifications does, over this API only, and shows its errors', async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${analytics()}?range=7d`);
      const sql = page.getByRole('textbox', { name: 'SQL' });
      assert.match(await sql.inputValue(), /FROM key_verifications_v1/);
      const query =
        'SELECT outcome, count(*) AS n, sum(spent_credits) AS credits FROM key_verifications_v1 GROUP BY outcome ORDER BY outcome';
      await sql.fill(query);
      await page.getByRole('button', { name: 'Run query' }).click();
      await page.getByRole('table', { name: 'Query result' }).waitFor();
      assert.deepEqual(await page.getByRole('table', { name: 'Query result' }).getByRole('columnheader').allTextContents(), [
        'outcome',
        'n',
        'credits',
      ]);
      const shown = await cells(page, 'Query result');
      assert.deepEqual(shown, [
        ['EXPIRED', '5', '0'],
        ['USAGE_EXCEEDED', '1', '0'],
        ['VALID', '4', '4'],
      ]);
      // The API answers the same rows to a root key that may read this API's analytics only.
      const scoped = await s.world.rootKey([`api.${apiId}.read_analytics`]);
      const res = await fetch(`${s.world.baseUrl}/v2/analytics.getVerifications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${scoped}` },
        body: JSON.stringify({ query }),
      });
      const data = ((await res.json()) as { data: Array<Record<string, unknown>> }).data;
      assert.deepEqual(
        data.map((r) => [r.outcome, r.n, r.credits].map(String)),
        shown,
      );
      assert.equal(await sql.inputValue(), query, 'the query stays in the box');
      assert.equal(await page.getByRole('link', { name: 'Last 7 days' }).getAttribute('aria-current'), 'true', 'and the range');
      assert.match(await page.getByRole('status').first().innerText(), /3 rows/);
      await checkPage(page, `${dialect}-analytics-query`);

      // Whatever it names, a query reads this API's rows only.
      await sql.fill(`SELECT count(*) AS n FROM key_verifications_v1 WHERE key_space_id = '${otherApiId}' OR api_id != '${apiId}'`);
      await page.getByRole('button', { name: 'Run query' }).click();
      await page.getByRole('table', { name: 'Query result' }).waitFor();
      assert.deepEqual(await cells(page, 'Query result'), [['0']]);

      await sql.fill('SELECT version() AS v');
      await page.getByRole('button', { name: 'Run query' }).click();
      const alert = page.locator('#query-error');
      await alert.waitFor();
      const refused = await fetch(`${s.world.baseUrl}/v2/analytics.getVerifications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${scoped}` },
        body: JSON.stringify({ query: 'SELECT version() AS v' }),
      });
      const error = ((await refused.json()) as { error: { detail: string; type: string } }).error;
      const text = (await alert.innerText()).replace(/\s+/g, ' ');
      assert.ok(text.includes(error.detail), `${text} shows ${error.detail}`);
      assert.ok(text.includes(error.type), `${text} shows ${error.type}`);
      assert.match(error.type, /invalid_analytics_function$/);
      assert.equal(await page.getByRole('table', { name: 'Query result' }).count(), 0);
      await checkPage(page, `${dialect}-analytics-query-error`);

      // Without the form's CSRF token: 403, and no query runs.
      const forged = await page.request.post(analytics(), { form: { query: 'SELECT 1 AS one' } });
      assert.equal(forged.status(), 403);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('a viewer sees the Analytics page and runs queries, and still changes nothing', async () => {
      const email = 'viewer@example.com';
      await setMember(s.world.store.db, { workspaceId: s.world.workspaceId, email, role: 'viewer' }, OPERATOR);
      const user = await recordUser(s.world.store.db, { issuer: 'https://idp.example', subject: email, email });
      const { token } = await openUserSession(s.world.store.db, {
        user,
        operator: false,
        workspaceId: s.world.workspaceId,
        role: 'viewer',
      });
      const context = await s.browser.newContext();
      await context.addCookies([
        { name: 'keyhold_session', value: token, domain: '127.0.0.1', path: '/dashboard', httpOnly: true, sameSite: 'Strict' },
      ]);
      const page = await context.newPage();
      const errors = watchConsole(page);
      await page.goto(analytics());
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Analytics: payments');
      assert.equal(await totals(page), 'Verifications 5 Valid 4 Not valid 1 Credits spent 4');
      assert.deepEqual(
        await page.locator('main form[method="post"]').evaluateAll((forms) => forms.map((f) => f.getAttribute('action'))),
        [`/dashboard/apis/${apiId}/analytics#query`],
        'the query box is the only form that posts',
      );
      await page
        .getByRole('textbox', { name: 'SQL' })
        .fill('SELECT key_id, count(*) AS n FROM key_verifications_v1 GROUP BY key_id ORDER BY n DESC');
      await page.getByRole('button', { name: 'Run query' }).click();
      await page.getByRole('table', { name: 'Query result' }).waitFor();
      assert.deepEqual(
        (await cells(page, 'Query result')).map((r) => r[1]),
        ['8', '2'],
      );
      await checkPage(page, `${dialect}-analytics-viewer`);
      // Its other posts stay refused, with the session's valid CSRF token.
      const csrf = await page.locator(`input[name="${CSRF_FIELD}"]`).first().inputValue();
      const deleting = await page.request.post(`${s.world.baseUrl}/dashboard/apis/${apiId}/delete`, { form: { [CSRF_FIELD]: csrf } });
      assert.equal(deleting.status(), 403);
      assert.equal(
        (await s.world.store.db.selectFrom('apis').select('deleted_at').where('id', '=', apiId).executeTakeFirstOrThrow()).deleted_at,
        null,
      );
      assert.deepEqual(errors, []);
      await context.close();
    });

    it("a key's and an identity's Analytics pages, from their pages", async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/keys/${keyId}`);
      await page.getByRole('link', { name: 'Analytics' }).click();
      await page.waitForURL(`**/dashboard/keys/${keyId}/analytics`);
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Analytics: key checkout key');
      assert.equal(await totals(page), 'Verifications 3 Valid 3 Not valid 0 Credits spent 3');
      assert.equal(await page.getByRole('heading', { name: 'Top keys' }).count(), 0);
      assert.equal(await page.getByRole('heading', { name: 'Query' }).count(), 0, 'the query box is on the API’s page');
      assert.deepEqual(
        (await cells(page, 'Top tags')).map((r) => r[1]),
        ['3', '3'],
      );
      await checkPage(page, `${dialect}-analytics-key`);
      await page.getByRole('link', { name: 'Last 30 days' }).click();
      assert.equal(await totals(page), 'Verifications 8 Valid 3 Not valid 5 Credits spent 3');

      await page.goto(`${s.world.baseUrl}/dashboard/identities/${identityId}`);
      await page.getByRole('link', { name: 'Analytics' }).click();
      await page.waitForURL(`**/dashboard/identities/${identityId}/analytics`);
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Analytics: identity acme');
      assert.equal(await totals(page), 'Verifications 3 Valid 3 Not valid 0 Credits spent 3');
      assert.deepEqual(await cells(page, 'Top keys'), [['checkout key', '3', '3', '3']]);
      assert.equal(await page.getByRole('heading', { name: 'Top identities' }).count(), 0);
      await checkPage(page, `${dialect}-analytics-identity`);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it("another workspace's session gets the not-found page for the API, key and identity, and its query is refused; no session, the sign-in page", async () => {
      const other = await s.world.otherWorkspace();
      const { page } = await s.signedIn(other.workspaceId);
      for (const path of [`apis/${apiId}/analytics`, `keys/${keyId}/analytics`, `identities/${identityId}/analytics`]) {
        const res = await page.goto(`${s.world.baseUrl}/dashboard/${path}?range=7d`);
        assert.equal(res?.status(), 404, path);
        await page.getByRole('heading', { name: 'Not found' }).waitFor();
        assert.doesNotMatch(await page.content(), /checkout key|acme|route=\/pay/);
      }
      await checkPage(page, `${dialect}-analytics-not-found`);
      await page.goto(`${s.world.baseUrl}/dashboard/apis`);
      const csrf = await page.locator(`input[name="${CSRF_FIELD}"]`).first().inputValue();
      const refused = await page.request.post(analytics(), {
        form: { [CSRF_FIELD]: csrf, query: 'SELECT count(*) AS n FROM key_verifications_v1' },
      });
      assert.equal(refused.status(), 404);
      assert.doesNotMatch(await refused.text(), /Query result/);
      await page.close();
      // Without a session: the sign-in page, for the page and the query alike.
      assert.equal((await fetch(analytics())).status, 401);
      const anonymous = await fetch(analytics(), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ query: 'SELECT 1 AS one' }),
      });
      assert.equal(anonymous.status, 401);
      assert.doesNotMatch(await anonymous.text(), /Query result/);
    });
  });
}
