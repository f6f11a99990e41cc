import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { expectedChecksum } from '../helpers/formats.ts';
import { checkPage, dashboardSuite } from '../helpers/browser.ts';
import { reportLeakedTokens } from '../../src/services/leaks/report-leaks.ts';

const LEAK_URL = 'https://github.com/acme/app/blob/0a1b2c/config/prod.env';

for (const dialect of DIALECTS) {
  describe(`dashboard: leaked keys (${dialect})`, () => {
    const s = dashboardSuite(dialect);

    /** A report as GitHub's secret scanning sends it, through the same service the endpoint calls. */
    const leak = (token: string) =>
      reportLeakedTokens(s.world.store.db, [{ token, type: 'keyhold_key', url: LEAK_URL, source: 'commit' }], {
        action: 'disable',
        requestId: 'req_test',
      });

    it('a key created in the dashboard carries its checksum; once leaked, its page and its API table show "Leaked" with the URL', async () => {
      const apiId = await s.world.createApi('payments');
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/apis/${apiId}`);
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByRole('textbox', { name: 'Prefix' }).fill('pay');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      const key = await page.getByRole('textbox', { name: 'New key' }).inputValue();
      assert.equal(key.slice(-6), expectedChecksum(key.slice(0, -6)), 'the dashboard path makes checksummed keys too');
      const other = await s.world.createKey({ apiId, name: 'untouched' });

      const [feedback] = await leak(key);
      assert.equal(feedback.label, 'true_positive');
      await page.goto(`${s.world.baseUrl}/dashboard/apis/${apiId}`);
      const table = page.getByRole('table', { name: 'Keys' });
      const leakedRow = table.getByRole('row').filter({ hasText: key.slice(0, 8) });
      assert.equal(await leakedRow.getByText('Leaked', { exact: true }).count(), 1);
      assert.equal(await leakedRow.getByRole('link', { name: LEAK_URL }).getAttribute('href'), LEAK_URL);
      const cleanRow = table.getByRole('row').filter({ hasText: other.key.slice(0, 4) });
      assert.equal(await cleanRow.getByText('Leaked', { exact: true }).count(), 0);
      await checkPage(page, `${dialect}-leaked-key-table`);

      await leakedRow.getByRole('link', { name: `${key.slice(0, 8)}…` }).click();
      const notice = page.locator('#leaked');
      assert.match((await notice.textContent()) ?? '', /Leaked/);
      assert.equal(await notice.getByRole('link', { name: LEAK_URL }).count(), 1);
      assert.match((await page.locator('main').textContent()) ?? '', /Disabled/);
      await checkPage(page, `${dialect}-leaked-key`);
      assert.ok(!(await page.content()).includes(key), 'the key itself is never shown again');
      assert.deepEqual(errors, []);
    });

    it('a root key revoked because it leaked says why on the root keys page', async () => {
      const root = await s.world.rootKey(['api.*.read_api']);
      await leak(root);
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/root-keys`);
      const row = page
        .getByRole('table', { name: 'Root keys' })
        .getByRole('row')
        .filter({ hasText: root.slice(0, 12) });
      assert.match((await row.textContent()) ?? '', /revoked: Leaked/);
      assert.equal(await row.getByRole('link', { name: LEAK_URL }).count(), 1);
      await checkPage(page, `${dialect}-leaked-root-key`);
      assert.deepEqual(errors, []);
    });
  });
}
