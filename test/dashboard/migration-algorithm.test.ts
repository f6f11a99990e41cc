import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { dashboardSuite } from '../helpers/browser.ts';

for (const dialect of DIALECTS) {
  describe(`dashboard: a migration's hash algorithm (${dialect})`, () => {
    const s = dashboardSuite(dialect);

    it('"Create migration" creates one of the algorithm chosen in "Hash algorithm" (default sha256)', async () => {
      const w = s.world;
      const { page, errors } = await s.signedIn();
      await page.goto(`${w.baseUrl}/dashboard/migrations`);
      const select = page.getByLabel('Hash algorithm');
      assert.equal(await select.inputValue(), 'sha256');
      const algorithmOf = async () => {
        const id = await page.getByLabel('Migration ID').inputValue();
        return (await w.store.db.selectFrom('key_migrations').select('algorithm').where('id', '=', id).executeTakeFirstOrThrow()).algorithm;
      };
      await page.getByRole('button', { name: 'Create migration' }).click();
      assert.equal(await algorithmOf(), 'sha256');
      const first = await page.getByLabel('Migration ID').inputValue();
      await page.getByLabel('Hash algorithm').selectOption('github.com/seamapi/prefixed-api-key');
      await page.getByRole('button', { name: 'Create migration' }).click();
      // The page after the second POST shows the second migration (a string: no DOM types in this file).
      await page.waitForFunction(`document.getElementById('new-migration-id')?.value !== ${JSON.stringify(first)}`);
      assert.equal(await algorithmOf(), 'github.com/seamapi/prefixed-api-key');
      assert.deepEqual(errors, []);
    });
  });
}
