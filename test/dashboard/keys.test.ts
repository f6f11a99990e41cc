import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { checkPage, dashboardSuite } from '../helpers/browser.ts';

interface Verdict {
  valid: boolean;
  code: string;
  remaining?: number;
}

for (const dialect of DIALECTS) {
  describe(`dashboard API and key pages (${dialect})`, () => {
    const s = dashboardSuite(dialect);
    let apiId: string;
    before(async () => {
      apiId = await s.world.createApi('payments');
    });

    /** keys.verifyKey over real HTTP, as a client would call it. */
    const verify = async (key: string): Promise<Verdict> => {
      const res = await fetch(`${s.world.baseUrl}/v1/keys.verifyKey`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      });
      assert.equal(res.status, 200);
      return (await res.json()) as Verdict;
    };

    const keyRow = (keyId: string) => s.world.store.db.selectFrom('keys').selectAll().where('id', '=', keyId).executeTakeFirst();
    const liveKeysOf = async (api: string) =>
      (await s.world.store.db.selectFrom('keys').select('id').where('api_id', '=', api).where('deleted_at', 'is', null).execute()).length;

    it('disables and re-enables a key, and verification follows at once', async () => {
      const { keyId, key } = await s.world.createKey({ apiId, name: 'toggled' });
      // Verified once first, so the key is in the verification cache: the change must drop it from there.
      assert.equal((await verify(key)).valid, true);
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/keys/${keyId}`);
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Key toggled');
      await checkPage(page, `${dialect}-key`);

      await page.getByRole('button', { name: 'Disable', exact: true }).click();
      await page.getByRole('button', { name: 'Enable', exact: true }).waitFor();
      assert.equal(new URL(page.url()).pathname, `/dashboard/keys/${keyId}`);
      assert.equal((await keyRow(keyId))?.enabled, 0);
      // The change drops the cached key as it commits: the very next verification sees it disabled.
      const refused = await verify(key);
      assert.equal(refused.valid, false);
      assert.equal(refused.code, 'DISABLED');

      await page.getByRole('button', { name: 'Enable', exact: true }).click();
      await page.getByRole('button', { name: 'Disable', exact: true }).waitFor();
      assert.equal((await keyRow(keyId))?.enabled, 1);
      const again = await verify(key);
      assert.equal(again.valid, true);
      assert.equal(again.code, 'VALID');
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('charts the verifications of a key, per hour and per day', async () => {
      const { keyId, key } = await s.world.createKey({ apiId, name: 'charted', remaining: 2 });
      const verdicts = [await verify(key), await verify(key), await verify(key)];
      assert.deepEqual(
        verdicts.map((v) => v.code),
        ['VALID', 'VALID', 'USAGE_EXCEEDED'],
      );
      const { page, errors } = await s.signedIn();
      const outcomes = page.getByRole('table', { name: 'Verifications by outcome' });
      // Verifications are counted by a recorder that writes them about once a second: reload until they are there.
      const deadline = Date.now() + 10_000;
      for (;;) {
        await page.goto(`${s.world.baseUrl}/dashboard/keys/${keyId}`);
        const text = (await outcomes.getByRole('row').filter({ hasText: 'Valid' }).textContent()) ?? '';
        if (text.includes('2')) break;
        assert.ok(Date.now() < deadline, `verifications were not counted within 10 s: ${text}`);
        await page.waitForTimeout(200);
      }
      const chart = page.getByRole('img', { name: 'Verifications' });
      assert.equal(await chart.count(), 1);
      assert.match((await page.locator('#verifications-summary').textContent()) ?? '', /valid 2, denied 1/);
      assert.match((await outcomes.getByRole('row').filter({ hasText: 'Usage exceeded' }).textContent()) ?? '', /1/);
      assert.ok((await chart.locator('rect').count()) >= 2, 'bars of both series');
      await checkPage(page, `${dialect}-key-chart`);

      await page.getByRole('link', { name: 'Last 30 days' }).click();
      await page.waitForURL('**/dashboard/keys/*?range=30d');
      assert.equal(await page.getByRole('link', { name: 'Last 30 days' }).getAttribute('aria-current'), 'true');
      assert.equal(await page.getByRole('img', { name: 'Verifications' }).count(), 1);
      assert.match((await page.locator('#verifications-summary').textContent()) ?? '', /valid 2, denied 1/);
      await checkPage(page, `${dialect}-key-chart-30d`);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('lists the keys of an API page by page', async () => {
      const many = await s.world.createApi('many keys');
      const names = Array.from({ length: 51 }, (_, i) => `key ${String(i).padStart(2, '0')}`);
      for (let i = 0; i < names.length; i += 10) {
        await Promise.all(names.slice(i, i + 10).map((name) => s.world.createKey({ apiId: many, name, externalId: 'acme' })));
      }
      const { page, errors } = await s.signedIn();
      await page.getByRole('link', { name: 'many keys' }).click();
      await page.waitForURL(`**/dashboard/apis/${many}`);
      const keys = page.getByRole('table', { name: 'Keys' });
      assert.deepEqual(await keys.getByRole('columnheader').allTextContents(), [
        'Start',
        'Name',
        'External ID',
        'Roles',
        'Remaining',
        'Enabled',
        'Expires',
        'Last used',
      ]);
      assert.match((await page.locator('dl.facts').textContent()) ?? '', /Keys\s*51/);
      const firstPage = await keys.locator('tbody tr td:nth-child(2)').allTextContents();
      assert.equal(firstPage.length, 50);
      await checkPage(page, `${dialect}-api`);

      await page.getByRole('link', { name: 'Next page' }).click();
      const secondPage = await page.getByRole('table', { name: 'Keys' }).locator('tbody tr td:nth-child(2)').allTextContents();
      assert.equal(secondPage.length, 1);
      assert.deepEqual([...firstPage, ...secondPage].sort(), names);
      assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0);
      await page.getByRole('link', { name: 'First page' }).click();
      assert.equal(await page.getByRole('table', { name: 'Keys' }).locator('tbody tr').count(), 50);

      // The start of a key links to its page.
      await page.getByRole('table', { name: 'Keys' }).getByRole('row').filter({ hasText: 'key 07' }).getByRole('link').click();
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Key key 07');
      assert.deepEqual(errors, []);
      await page.close();
    });

    it("finds a key by its ID and an identity's keys by its external ID, in this API only", async () => {
      const searched = await s.world.createApi('searched');
      const other = await s.world.createApi('elsewhere');
      const a = await s.world.createKey({ apiId: searched, name: 'search a', externalId: 'cust-search' });
      await s.world.createKey({ apiId: searched, name: 'search b', externalId: 'cust-search' });
      const lone = await s.world.createKey({ apiId: searched, name: 'search lone' });
      const foreign = await s.world.createKey({ apiId: other, name: 'search foreign', externalId: 'cust-search' });
      const { page, errors } = await s.signedIn();
      const found = async (query: string) => {
        await page.goto(`${s.world.baseUrl}/dashboard/apis/${searched}`);
        await page.getByRole('searchbox', { name: 'Find keys' }).fill(query);
        await page.getByRole('button', { name: 'Find', exact: true }).click();
        await page.waitForURL(`**/dashboard/apis/${searched}?q=*`);
        // The Name column of each row found (no table at all when nothing is).
        return page.getByRole('table', { name: 'Keys found' }).locator('tbody td:nth-child(2)').allTextContents();
      };

      assert.deepEqual(await found(lone.keyId), ['search lone']);
      await checkPage(page, `${dialect}-api-key-search`);
      assert.deepEqual((await found('cust-search')).sort(), ['search a', 'search b']);
      assert.equal(await page.getByRole('link', { name: 'Show all keys' }).count(), 1);
      // Another API's key, by its ID or its identity, is not this API's: nothing found.
      assert.deepEqual(await found(foreign.keyId), []);
      assert.match(await page.content(), /No key of this API has that key ID or external ID/);
      // The full key is not a search term (a GET would carry it into logs): it finds nothing.
      assert.deepEqual(await found(a.key), []);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('creates a key through the form and shows it once', async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/apis/${apiId}`);
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByRole('textbox', { name: 'Name' }).fill('from the form');
      await page.getByRole('textbox', { name: 'Prefix' }).fill('pay');
      await page.getByRole('textbox', { name: 'External ID' }).fill('customer-7');
      await page.getByRole('spinbutton', { name: 'Remaining credits' }).fill('5');
      await checkPage(page, `${dialect}-api-create-key`);
      await page.getByRole('button', { name: 'Create', exact: true }).click();

      const shown = page.getByRole('textbox', { name: 'New key' });
      const key = await shown.inputValue();
      assert.match(key, /^pay_/);
      assert.equal(await shown.getAttribute('readonly'), '');
      assert.equal(await page.getByRole('button', { name: 'Copy' }).count(), 1);
      await checkPage(page, `${dialect}-api-key-created`);
      const verdict = await verify(key);
      assert.equal(verdict.valid, true);
      assert.equal(verdict.remaining, 4);

      await page.goto(`${s.world.baseUrl}/dashboard/apis/${apiId}`);
      assert.equal(await page.getByRole('textbox', { name: 'New key' }).count(), 0);
      assert.ok(!(await page.content()).includes(key), 'the full key is not shown again');
      const row = page.getByRole('table', { name: 'Keys' }).getByRole('row').filter({ hasText: 'from the form' });
      assert.match((await row.textContent()) ?? '', /customer-7/);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it("shows the API's problems next to the fields and creates nothing", async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/apis/${apiId}?form=create`);
      const before = await liveKeysOf(apiId);
      await page.getByRole('textbox', { name: 'Name' }).fill('never made');
      const credits = page.getByRole('spinbutton', { name: 'Remaining credits' });
      await credits.fill('-1');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.locator('#f-remaining-error').waitFor();
      assert.match((await page.locator('#f-remaining-error').textContent()) ?? '', /must be >= 1/);
      assert.equal(await credits.getAttribute('aria-invalid'), 'true');
      assert.equal(await credits.inputValue(), '-1', 'what was entered is kept');
      assert.equal(await page.getByRole('textbox', { name: 'Name' }).inputValue(), 'never made');
      assert.equal(await liveKeysOf(apiId), before);
      await checkPage(page, `${dialect}-api-create-key-invalid`);

      // The key page's credits form shows its problem the same way and changes nothing.
      const { keyId } = await s.world.createKey({ apiId, name: 'credited', remaining: 3 });
      await page.goto(`${s.world.baseUrl}/dashboard/keys/${keyId}`);
      await page.getByRole('spinbutton', { name: 'Credits' }).fill('-5');
      await page.getByRole('button', { name: 'Set credits' }).click();
      await page.locator('#f-remaining-error').waitFor();
      assert.match((await page.locator('#f-remaining-error').textContent()) ?? '', /must be >= 0/);
      assert.equal((await keyRow(keyId))?.remaining, 3);
      await checkPage(page, `${dialect}-key-credits-invalid`);
      await page.getByRole('spinbutton', { name: 'Credits' }).fill('40');
      await page.getByRole('button', { name: 'Set credits' }).click();
      await page.waitForURL(`**/dashboard/keys/${keyId}`);
      assert.equal((await keyRow(keyId))?.remaining, 40);
      assert.match((await page.locator('dl.facts').nth(1).textContent()) ?? '', /Remaining\s*40/);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('deletes a key after confirmation in a dialog', async () => {
      const { keyId, key } = await s.world.createKey({ apiId, name: 'doomed' });
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/keys/${keyId}`);
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await checkPage(page, `${dialect}-key-delete-dialog`);
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.waitForURL(`**/dashboard/apis/${apiId}`);
      assert.equal(await page.getByRole('table', { name: 'Keys' }).getByRole('row').filter({ hasText: 'doomed' }).count(), 0);

      const got = await fetch(`${s.world.baseUrl}/v1/keys.getKey?keyId=${keyId}`, { headers: { authorization: `Bearer ${s.world.root}` } });
      assert.equal(got.status, 404);
      assert.equal((await verify(key)).code, 'NOT_FOUND');
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('deletes an API with its keys after confirmation in a dialog', async () => {
      const doomed = await s.world.createApi('retired');
      const { key } = await s.world.createKey({ apiId: doomed });
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/apis/${doomed}`);
      await page.getByRole('button', { name: 'Delete API' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete API' }).click();
      await page.waitForURL('**/dashboard/apis');
      assert.equal(await page.getByRole('link', { name: 'retired' }).count(), 0);
      assert.equal((await s.world.get('/v1/apis.getApi', { apiId: doomed })).status, 404);
      assert.equal((await verify(key)).code, 'NOT_FOUND');
      assert.deepEqual(errors, []);
      await page.close();
    });

    it("gives another workspace's session a 404 for this workspace's API and key, and no way to change them", async () => {
      const { keyId, key } = await s.world.createKey({ apiId, name: 'guarded' });
      const other = await s.world.otherWorkspace();
      const { page, errors } = await s.signedIn(other.workspaceId);
      const csrf = await page.locator('input[name="_csrf"]').first().inputValue();

      for (const path of [`/dashboard/apis/${apiId}`, `/dashboard/keys/${keyId}`, `/dashboard/keys/${keyId}?range=30d`]) {
        const res = await page.request.get(`${s.world.baseUrl}${path}`);
        assert.equal(res.status(), 404, path);
        assert.ok(!(await res.text()).includes('guarded'), `${path} shows nothing of the key`);
      }
      // With its own valid token the request passes the CSRF check (a 404, not a 403) and changes nothing.
      const posts: Array<[string, Record<string, string>]> = [
        [`/dashboard/keys/${keyId}/enabled`, { enabled: 'false' }],
        [`/dashboard/keys/${keyId}/credits`, { remaining: '1' }],
        [`/dashboard/keys/${keyId}/delete`, {}],
        [`/dashboard/apis/${apiId}`, { name: 'intruder' }],
        [`/dashboard/apis/${apiId}/delete`, {}],
      ];
      const keysBefore = await liveKeysOf(apiId);
      for (const [path, form] of posts) {
        const res = await page.request.post(`${s.world.baseUrl}${path}`, { form: { _csrf: csrf, ...form }, maxRedirects: 0 });
        assert.equal(res.status(), 404, path);
      }
      const row = await keyRow(keyId);
      assert.equal(row?.enabled, 1);
      assert.equal(row?.remaining, null);
      assert.equal(row?.deleted_at, null);
      assert.equal(await liveKeysOf(apiId), keysBefore);
      assert.equal((await verify(key)).valid, true);
      assert.deepEqual(errors, []);
      await page.close();
    });
  });
}
