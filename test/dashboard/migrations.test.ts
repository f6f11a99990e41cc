import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { DIALECTS, OPERATOR } from '../helpers/harness.ts';
import { checkPage, dashboardSuite } from '../helpers/browser.ts';
import { hashOf, newPlain } from '../helpers/migrations.ts';
import { createMigration } from '../../src/services/migrations/migration-records.ts';

/** Waits (Playwright's polling, no sleep) until the element with this data-testid shows exactly `n`. */
const countReaches = (page: Page, testId: string, n: number) =>
  page
    .getByTestId(testId)
    .filter({ hasText: new RegExp(`^${n}$`) })
    .waitFor({ timeout: 30_000 });

for (const dialect of DIALECTS) {
  describe(`dashboard migrations (${dialect})`, () => {
    const s = dashboardSuite(dialect);
    let apiId: string;
    before(async () => {
      apiId = await s.world.createApi('migration-target');
    });
    const enqueue = async (migrationId: string, keys: unknown[]) => {
      const res = await fetch(`${s.world.baseUrl}/v1/migrations.enqueueKeys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.world.root}`, 'content-type': 'application/json' },
        body: JSON.stringify({ migrationId, apiId, keys }),
      });
      assert.equal(res.status, 202, await res.text());
    };
    const progressOf = async (migrationId: string) => {
      const res = await fetch(`${s.world.baseUrl}/v1/migrations.getMigration?migrationId=${migrationId}`, {
        headers: { authorization: `Bearer ${s.world.root}` },
      });
      return (await res.json()) as { counts: { enqueued: number; pending: number } };
    };

    let migrationId: string;

    it('creates a migration, and its page counts keys enqueued over HTTP as they are migrated or fail, without reloading', async () => {
      const { page, errors } = await s.signedIn();
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Migrations', exact: true }).click();
      await checkPage(page, `${dialect}-migrations-empty`);
      await page.getByRole('button', { name: 'Create migration' }).click();
      const shown = page.getByLabel('Migration ID');
      migrationId = await shown.inputValue();
      assert.match(migrationId, /^mig_/);
      assert.equal(await shown.getAttribute('readonly'), '');
      await checkPage(page, `${dialect}-migrations-created`);

      // Created in the session's workspace, audited with the session as actor.
      const row = await s.world.store.db.selectFrom('key_migrations').selectAll().where('id', '=', migrationId).executeTakeFirstOrThrow();
      assert.equal(row.workspace_id, s.world.workspaceId);
      const audit = await s.world.store.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('target_id', '=', migrationId)
        .where('event', '=', 'migration.create')
        .executeTakeFirstOrThrow();
      assert.equal(audit.actor_type, 'dashboard_session');
      assert.match(audit.actor_id, /^dss_/);

      await page.getByRole('link', { name: `Follow migration ${migrationId}` }).click();
      assert.equal(new URL(page.url()).pathname, `/dashboard/migrations/${migrationId}`);
      for (const name of ['enqueued', 'pending', 'migrated', 'failed'])
        assert.equal(await page.getByTestId(`migration-${name}`).textContent(), '0');
      await checkPage(page, `${dialect}-migration-new`);
      let navigations = 0;
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) navigations++;
      });

      // Two batches over HTTP: a duplicate hash within a batch, a missing role, and a hash already migrated.
      const plains = [newPlain(), newPlain(), newPlain(), newPlain()];
      await enqueue(migrationId, [
        { hash: hashOf(plains[0]), name: 'first' },
        { hash: hashOf(plains[1]) },
        { hash: hashOf(plains[0]) },
        { hash: hashOf(plains[2]), roles: ['no-such-role'] },
      ]);
      await countReaches(page, 'migration-enqueued', 4);
      await countReaches(page, 'migration-migrated', 2);
      await countReaches(page, 'migration-failed', 2);
      await enqueue(migrationId, [{ hash: hashOf(plains[3]) }, { hash: hashOf(plains[1]) }]);
      await countReaches(page, 'migration-enqueued', 6);
      await countReaches(page, 'migration-migrated', 3);
      await countReaches(page, 'migration-failed', 3);
      await countReaches(page, 'migration-pending', 0);
      assert.equal(navigations, 0, 'the counts changed without a reload');

      // Failures with their reasons, by item index.
      const failures = page.getByRole('list', { name: 'Failures' }).getByRole('listitem');
      await failures.nth(2).waitFor();
      const reasons = await failures.allTextContents();
      assert.match(reasons[0], /^Item 2: duplicate hash: item 0 has the same hash/);
      assert.match(reasons[1], /^Item 3: missing role "?no-such-role"?/);
      assert.match(reasons[2], /^Item 5: duplicate hash: a key with this hash already exists/);
      await page.getByText('3 of 3 failures shown').waitFor();

      // Each migrated item links to its key's page.
      const links = page.getByRole('list', { name: 'Migrated keys' }).getByRole('link');
      await links.nth(2).waitFor();
      const items = await s.world.store.db
        .selectFrom('key_migration_items')
        .select(['item_index', 'key_id'])
        .where('migration_id', '=', migrationId)
        .where('status', '=', 'migrated')
        .orderBy('item_index')
        .execute();
      assert.deepEqual(
        items.map((i) => Number(i.item_index)),
        [0, 1, 4],
      );
      const hrefs = await Promise.all((await links.all()).map((a) => a.getAttribute('href')));
      assert.deepEqual(
        hrefs,
        items.map((i) => `/dashboard/keys/${i.key_id}`),
      );
      const keys = await s.world.store.db
        .selectFrom('keys')
        .select(['id', 'workspace_id'])
        .where(
          'id',
          'in',
          items.map((i) => i.key_id!),
        )
        .execute();
      assert.equal(keys.length, 3);
      assert.ok(keys.every((k) => k.workspace_id === s.world.workspaceId));
      assert.equal(await page.getByText('completed_with_failures').count(), 1);
      await checkPage(page, `${dialect}-migration-progress`);
      const [keyPage] = await Promise.all([page.waitForResponse(`**/dashboard/keys/${items[0].key_id}`), links.first().click()]);
      assert.equal(keyPage.status(), 200);

      // The list shows it with its counts.
      await page.goto(`${s.world.baseUrl}/dashboard/migrations`);
      const listed = page.getByRole('table', { name: 'Migrations' }).getByRole('row').filter({ hasText: migrationId });
      assert.match((await listed.textContent()) ?? '', /6 enqueued, 0 pending, 3 migrated, 3 failed/);
      await checkPage(page, `${dialect}-migrations`);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('pages through many failures, and through the list of migrations', async () => {
      const { page, errors } = await s.signedIn();
      const { migrationId: many } = await createMigration(s.world.store.db, s.world.workspaceId, 'many failures', OPERATOR);
      await enqueue(
        many,
        Array.from({ length: 60 }, () => ({ hash: hashOf(newPlain()), roles: ['nope'] })),
      );
      await page.goto(`${s.world.baseUrl}/dashboard/migrations/${many}`);
      await countReaches(page, 'migration-failed', 60);
      await page.reload();
      const failures = page.getByRole('list', { name: 'Failures' }).getByRole('listitem');
      assert.equal(await failures.count(), 50);
      await page.getByRole('link', { name: 'Next page of failures' }).click();
      assert.equal(await failures.count(), 10);
      assert.match((await failures.first().textContent()) ?? '', /^Item 50: missing role/);
      await page.getByText('10 of 60 failures shown after item 49').waitFor();
      await checkPage(page, `${dialect}-migration-failures-page-2`);
      assert.equal((await progressOf(many)).counts.pending, 0);

      for (let i = 0; i < 25; i++) await createMigration(s.world.store.db, s.world.workspaceId, `m${i}`, OPERATOR);
      await page.goto(`${s.world.baseUrl}/dashboard/migrations`);
      const rows = page.getByRole('table', { name: 'Migrations' }).locator('tbody tr');
      assert.equal(await rows.count(), 25);
      await page.getByRole('link', { name: 'Next page' }).click();
      assert.equal(await rows.count(), 2);
      assert.ok((await rows.allTextContents()).some((t) => t.includes(migrationId)));
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('another workspace’s session gets a 404 for the migration page and its progress', async () => {
      const other = await s.world.otherWorkspace();
      const { page } = await s.signedIn(other.workspaceId);
      const res = await page.goto(`${s.world.baseUrl}/dashboard/migrations/${migrationId}`);
      assert.equal(res?.status(), 404);
      await page.getByRole('heading', { name: 'Not found' }).waitFor();
      await checkPage(page, `${dialect}-migration-not-found`);
      const progress = await page.request.get(`${s.world.baseUrl}/dashboard/migrations/${migrationId}/progress`);
      assert.equal(progress.status(), 404);
      assert.ok(!(await progress.text()).includes('"enqueued"'));
      await page.goto(`${s.world.baseUrl}/dashboard/migrations`);
      assert.equal(await page.getByText(migrationId).count(), 0);
      await page.close();

      // The own session reads the progress as JSON.
      const own = await s.signedIn();
      const mine = await own.page.request.get(`${s.world.baseUrl}/dashboard/migrations/${migrationId}/progress`);
      assert.equal(mine.status(), 200);
      const body = (await mine.json()) as Record<string, unknown>;
      assert.deepEqual([body.enqueued, body.pending, body.migrated, body.failed], [6, 0, 3, 3]);
      // Creating one without the form's CSRF token is refused and creates nothing.
      const before = await s.world.store.db.selectFrom('key_migrations').select('id').execute();
      const forged = await own.page.request.post(`${s.world.baseUrl}/dashboard/migrations`, { form: { name: 'forged' } });
      assert.equal(forged.status(), 403);
      assert.equal((await s.world.store.db.selectFrom('key_migrations').select('id').execute()).length, before.length);
      await own.page.close();
    });
  });
}
