import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { APIResponse, Locator, Page } from 'playwright-core';
import { DIALECTS } from '../helpers/harness.ts';
import { checkPage, dashboardSuite } from '../helpers/browser.ts';

type Role = { id: string; name: string; permissions: Array<{ id: string; slug: string }> };

for (const dialect of DIALECTS) {
  describe(`dashboard roles, permissions and identities (${dialect})`, () => {
    const s = dashboardSuite(dialect);
    const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name, exact: true });
    const rowCount = async (table: 'permissions' | 'roles' | 'identities') =>
      (await s.world.store.db.selectFrom(table).select('id').where('workspace_id', '=', s.world.workspaceId).execute()).length;
    /** The text of the problem shown next to a field: the element its aria-describedby names as the error. */
    const problemOf = async (page: Page, input: Locator): Promise<string> => {
      assert.equal(await input.getAttribute('aria-invalid'), 'true');
      const ids = ((await input.getAttribute('aria-describedby')) ?? '').split(' ').filter((id) => id.endsWith('-error'));
      assert.equal(ids.length, 1, 'the field names its problem');
      return (await page.locator(`[id="${ids[0]}"]`).textContent()) ?? '';
    };
    const confirmDelete = async (page: Page, scope: Page | Locator) => {
      await scope.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    };

    it('creates a permission and a role in the forms, attaches the permission to the role, and deletes both', async () => {
      const { page, errors } = await s.signedIn();
      await nav(page, 'Permissions').click();
      await checkPage(page, `${dialect}-permissions-empty`);
      await page.getByRole('button', { name: 'Create permission' }).click();
      await page.getByRole('textbox', { name: 'Name' }).fill('documents.read');
      await page.getByRole('textbox', { name: 'Description' }).fill('Read documents');
      await checkPage(page, `${dialect}-permissions-create`);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.waitForURL('**/dashboard/permissions');
      const permissionRow = page.getByRole('table', { name: 'Permissions' }).getByRole('row').filter({ hasText: 'documents.read' });
      assert.match((await permissionRow.textContent()) ?? '', /Read documents/);
      await checkPage(page, `${dialect}-permissions`);
      const [permission] = await s.world.store.db
        .selectFrom('permissions')
        .select(['id', 'slug'])
        .where('workspace_id', '=', s.world.workspaceId)
        .execute();
      assert.equal(permission.slug, 'documents.read');

      await nav(page, 'Roles').click();
      await checkPage(page, `${dialect}-roles-empty`);
      await page.getByRole('button', { name: 'Create role' }).click();
      await page.getByRole('textbox', { name: 'Name' }).fill('reader');
      await page.getByRole('textbox', { name: 'Description' }).fill('Reads everything');
      await checkPage(page, `${dialect}-roles-create`);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.waitForURL('**/dashboard/roles/role_*');
      const roleId = new URL(page.url()).pathname.split('/').pop()!;
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Role reader');
      const box = page.getByRole('checkbox', { name: 'documents.read', exact: true });
      assert.equal(await box.isChecked(), false);
      await checkPage(page, `${dialect}-role`);

      await box.check();
      await page.getByRole('button', { name: 'Save permissions' }).click();
      await page.getByRole('status').filter({ hasText: 'Permissions saved.' }).waitFor();
      assert.equal(await page.getByRole('checkbox', { name: 'documents.read', exact: true }).isChecked(), true);
      const role = await s.world.get<Role>('/v1/permissions.getRole', { roleId }, s.world.root);
      assert.equal(role.status, 200);
      assert.deepEqual(
        role.json.permissions.map((p) => [p.id, p.slug]),
        [[permission.id, 'documents.read']],
      );
      await checkPage(page, `${dialect}-role-saved`);

      await nav(page, 'Roles').click();
      const roleRow = page.getByRole('table', { name: 'Roles' }).getByRole('row').filter({ hasText: 'reader' });
      assert.match((await roleRow.textContent()) ?? '', /Reads everything.*documents\.read/);
      await checkPage(page, `${dialect}-roles`);

      await roleRow.getByRole('link', { name: 'reader' }).click();
      await confirmDelete(page, page.getByRole('main'));
      await page.waitForURL('**/dashboard/roles');
      assert.equal((await s.world.get('/v1/permissions.getRole', { roleId }, s.world.root)).status, 404);
      assert.equal(await rowCount('roles'), 0);

      await nav(page, 'Permissions').click();
      await confirmDelete(page, page.getByRole('row').filter({ hasText: 'documents.read' }));
      await page.waitForURL('**/dashboard/permissions');
      assert.equal((await s.world.get('/v1/permissions.getPermission', { permissionId: permission.id }, s.world.root)).status, 404);
      assert.equal(await rowCount('permissions'), 0);
      assert.match((await page.getByRole('main').textContent()) ?? '', /no permissions yet/);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it("shows the API's problems next to the fields and writes nothing", async () => {
      const { page, errors } = await s.signedIn();
      // What the API itself says of this name, to find next to the field.
      const refused = await s.world.post('/v1/permissions.createPermission', { name: 'read all!' }, s.world.root);
      assert.equal(refused.status, 400);
      const expected = refused.json.error.errors!.filter((p) => p.path === '/name').map((p) => p.message);
      assert.ok(expected.length > 0);

      await page.goto(`${s.world.baseUrl}/dashboard/permissions?form=create`);
      await page.getByRole('textbox', { name: 'Name' }).fill('read all!');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      assert.equal(await problemOf(page, page.getByRole('textbox', { name: 'Name' })), expected.join('; '));
      assert.equal(await page.getByRole('textbox', { name: 'Name' }).inputValue(), 'read all!');
      assert.equal(await rowCount('permissions'), 0);
      await checkPage(page, `${dialect}-permissions-invalid`);

      // Meta that is not JSON is refused before the operation; JSON of the wrong shape by the operation.
      await page.goto(`${s.world.baseUrl}/dashboard/identities?form=create`);
      await page.getByRole('textbox', { name: 'External ID' }).fill('user_1');
      await page.getByRole('textbox', { name: 'Meta' }).fill('{plan: pro');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      assert.match(await problemOf(page, page.getByRole('textbox', { name: 'Meta' })), /is not valid JSON/);
      assert.equal(await page.getByRole('textbox', { name: 'Meta' }).inputValue(), '{plan: pro');
      await checkPage(page, `${dialect}-identities-invalid-json`);
      await page.getByRole('textbox', { name: 'Meta' }).fill('["pro"]');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      const api = await s.world.post('/v1/identities.createIdentity', { externalId: 'user_1', meta: ['pro'] }, s.world.root);
      assert.equal(api.status, 400);
      const metaProblems = api.json.error.errors!.filter((p) => p.path === '/meta').map((p) => p.message);
      assert.equal(await problemOf(page, page.getByRole('textbox', { name: 'Meta' })), metaProblems.join('; '));
      assert.equal(await rowCount('identities'), 0);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('creates an identity with meta, shows its page with rate limits, and deletes it', async () => {
      const { page, errors } = await s.signedIn();
      await nav(page, 'Identities').click();
      await checkPage(page, `${dialect}-identities-empty`);
      await page.getByRole('button', { name: 'Create identity' }).click();
      await page.getByRole('textbox', { name: 'External ID' }).fill('user_42');
      await page.getByRole('textbox', { name: 'Meta' }).fill('{"plan": "pro", "seats": 3}');
      await checkPage(page, `${dialect}-identities-create`);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.waitForURL('**/dashboard/identities/id_*');
      const identityId = new URL(page.url()).pathname.split('/').pop()!;
      const got = await s.world.get<{ externalId: string; meta: object }>('/v1/identities.getIdentity', { identityId }, s.world.root);
      assert.equal(got.status, 200);
      assert.deepEqual([got.json.externalId, got.json.meta], ['user_42', { plan: 'pro', seats: 3 }]);

      const ratelimits = [{ name: 'requests', limit: 10, duration: 60000 }];
      assert.equal((await s.world.post('/v1/identities.updateIdentity', { identityId, ratelimits }, s.world.root)).status, 200);
      await page.reload();
      const main = (await page.getByRole('main').textContent()) ?? '';
      assert.match(main, /user_42/);
      assert.match(main, /"plan": "pro"/);
      const limit = page.getByRole('table', { name: 'Rate limits' }).getByRole('row').filter({ hasText: 'requests' });
      assert.match((await limit.textContent()) ?? '', /requests\s*10\s*60000/);
      await checkPage(page, `${dialect}-identity`);

      await nav(page, 'Identities').click();
      const row = page.getByRole('table', { name: 'Identities' }).getByRole('row').filter({ hasText: 'user_42' });
      assert.match((await row.textContent()) ?? '', new RegExp(`user_42\\s*${identityId}\\s*default\\s*1`));
      await checkPage(page, `${dialect}-identities`);

      await row.getByRole('link', { name: 'user_42' }).click();
      await confirmDelete(page, page.getByRole('main'));
      await page.waitForURL('**/dashboard/identities');
      assert.equal((await s.world.get('/v1/identities.getIdentity', { identityId }, s.world.root)).status, 404);
      assert.equal(await rowCount('identities'), 0);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('paginates each list by 50', async () => {
      for (let i = 0; i < 51; i++) {
        const n = String(i).padStart(2, '0');
        assert.equal((await s.world.post('/v1/permissions.createPermission', { name: `p.${n}` }, s.world.root)).status, 200);
        assert.equal((await s.world.post('/v1/permissions.createRole', { name: `role-${n}` }, s.world.root)).status, 200);
        assert.equal((await s.world.post('/v1/identities.createIdentity', { externalId: `user-${n}` }, s.world.root)).status, 200);
      }
      const { page, errors } = await s.signedIn();
      for (const [section, caption, last] of [
        ['Permissions', 'Permissions', 'p.50'],
        ['Roles', 'Roles', 'role-50'],
        ['Identities', 'Identities', 'user-50'],
      ]) {
        await nav(page, section).click();
        const rows = page.getByRole('table', { name: caption }).getByRole('row');
        assert.equal(await rows.count(), 51, `${section}: a header and 50 rows`);
        assert.equal(await rows.filter({ hasText: last }).count(), 0);
        await page.getByRole('link', { name: 'Next page' }).click();
        await page.getByRole('link', { name: 'First page' }).waitFor();
        assert.equal(await rows.count(), 2, `${section}: a header and the 51st row`);
        assert.equal(await rows.filter({ hasText: last }).count(), 1);
        assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0);
        await checkPage(page, `${dialect}-${section.toLowerCase()}-page-2`);
      }
      assert.deepEqual(errors, []);
      await page.close();
    });

    it("a session of another workspace gets 404 for this workspace's role and identity and cannot delete them", async () => {
      const role = await s.world.post<{ roleId: string }>(
        '/v1/permissions.createRole',
        { name: 'kept', permissions: ['kept.read'] },
        s.world.root,
      );
      const identity = await s.world.post<{ identityId: string }>(
        '/v1/identities.createIdentity',
        { externalId: 'kept-user' },
        s.world.root,
      );
      const { roleId } = role.json;
      const { identityId } = identity.json;
      const o = await s.world.otherWorkspace();
      const { page, errors } = await s.signedIn(o.workspaceId);

      for (const path of [`/dashboard/roles/${roleId}`, `/dashboard/identities/${identityId}`]) {
        const res = await page.goto(`${s.world.baseUrl}${path}`);
        assert.equal(res?.status(), 404, path);
        assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Not found');
      }
      await checkPage(page, `${dialect}-identity-not-found`);

      await page.goto(`${s.world.baseUrl}/dashboard/roles`);
      assert.equal(await page.getByRole('row').filter({ hasText: 'kept' }).count(), 0);
      const csrf = await page.locator('input[name="_csrf"]').first().getAttribute('value');
      assert.ok(csrf);
      for (const path of [
        `/dashboard/roles/${roleId}/delete`,
        `/dashboard/roles/${roleId}/permissions`,
        `/dashboard/identities/${identityId}/delete`,
      ]) {
        const res: APIResponse = await page.request.post(`${s.world.baseUrl}${path}`, { form: { _csrf: csrf }, maxRedirects: 0 });
        assert.equal(res.status(), 404, `${path}: the token is accepted and the resource is not found`);
      }
      const kept = await s.world.get<Role>('/v1/permissions.getRole', { roleId }, s.world.root);
      assert.equal(kept.status, 200);
      assert.deepEqual(
        kept.json.permissions.map((p) => p.slug),
        ['kept.read'],
      );
      assert.equal((await s.world.get('/v1/identities.getIdentity', { identityId }, s.world.root)).status, 200);
      // The two 404 pages are the only console errors: the browser reports a document's 404 status.
      assert.deepEqual(errors, Array(2).fill('Failed to load resource: the server responded with a status of 404 (Not Found)'));
      await page.close();
    });
  });
}
