import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { DIALECTS } from '../helpers/harness.ts';
import { checkPage, dashboardWorld, startWithBrowser, loopbackContext, type DashboardWorld, closeBrowser } from '../helpers/browser.ts';
import { freePort, loopbackProvider, providerLogin, ssoSettings, type LoopbackProvider } from '../helpers/oidc-provider.ts';
import { count } from '../helpers/rows.ts';

const OPERATOR_EMAIL = 'ops@example.com';
const SUPPORT_EMAIL = 'support@example.com';

for (const dialect of DIALECTS) {
  describe(`dashboard single sign-on, members and viewers (${dialect})`, () => {
    let w: DashboardWorld;
    let browser: Browser;
    let idp: LoopbackProvider;
    before(async () => {
      idp = await loopbackProvider();
      idp.accounts.set('ops', { email: OPERATOR_EMAIL, emailVerified: true });
      idp.accounts.set('support', { email: SUPPORT_EMAIL, emailVerified: true });
      const port = await freePort();
      const publicUrl = `http://127.0.0.1:${port}`;
      await idp.start(`${publicUrl}/dashboard/oidc/callback`);
      [w, browser] = await startWithBrowser(
        dashboardWorld(dialect, { app: { publicUrl, oidc: ssoSettings(idp.issuer, [OPERATOR_EMAIL]) } }, port),
        (s) => s.close(),
      );
    });
    after(async () => {
      await closeBrowser(browser);
      await w?.close();
      await idp?.close();
    });

    const context = () => loopbackContext(browser);
    /** "Sign in with SSO" on the sign-in page, then the provider's login as `login`. */
    const ssoSignIn = async (page: Page, login: string) => {
      await page.goto(`${w.baseUrl}/dashboard/sign-in`);
      await page.getByRole('button', { name: 'Sign in with SSO' }).click();
      await page.waitForURL((u) => !u.href.startsWith(`${w.baseUrl}/dashboard/sign-in`));
      // Signed in at the provider already (same browser): it sends the browser straight back.
      if (page.url().startsWith(idp.issuer)) await providerLogin(page, login);
      await page.waitForURL(`${w.baseUrl}/dashboard/**`);
    };
    const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();

    it('operator, no access, viewer, forged change, promotion to admin, removal: each step as the user sees it', async () => {
      const ops = await (await context()).newPage();
      await checkPageAfter(ops, () => ssoSignIn(ops, 'ops'), `${dialect}-sso-operator`);
      assert.equal(await heading(ops), 'Workspaces');

      const support = await (await context()).newPage();
      await ssoSignIn(support, 'support');
      assert.equal(await heading(support), 'No access');
      assert.match((await support.getByRole('alert').textContent()) ?? '', new RegExp(SUPPORT_EMAIL));
      await checkPage(support, `${dialect}-sso-no-access`);
      assert.equal((await support.context().cookies()).filter((c) => c.name === 'keyhold_session').length, 0);

      // The operator opens the workspace and adds them as a viewer on the Members page.
      await ops.getByRole('button', { name: 'Open test' }).click();
      await ops.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Members' }).click();
      await ops.getByLabel('Email').fill(SUPPORT_EMAIL);
      await ops.getByLabel('Role', { exact: true }).selectOption('viewer');
      await ops.getByRole('button', { name: 'Add member' }).click();
      await ops.getByRole('cell', { name: SUPPORT_EMAIL, exact: true }).waitFor();
      await checkPage(ops, `${dialect}-sso-members`);

      const apiId = await w.createApi('billing');
      await w.createKey({ apiId, name: 'first key' });
      await ssoSignIn(support, 'support');
      assert.equal(await heading(support), 'APIs');
      assert.equal(await support.getByRole('button', { name: 'Create API' }).count(), 0);
      await support.getByRole('link', { name: 'billing' }).click();
      await support.getByText('first key').first().waitFor();
      assert.equal(await support.locator('form[method="post"]:not([action="/dashboard/sign-out"])').count(), 0);
      await checkPage(support, `${dialect}-sso-viewer-api`);

      // A forged change request with the session's valid CSRF token: 403, nothing changes.
      const apis = await count(w.store.db, 'apis');
      const csrf = await support.locator('input[name="_csrf"]').first().inputValue();
      const forged = await support.context().request.post(`${w.baseUrl}/dashboard/apis`, {
        form: { _csrf: csrf, name: 'forged' },
        headers: { origin: w.baseUrl, 'sec-fetch-site': 'same-origin' },
      });
      assert.equal(forged.status(), 403);
      assert.match(await forged.text(), /viewer/);
      assert.equal(await count(w.store.db, 'apis'), apis);

      // Promoted to admin: the same session creates an API.
      await ops.getByRole('combobox', { name: `Role of ${SUPPORT_EMAIL}` }).selectOption('admin');
      await ops.getByRole('button', { name: `Save role of ${SUPPORT_EMAIL}` }).click();
      await ops.waitForURL('**/dashboard/members');
      await support.goto(`${w.baseUrl}/dashboard/apis`);
      await support.getByRole('button', { name: 'Create API' }).click();
      await support.getByLabel('Name').fill('made by support');
      await support.getByRole('button', { name: 'Create' }).click();
      await support.getByRole('heading', { name: 'made by support' }).waitFor();
      const audit = await w.store.db
        .selectFrom('audit_logs')
        .select(['event', 'actor_type', 'actor_id'])
        .where('event', '=', 'api.create')
        .execute();
      assert.ok(
        audit.some((a) => a.actor_type === 'dashboard_user' && a.actor_id === SUPPORT_EMAIL),
        JSON.stringify(audit),
      );

      // Removed: their open session is signed out on its next request.
      await ops.getByRole('row').filter({ hasText: SUPPORT_EMAIL }).getByRole('button', { name: 'Remove' }).click();
      await ops.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
      await ops.waitForURL('**/dashboard/members');
      await support.goto(`${w.baseUrl}/dashboard/apis`);
      assert.equal(await heading(support), 'Sign in');
    });
  });
}

async function checkPageAfter(page: Page, act: () => Promise<void>, name: string): Promise<void> {
  await act();
  await checkPage(page, name);
}
