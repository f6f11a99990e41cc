import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { DIALECTS } from '../helpers/harness.ts';
import { checkPage, dashboardWorld, startWithBrowser, loopbackContext, type DashboardWorld, closeBrowser } from '../helpers/browser.ts';
import { freePort, loopbackProvider, providerLogin, ssoSettings, type LoopbackProvider, type Tamper } from '../helpers/oidc-provider.ts';
import { count } from '../helpers/rows.ts';

const OPERATOR_EMAIL = 'ops@example.com';

for (const dialect of DIALECTS) {
  describe(`dashboard single sign-on refusals (${dialect})`, () => {
    let w: DashboardWorld;
    let down: DashboardWorld;
    let browser: Browser;
    let idp: LoopbackProvider;
    before(async () => {
      idp = await loopbackProvider();
      idp.accounts.set('ops', { email: OPERATOR_EMAIL, emailVerified: true });
      idp.accounts.set('unverified', { email: OPERATOR_EMAIL, emailVerified: false });
      const port = await freePort();
      const publicUrl = `http://127.0.0.1:${port}`;
      await idp.start(`${publicUrl}/dashboard/oidc/callback`);
      // A second server whose provider is down: nothing listens at its issuer.
      const nowhere = `http://127.0.0.1:${await freePort()}`;
      const worlds = Promise.all([
        dashboardWorld(dialect, { app: { publicUrl, oidc: ssoSettings(idp.issuer, [OPERATOR_EMAIL]) } }, port),
        dashboardWorld(dialect, { app: { oidc: ssoSettings(nowhere, [OPERATOR_EMAIL]) } }),
      ]);
      [[w, down], browser] = await startWithBrowser(worlds, (both) => Promise.all(both.map((s) => s.close())));
    });
    after(async () => {
      await closeBrowser(browser);
      await Promise.all([w?.close(), down?.close()]);
      await idp?.close();
    });

    const page = async (): Promise<Page> => (await loopbackContext(browser)).newPage();
    /** Runs a sign-in up to the provider's redirect back, which is held: its URL is returned, not loaded. */
    const callbackOf = async (p: Page, login: string): Promise<string> => {
      idp.hold = true;
      try {
        await p.goto(`${w.baseUrl}/dashboard/sign-in`);
        await p.getByRole('button', { name: 'Sign in with SSO' }).click();
        await providerLogin(p, login);
        await p.getByRole('heading', { name: 'held' }).waitFor();
        return idp.heldCallback ?? '';
      } finally {
        idp.hold = false;
      }
    };
    /** The page is a refusal with this reason, and no session exists or was set. */
    const refused = async (p: Page, name: string, reason: RegExp, sessionsBefore: number) => {
      assert.match((await p.getByRole('alert').textContent()) ?? '', reason);
      assert.equal((await p.context().cookies()).filter((c) => c.name === 'keyhold_session').length, 0);
      assert.equal(await count(w.store.db, 'dashboard_sessions'), sessionsBefore);
      await checkPage(p, `${dialect}-sso-refused-${name}`);
    };

    it('a callback with a wrong state is refused', async () => {
      const sessions = await count(w.store.db, 'dashboard_sessions');
      const p = await page();
      const url = new URL(await callbackOf(p, 'ops'));
      url.searchParams.set('state', 'not-the-state');
      await p.goto(url.href);
      await refused(p, 'state', /Sign-in refused: .*state/i, sessions);
    });

    it('a replayed code is refused, in the browser that used it and in one that has its pending sign-in', async () => {
      const p = await page();
      const url = await callbackOf(p, 'ops');
      const pending = (await p.context().cookies()).filter((c) => c.name === 'keyhold_oidc');
      await p.goto(url);
      assert.equal(await p.getByRole('heading', { level: 1 }).textContent(), 'Workspaces');
      const sessions = await count(w.store.db, 'dashboard_sessions');
      await p.goto(url);
      await p.context().clearCookies({ name: 'keyhold_session' });
      await refused(p, 'replay-same', /Sign-in refused: this sign-in was not started/, sessions);
      const other = await page();
      await other.context().addCookies(pending);
      await other.goto(url);
      await refused(other, 'replay-code', /Sign-in refused: the provider refused the code \(invalid_grant/, sessions);
    });

    for (const [tamper, reason] of [
      ['audience', /Sign-in refused: .*"aud"/],
      ['expired', /Sign-in refused: .*"exp"/],
    ] as Array<[Tamper, RegExp]>) {
      it(`an ID token ${tamper === 'audience' ? 'for another audience' : 'that has expired'} (validly signed) is refused`, async () => {
        const sessions = await count(w.store.db, 'dashboard_sessions');
        const p = await page();
        idp.tamper = tamper;
        try {
          await p.goto(await callbackOf(p, 'ops'));
        } finally {
          idp.tamper = 'none';
        }
        await refused(p, tamper, reason, sessions);
      });
    }

    it('an operator email the provider has not verified is let in as nothing', async () => {
      const sessions = await count(w.store.db, 'dashboard_sessions');
      const p = await page();
      await p.goto(await callbackOf(p, 'unverified'));
      assert.equal(await p.getByRole('heading', { level: 1 }).textContent(), 'No access');
      await refused(p, 'unverified', /has not verified the email ops@example\.com/, sessions);
      assert.equal(await count(w.store.db, 'dashboard_users'), 1);
    });

    it('a provider that is down: the server started, readiness says so, "Sign in with SSO" is a clear 503', async () => {
      const ready = await down.get<{ status: string; checks: { oidc?: string } }>('/v1/readiness', {}, null);
      assert.deepEqual([ready.status, ready.json.status, ready.json.checks.oidc], [200, 'degraded', 'down']);
      const p = await page();
      await p.goto(`${down.baseUrl}/dashboard/sign-in`);
      const answer = p.waitForResponse((r) => r.url().includes('/dashboard/oidc/start'));
      await p.getByRole('button', { name: 'Sign in with SSO' }).click();
      assert.equal((await answer).status(), 503);
      assert.equal(await p.getByRole('heading', { level: 1 }).textContent(), 'Sign-in provider unavailable');
      assert.equal((await p.context().cookies()).length, 0);
      assert.equal(await count(down.store.db, 'dashboard_sessions'), 0);
      await checkPage(p, `${dialect}-sso-provider-down`);
      // Sign-in links still work while the provider is down.
      await p.goto(await down.link());
      assert.equal(await p.getByRole('heading', { level: 1 }).textContent(), 'APIs');
      const upReady = await w.get<{ checks: { oidc?: string } }>('/v1/readiness', {}, null);
      assert.equal(upReady.json.checks.oidc, 'up');
    });
  });
}
