import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { DIALECTS } from '../helpers/harness.ts';
import { dashboardWorld, startWithBrowser, type DashboardWorld, closeBrowser } from '../helpers/browser.ts';
import { freePort, loopbackProvider, providerLogin, ssoSettings, type ClaimsIn, type LoopbackProvider } from '../helpers/oidc-provider.ts';
import { count } from '../helpers/rows.ts';

const OPERATOR_EMAIL = 'ops@example.com';

// A certified provider in its default configuration puts `email`, `email_verified` and custom claims such as
// `groups` at its UserInfo endpoint only (OpenID Connect Core §5.4); configured otherwise, in the ID token.
for (const dialect of DIALECTS) {
  for (const claimsIn of ['userinfo', 'id-token'] as ClaimsIn[]) {
    describe(`single sign-on with the claims in the ${claimsIn === 'userinfo' ? 'UserInfo answer' : 'ID token'} (${dialect})`, () => {
      let w: DashboardWorld;
      let browser: Browser;
      let idp: LoopbackProvider;
      before(async () => {
        idp = await loopbackProvider(claimsIn);
        idp.accounts.set('ops', { email: OPERATOR_EMAIL, emailVerified: true });
        idp.accounts.set('grouped', { email: 'lead@example.com', emailVerified: true, groups: ['keyhold-operators'] });
        idp.accounts.set('unverified', { email: OPERATOR_EMAIL, emailVerified: false });
        const port = await freePort();
        const publicUrl = `http://127.0.0.1:${port}`;
        await idp.start(`${publicUrl}/dashboard/oidc/callback`);
        const oidc = { ...ssoSettings(idp.issuer, [OPERATOR_EMAIL]), scopes: 'openid email profile groups' };
        [w, browser] = await startWithBrowser(dashboardWorld(dialect, { app: { publicUrl, oidc } }, port), (s) => s.close());
      });
      after(async () => {
        await closeBrowser(browser);
        await w?.close();
        await idp?.close();
      });

      /** A fresh browser (no session at the provider) signs in as `login`; the page Keyhold answered with. */
      const signIn = async (login: string): Promise<Page> => {
        const context = await browser.newContext();
        await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (r) => r.abort());
        const page = await context.newPage();
        await page.goto(`${w.baseUrl}/dashboard/sign-in`);
        await page.getByRole('button', { name: 'Sign in with SSO' }).click();
        await providerLogin(page, login);
        await page.waitForURL(`${w.baseUrl}/dashboard/**`);
        return page;
      };
      const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();
      const sessionCookies = async (page: Page) => (await page.context().cookies()).filter((c) => c.name === 'keyhold_session').length;

      it('a verified operator email signs in as the operator', async () => {
        const page = await signIn('ops');
        assert.equal(await heading(page), 'Workspaces');
        assert.equal(await sessionCookies(page), 1);
      });

      it('the operator group signs in as the operator', async () => {
        const page = await signIn('grouped');
        assert.equal(await heading(page), 'Workspaces');
      });

      it('an email the provider has not verified is let in as nothing', async () => {
        const sessions = await count(w.store.db, 'dashboard_sessions');
        const page = await signIn('unverified');
        assert.equal(await heading(page), 'No access');
        assert.match((await page.getByRole('alert').textContent()) ?? '', /has not verified the email ops@example\.com/);
        assert.equal(await sessionCookies(page), 0);
        assert.equal(await count(w.store.db, 'dashboard_sessions'), sessions);
      });

      if (claimsIn === 'userinfo') {
        it("a UserInfo answer for another subject than the ID token's is refused, and opens no session", async () => {
          const [sessions, users] = [await count(w.store.db, 'dashboard_sessions'), await count(w.store.db, 'dashboard_users')];
          idp.tamper = 'userinfo-sub';
          let page: Page;
          try {
            page = await signIn('ops');
          } finally {
            idp.tamper = 'none';
          }
          assert.match(
            (await page.getByRole('alert').textContent()) ?? '',
            /Sign-in refused: the provider's UserInfo answer was refused: .*sub/,
          );
          assert.equal(await sessionCookies(page), 0);
          assert.equal(await count(w.store.db, 'dashboard_sessions'), sessions);
          assert.equal(await count(w.store.db, 'dashboard_users'), users);
        });
      }
    });
  }
}
