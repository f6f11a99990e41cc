import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { DIALECTS } from '../helpers/harness.ts';
import { checkPage, dashboardSuite } from '../helpers/browser.ts';
import { count } from '../helpers/rows.ts';

for (const dialect of DIALECTS) {
  describe(`dashboard create forms: post/redirect/get, the new secret shown once (${dialect})`, () => {
    const s = dashboardSuite(dialect);
    /** After the create: the browser is on `path` (a GET), and a reload neither shows the value again nor creates anything. */
    const shownOnceAfterRedirect = async (
      page: Page,
      path: string,
      shown: string,
      table: 'root_keys' | 'keys' | 'key_migrations' | 'webhook_endpoints',
    ) => {
      const value = await page.getByRole('textbox', { name: shown }).inputValue();
      assert.equal(new URL(page.url()).pathname, path);
      const rows = await count(s.world.store.db, table);
      const sessions = await s.world.store.db.selectFrom('dashboard_sessions').select('reveal').execute();
      assert.ok(
        sessions.every((s) => s.reveal === null),
        'the one-time value is gone once shown',
      );
      const reloaded = await page.reload();
      assert.equal(reloaded?.request().method(), 'GET');
      assert.equal(await page.getByRole('textbox', { name: shown }).count(), 0);
      assert.equal(await count(s.world.store.db, table), rows);
      return value;
    };

    it('a root key, a key and a migration: each created once, shown once after the redirect, gone on reload', async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/root-keys?form=create`);
      await page.getByRole('checkbox', { name: 'api.*.read_api', exact: true }).check();
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.getByRole('heading', { name: 'Root key created' }).waitFor();
      assert.match(await shownOnceAfterRedirect(page, '/dashboard/root-keys', 'New root key', 'root_keys'), /^kh_root_/);

      const apiId = await s.world.createApi('once');
      await page.goto(`${s.world.baseUrl}/dashboard/apis/${apiId}?form=create`);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.getByRole('heading', { name: 'Key created' }).waitFor();
      const key = await shownOnceAfterRedirect(page, `/dashboard/apis/${apiId}`, 'New key', 'keys');
      assert.equal((await s.world.post<{ valid: boolean }>('/v1/keys.verifyKey', { apiId, key }, null)).json.valid, true);

      await page.goto(`${s.world.baseUrl}/dashboard/migrations`);
      await page.getByRole('button', { name: 'Create migration' }).click();
      await page.getByRole('heading', { name: 'Migration created' }).waitFor();
      await checkPage(page, `${dialect}-migration-created-once`);
      await page.reload();
      assert.equal(await page.getByRole('heading', { name: 'Migration created' }).count(), 0);
      assert.equal(await count(s.world.store.db, 'key_migrations'), 1);

      await page.goto(`${s.world.baseUrl}/dashboard/webhooks?form=create`);
      await page.getByRole('textbox', { name: 'URL' }).fill('https://93.184.216.34/hooks');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.getByRole('textbox', { name: 'Signing secret' }).waitFor();
      assert.match(await shownOnceAfterRedirect(page, '/dashboard/webhooks', 'Signing secret', 'webhook_endpoints'), /^whsec_/);
      assert.deepEqual(errors, []);
    });

    it('the one-time value is stored encrypted under the session: the row holds no secret, another session cannot take it', async () => {
      const { page } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/root-keys?form=create`);
      const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
      // The create, without following its redirect: the value waits, stashed, for the page.
      const posted = await page.context().request.post(`${s.world.baseUrl}/dashboard/root-keys`, {
        form: { _csrf: csrf, permission: 'api.*.read_api' },
        maxRedirects: 0,
      });
      assert.deepEqual([posted.status(), posted.headers().location], [303, '/dashboard/root-keys']);
      assert.doesNotMatch(await posted.text(), /kh_root_/);
      const stored = await s.world.store.db.selectFrom('dashboard_sessions').select('reveal').where('reveal', 'is not', null).execute();
      assert.equal(stored.length, 1);
      assert.doesNotMatch(stored[0].reveal ?? '', /kh_root_|root/);
      const { page: other } = await s.signedIn();
      await other.goto(`${s.world.baseUrl}/dashboard/root-keys`);
      assert.equal(await other.getByRole('heading', { name: 'Root key created' }).count(), 0);
      await page.goto(`${s.world.baseUrl}/dashboard/root-keys`);
      assert.match(await page.getByRole('textbox', { name: 'New root key' }).inputValue(), /^kh_root_/);
    });
  });
}
