import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS } from '../helpers/harness.ts';
import { CSRF_FIELD } from '../../src/http/dashboard/session-cookie.ts';
import { checkPage, dashboardSuite } from '../helpers/browser.ts';
import { windowWithRoom } from '../helpers/timing.ts';

for (const dialect of DIALECTS) {
  describe(`dashboard rate limits (${dialect})`, () => {
    const s = dashboardSuite(dialect);
    const api = async (method: 'GET' | 'POST', operation: string, input: Record<string, unknown>) => {
      const query = method === 'GET' ? `?${new URLSearchParams(input as Record<string, string>)}` : '';
      const res = await fetch(`${s.world.baseUrl}/v1/${operation}${query}`, {
        method,
        headers: { authorization: `Bearer ${s.world.root}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
        ...(method === 'POST' ? { body: JSON.stringify(input) } : {}),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    const limit = (identifier: string) =>
      api('POST', 'ratelimits.limit', { namespace: 'api-calls', identifier, limit: 2, duration: 60_000 });

    let namespaceId: string;

    it('lists the namespace ratelimits.limit created, charts its decisions, sets and deletes an override', async () => {
      const { page, errors } = await s.signedIn();
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Rate limits', exact: true }).click();
      await page.getByText('There is nothing to create here').waitFor();
      await checkPage(page, `${dialect}-ratelimits-empty`);

      await windowWithRoom(60_000, 5_000); // 2 a minute: the three decisions in one window of the minute
      const decisions = [await limit('user_1'), await limit('user_1'), await limit('user_1')];
      assert.deepEqual(
        decisions.map((d) => d.json.success),
        [true, true, false],
      );
      await page.reload();
      await page.getByRole('table', { name: 'Namespaces' }).getByRole('link', { name: 'api-calls' }).click();
      namespaceId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
      assert.match(namespaceId, /^rlns_/);

      // The chart reads the analytics the recorder writes (every second): wait over HTTP until all three decisions
      // are written (a flush may fall between them), then load the page.
      const start = Date.now() - 3_600_000;
      const written = async () =>
        (
          (await api('GET', 'ratelimits.getAnalytics', { namespaceId, start: String(start) })).json.analytics as Array<{ total: number }>
        ).reduce((sum, bucket) => sum + bucket.total, 0);
      while ((await written()) < decisions.length) await new Promise((r) => setTimeout(r, 100));
      await page.reload();
      const chart = page.getByRole('img', { name: 'Rate limits' });
      await chart.waitFor();
      assert.match((await page.locator('figcaption').textContent()) ?? '', /passed 2, denied 1/);
      await checkPage(page, `${dialect}-ratelimit-namespace`);
      await page.getByRole('link', { name: 'Last 30 days' }).click();
      assert.equal(new URL(page.url()).search, '?range=30d');
      await chart.waitFor();
      assert.match((await page.locator('figcaption').textContent()) ?? '', /passed 2, denied 1/);
      await checkPage(page, `${dialect}-ratelimit-namespace-30d`);

      await page.getByRole('button', { name: 'Set override' }).click();
      await page.getByRole('textbox', { name: 'Identifier' }).fill('user_*');
      await page.getByRole('spinbutton', { name: 'Limit' }).fill('10');
      await page.getByRole('spinbutton', { name: 'Duration (ms)' }).fill('30000');
      await page.getByRole('checkbox', { name: 'Async' }).check();
      await checkPage(page, `${dialect}-ratelimit-override-form`);
      await page.getByRole('button', { name: 'Set override' }).click();
      await page.waitForURL(`**/dashboard/ratelimits/${namespaceId}`);

      const got = await api('GET', 'ratelimits.getOverride', { namespaceId, identifier: 'user_*' });
      assert.equal(got.status, 200);
      assert.deepEqual([got.json.identifier, got.json.limit, got.json.duration, got.json.async], ['user_*', 10, 30000, true]);
      // The override applies to the next request.
      assert.equal((await limit('user_9')).json.limit, 10);
      const row = page.getByRole('table', { name: 'Overrides' }).getByRole('row').filter({ hasText: 'user_*' });
      assert.match((await row.textContent()) ?? '', /user_\*\s*10\s*30000 ms\s*yes\s*\d{4}-\d\d-\d\d/);
      await checkPage(page, `${dialect}-ratelimit-overrides`);

      await row.getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
      await page.waitForURL(`**/dashboard/ratelimits/${namespaceId}`);
      await page.getByText('This namespace has no overrides.').waitFor();
      assert.equal((await api('GET', 'ratelimits.getOverride', { namespaceId, identifier: 'user_*' })).status, 404);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('shows the problems of the override form next to its fields and writes nothing', async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/ratelimits/${namespaceId}?form=override`);
      const before = await s.world.store.db.selectFrom('ratelimit_overrides').select('id').execute();
      await page.getByRole('textbox', { name: 'Identifier' }).fill('user_2');
      await page.getByRole('spinbutton', { name: 'Limit' }).fill('5');
      await page.getByRole('spinbutton', { name: 'Duration (ms)' }).fill('500');
      await page.getByRole('button', { name: 'Set override' }).click();
      const duration = page.getByRole('spinbutton', { name: 'Duration (ms)' });
      assert.equal(await duration.getAttribute('aria-invalid'), 'true');
      assert.equal(await duration.inputValue(), '500');
      assert.match((await page.locator('#f-duration-error').textContent()) ?? '', /1000/);
      assert.equal(await page.getByRole('spinbutton', { name: 'Limit' }).getAttribute('aria-invalid'), null);
      assert.equal((await s.world.store.db.selectFrom('ratelimit_overrides').select('id').execute()).length, before.length);
      assert.equal((await api('GET', 'ratelimits.getOverride', { namespaceId, identifier: 'user_2' })).status, 404);
      await checkPage(page, `${dialect}-ratelimit-override-invalid`);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('another workspace’s session gets a 404 for the namespace page and cannot see it', async () => {
      const other = await s.world.otherWorkspace();
      const { page } = await s.signedIn(other.workspaceId);
      const res = await page.goto(`${s.world.baseUrl}/dashboard/ratelimits/${namespaceId}`);
      assert.equal(res?.status(), 404);
      await page.getByRole('heading', { name: 'Not found' }).waitFor();
      await checkPage(page, `${dialect}-ratelimit-not-found`);
      await page.goto(`${s.world.baseUrl}/dashboard/ratelimits`);
      await page.getByText('There is nothing to create here').waitFor();
      assert.equal(await page.getByRole('link', { name: 'api-calls' }).count(), 0);
      // Its actions are refused as well, with this session's own CSRF token: nothing is deleted.
      const csrf = await page.locator(`input[name="${CSRF_FIELD}"]`).first().inputValue();
      const refused = await page.request.post(`${s.world.baseUrl}/dashboard/ratelimits/${namespaceId}/delete`, {
        form: { [CSRF_FIELD]: csrf },
      });
      assert.equal(refused.status(), 404);
      assert.equal((await api('GET', 'ratelimits.getNamespace', { namespaceId })).status, 200);
      await page.close();
    });

    it('deletes the namespace after confirmation', async () => {
      const { page, errors } = await s.signedIn();
      await page.goto(`${s.world.baseUrl}/dashboard/ratelimits/${namespaceId}`);
      await page.getByRole('button', { name: 'Delete namespace' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete namespace' }).click();
      await page.waitForURL('**/dashboard/ratelimits');
      await page.getByText('There is nothing to create here').waitFor();
      const listed = await api('GET', 'ratelimits.listNamespaces', {});
      assert.deepEqual(listed.json.namespaces, []);
      assert.deepEqual(errors, []);
      await page.close();
    });
  });
}
