import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { checkPage, dashboardSuite } from '../helpers/browser.ts';

for (const dialect of DIALECTS) {
  describe(`dashboard root keys (${dialect})`, () => {
    const s = dashboardSuite(dialect);

    it('creates a root key with two permissions, shows it once, and revoking it in the UI makes the API refuse it', async () => {
      const { page, errors } = await s.signedIn();
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Root keys', exact: true }).click();
      await page.getByRole('button', { name: 'Create root key' }).click();
      await page.getByRole('textbox', { name: 'Name' }).fill('deploy bot');
      await page.getByRole('checkbox', { name: 'api.*.create_api', exact: true }).check();
      await page.getByRole('checkbox', { name: 'api.*.read_api', exact: true }).check();
      await checkPage(page, `${dialect}-root-keys-create`);
      await page.getByRole('button', { name: 'Create', exact: true }).click();

      const shown = page.getByRole('textbox', { name: 'New root key' });
      const rootKey = await shown.inputValue();
      assert.match(rootKey, /^kh_root_/);
      assert.equal(await shown.getAttribute('readonly'), '');
      await checkPage(page, `${dialect}-root-keys-created`);

      // The key works over HTTP with exactly its permissions.
      const usedFrom = Date.now();
      const created = await fetch(`${s.world.baseUrl}/v1/apis.createApi`, {
        method: 'POST',
        headers: { authorization: `Bearer ${rootKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'from-dashboard-key' }),
      });
      assert.equal(created.status, 200);
      const { apiId } = (await created.json()) as { apiId: string };
      const got = await fetch(`${s.world.baseUrl}/v1/apis.getApi?apiId=${apiId}`, { headers: { authorization: `Bearer ${rootKey}` } });
      assert.equal(got.status, 200);

      // Its last use is recorded in the background, and the list shows it.
      const usedAt = async () =>
        (await s.world.store.db.selectFrom('root_keys').select('last_used_at').where('name', '=', 'deploy bot').executeTakeFirstOrThrow())
          .last_used_at;
      for (let i = 0; i < 100 && (await usedAt()) === null; i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(((await usedAt()) ?? 0) >= usedFrom, 'last_used_at is the time of the use');

      // Shown once: the list shows its start only.
      await page.goto(`${s.world.baseUrl}/dashboard/root-keys`);
      assert.equal(await page.getByRole('textbox', { name: 'New root key' }).count(), 0);
      const row = page.getByRole('row').filter({ hasText: 'deploy bot' });
      assert.match((await row.textContent()) ?? '', /api\.\*\.create_api api\.\*\.read_api/);
      assert.equal(await row.locator('time').count(), 2, 'created and last used');
      assert.ok(!(await page.content()).includes(rootKey), 'the full key is not on the list page');
      await checkPage(page, `${dialect}-root-keys`);

      await row.getByRole('button', { name: 'Revoke' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Revoke' }).click();
      await page.waitForURL('**/dashboard/root-keys');
      const revokedAt = Date.now();
      assert.match((await page.getByRole('row').filter({ hasText: 'deploy bot' }).textContent()) ?? '', /revoked/);

      const refused = await fetch(`${s.world.baseUrl}/v1/apis.getApi?apiId=${apiId}`, { headers: { authorization: `Bearer ${rootKey}` } });
      assert.equal(refused.status, 401);
      assert.ok(Date.now() - revokedAt < 1000, 'refused within 1 s of the revocation');
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('shows the validation problems of the form next to its fields and creates nothing', async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/root-keys?form=create`);
      const before = await s.world.store.db.selectFrom('root_keys').select('id').execute();
      await page.getByRole('textbox', { name: 'Permissions on specific resources' }).fill('api.*.fly');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      assert.match((await page.getByRole('alert').first().textContent()) ?? '', /unknown action "fly"/);
      assert.equal((await s.world.store.db.selectFrom('root_keys').select('id').execute()).length, before.length);
      await checkPage(page, `${dialect}-root-keys-invalid`);
      assert.deepEqual(errors, []);
      await page.close();
    });
  });
}
