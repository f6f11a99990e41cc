import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { checkPage, dashboardSuite } from '../helpers/browser.ts';

/** A public address given as a literal: nothing resolves it, and no delivery is attempted by this world's worker. */
const URL_ = 'https://93.184.216.34/hooks/dashboard';

for (const dialect of DIALECTS) {
  describe(`dashboard webhooks (${dialect})`, () => {
    const s = dashboardSuite(dialect);

    it('creates an endpoint (the signing secret shown once), sends a test event, retries, disables, enables and deletes it', async () => {
      const { page, errors } = await s.signedIn();
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
      await page.getByRole('button', { name: 'Create endpoint' }).click();
      await page.getByRole('textbox', { name: 'URL' }).fill(URL_);
      await page.getByRole('checkbox', { name: 'key.created', exact: true }).check();
      await page.getByRole('checkbox', { name: 'key.deleted', exact: true }).check();
      await checkPage(page, `${dialect}-webhooks-create`);
      await page.getByRole('button', { name: 'Create', exact: true }).click();

      const shown = page.getByRole('textbox', { name: 'Signing secret' });
      const secret = await shown.inputValue();
      assert.match(secret, /^whsec_/);
      assert.equal(await shown.getAttribute('readonly'), '');
      assert.equal(await page.getByRole('button', { name: 'Copy' }).count(), 1);
      await checkPage(page, `${dialect}-webhooks-created`);

      await page.goto(`${s.world.baseUrl}/dashboard/webhooks`);
      assert.ok(!(await page.content()).includes(secret), 'the secret is shown once');
      const row = page.getByRole('row').filter({ hasText: URL_ });
      assert.match((await row.textContent()) ?? '', /key\.created, key\.deleted.*enabled/s);
      await checkPage(page, `${dialect}-webhooks`);

      await row.getByRole('button', { name: 'Send test event' }).click();
      await page.waitForURL('**/dashboard/webhooks/whep_*');
      const delivery = page.getByRole('row').filter({ hasText: 'webhook.test' });
      assert.match((await delivery.textContent()) ?? '', /pending/);
      await checkPage(page, `${dialect}-webhooks-deliveries`);
      const endpointId = new URL(page.url()).pathname.split('/').pop()!;
      await s.world.store.db
        .updateTable('webhook_deliveries')
        .set({ status: 'failed', attempts: 3, last_status_code: 500 })
        .where('endpoint_id', '=', endpointId)
        .execute();
      await page.reload();
      assert.match((await delivery.textContent()) ?? '', /failed\s*3\s*500/);
      await delivery.getByRole('button', { name: 'Retry' }).click();
      await page.waitForURL(`**/dashboard/webhooks/${endpointId}`);
      assert.match((await page.getByRole('row').filter({ hasText: 'webhook.test' }).textContent()) ?? '', /pending/);

      await page.goto(`${s.world.baseUrl}/dashboard/webhooks`);
      await page.getByRole('row').filter({ hasText: URL_ }).getByRole('button', { name: 'Disable' }).click();
      await page.waitForURL('**/dashboard/webhooks');
      assert.match((await page.getByRole('row').filter({ hasText: URL_ }).textContent()) ?? '', /disabled: disabled by a user/);
      await page.getByRole('row').filter({ hasText: URL_ }).getByRole('button', { name: 'Enable' }).click();
      await page.waitForURL('**/dashboard/webhooks');
      assert.match((await page.getByRole('row').filter({ hasText: URL_ }).textContent()) ?? '', /enabled/);

      await page.getByRole('row').filter({ hasText: URL_ }).getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
      await page.waitForURL('**/dashboard/webhooks');
      assert.equal(await page.getByRole('row').filter({ hasText: URL_ }).count(), 0);
      assert.equal((await s.world.store.db.selectFrom('webhook_endpoints').select('id').where('id', '=', endpointId).execute()).length, 0);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('refuses a private address next to the URL field and creates nothing', async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/webhooks?form=create`);
      await page.getByRole('textbox', { name: 'URL' }).fill('https://169.254.169.254/latest');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      assert.match((await page.locator('.field-error').first().textContent()) ?? '', /link-local/);
      assert.equal((await s.world.store.db.selectFrom('webhook_endpoints').select('id').execute()).length, 0);
      await checkPage(page, `${dialect}-webhooks-invalid`);
      assert.deepEqual(errors, []);
      await page.close();
    });
  });
}
