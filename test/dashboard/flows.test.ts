import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import { checkPage, dashboardSuite, watchConsole } from '../helpers/browser.ts';

const SECTIONS = [
  'APIs',
  'Members',
  'Root keys',
  'Roles',
  'Permissions',
  'Identities',
  'Rate limits',
  'Migrations',
  'Webhooks',
  'Usage exports',
  'Audit log',
];

for (const dialect of DIALECTS) {
  describe(`dashboard sign-in, audit log and operator (${dialect})`, () => {
    const s = dashboardSuite(dialect);

    /** A link from the CLI, as an operator gets one. */
    const cliLink = async (...args: string[]): Promise<string> => {
      const w = s.world;
      const r = await runCli<{ url: string }>({ DATABASE_URL: w.url, KEYHOLD_PUBLIC_URL: w.baseUrl }, [
        'dashboard',
        'link',
        ...args,
        '--json',
      ]);
      assert.equal(r.code, 0, JSON.stringify(r));
      return r.json.url;
    };

    it('a link from `keyhold dashboard link` signs in once; the nav names every section; Sign out ends the session', async () => {
      const [w, browser] = [s.world, s.browser];
      const url = await cliLink('--workspace', w.workspaceId);
      const context = await browser.newContext();
      const page = await context.newPage();
      const errors = watchConsole(page);
      await page.goto(url);
      assert.equal(page.url(), `${w.baseUrl}/dashboard/apis`);
      const nav = page.getByRole('navigation', { name: 'Dashboard' });
      assert.deepEqual(await nav.getByRole('link').allTextContents(), SECTIONS);
      await checkPage(page, `${dialect}-apis`);
      const cookies = await context.cookies();
      assert.deepEqual(
        cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path]),
        [['keyhold_session', true, 'Strict', '/dashboard']],
      );
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      assert.deepEqual(errors, []);
      // Signed out, every page is the sign-in page (a 401, which the browser logs).
      await page.goto(`${w.baseUrl}/dashboard/root-keys`);
      assert.equal(await page.getByRole('heading', { name: 'Sign in' }).count(), 1);
      await context.close();

      // The same link again, in a fresh browser: refused, with the reason.
      const second = await browser.newPage();
      await second.goto(url);
      assert.equal(await second.getByRole('heading', { name: 'Sign in' }).count(), 1);
      assert.match((await second.getByRole('alert').textContent()) ?? '', /already used or expired/);
      assert.equal((await second.context().cookies()).length, 0);
      await checkPage(second, `${dialect}-sign-in-refused`);
      await second.close();
    });

    it('a revocation made in the UI is found in the audit log, filtered by event', async () => {
      const w = s.world;
      const { page, errors } = await s.signedIn();
      const key = await w.rootKey(['api.*.read_api']);
      await page.goto(`${w.baseUrl}/dashboard/root-keys`);
      const row = page.getByRole('row').filter({ hasText: key.slice(0, 12) });
      await row.getByRole('button', { name: 'Revoke' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
      await page.waitForURL('**/dashboard/root-keys');
      const revoked = await w.store.db.selectFrom('root_keys').select('id').where('revoked_at', 'is not', null).execute();
      assert.equal(revoked.length, 1);

      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Audit log' }).click();
      await page.getByLabel('Event').fill('root_key.revoke');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL('**/dashboard/audit-log?event=root_key.revoke*');
      const rows = page.getByRole('table', { name: 'Audit log' }).getByRole('row');
      assert.equal(await rows.count(), 2); // the header and the one revocation
      assert.match((await rows.nth(1).textContent()) ?? '', new RegExp(`root_key\\.revoke.*dashboard_session.*${revoked[0].id}`));
      await checkPage(page, `${dialect}-audit-log`);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('an operator link lists workspaces; the operator creates one and acts in it', async () => {
      const w = s.world;
      const page = await s.browser.newPage();
      const errors = watchConsole(page);
      await page.goto(await cliLink('--operator'));
      assert.equal(page.url(), `${w.baseUrl}/dashboard/workspaces`);
      const nav = page.getByRole('navigation', { name: 'Dashboard' });
      assert.deepEqual(await nav.getByRole('link').allTextContents(), ['Workspaces', 'Sessions', ...SECTIONS]);
      const table = page.getByRole('table', { name: 'Workspaces' });
      assert.match((await table.textContent()) ?? '', new RegExp(w.workspaceId));
      await checkPage(page, `${dialect}-workspaces`);
      await page.getByRole('button', { name: 'Create workspace' }).click();
      await page.getByRole('textbox', { name: 'Name' }).fill('acme');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.waitForURL('**/dashboard/root-keys');
      const acme = await w.store.db.selectFrom('workspaces').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow();
      assert.match((await page.locator('header').textContent()) ?? '', new RegExp(acme.id));
      await nav.getByRole('link', { name: 'Workspaces' }).click();
      await page.getByRole('button', { name: 'Open test' }).click();
      await page.waitForURL('**/dashboard/apis');
      assert.match((await page.locator('header').textContent()) ?? '', new RegExp(w.workspaceId));
      assert.deepEqual(errors, []);
      await page.close();
    });
  });
}
