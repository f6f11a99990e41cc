import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { securityTests } from '../../../helpers/security.ts';

for (const dialect of DIALECTS) {
  describe(`apis.getApi (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('returns exactly {id, name, workspaceId} of the stored API', async () => {
      const apiId = await w.createApi('billing');
      const res = await w.get('/v1/apis.getApi', { apiId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, { id: apiId, name: 'billing', workspaceId: w.workspaceId });
      const row = await w.store.db.selectFrom('apis').selectAll().where('id', '=', apiId).executeTakeFirstOrThrow();
      assert.deepEqual(res.json, { id: row.id, name: row.name, workspaceId: row.workspace_id });
    });

    test('each API is returned by its own id', async () => {
      const a = await w.createApi('first-api');
      const b = await w.createApi('second-api');
      assert.deepEqual((await w.get('/v1/apis.getApi', { apiId: a })).json, { id: a, name: 'first-api', workspaceId: w.workspaceId });
      assert.deepEqual((await w.get('/v1/apis.getApi', { apiId: b })).json, { id: b, name: 'second-api', workspaceId: w.workspaceId });
    });

    test('a read does not write an audit record', async () => {
      const apiId = await w.createApi('audited');
      const res = await w.get('/v1/apis.getApi', { apiId });
      assert.equal(res.status, 200, res.body);
      const audit = await w.store.db.selectFrom('audit_logs').select('event').where('target_id', '=', apiId).execute();
      assert.deepEqual(
        audit.map((a) => a.event),
        ['api.create'],
      );
    });

    test('missing or empty apiId → 400 naming /apiId', async () => {
      for (const query of [{}, { apiId: '' }] as Array<Record<string, string>>) {
        const res = await w.get('/v1/apis.getApi', query);
        assert.equal(res.status, 400, res.body);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
        assert.deepEqual(
          res.json.error.errors.map((e: { path: string }) => e.path),
          ['/apiId'],
        );
      }
    });

    test('unknown API → 404 naming it', async () => {
      const res = await w.get('/v1/apis.getApi', { apiId: 'api_1111111111111111111111' });
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.code, 'NOT_FOUND');
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
      assert.equal(res.json.error.detail, 'api api_1111111111111111111111 not found');
    });

    test('a deleted API → 404', async () => {
      const apiId = await w.createApi('gone');
      await w.store.db.updateTable('apis').set({ deleted_at: Date.now() }).where('id', '=', apiId).execute();
      const res = await w.get('/v1/apis.getApi', { apiId });
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
    });

    test('api.<apiId>.read_api and api.*.read_api are enough', async () => {
      const apiId = await w.createApi('scoped-read');
      for (const permission of [`api.${apiId}.read_api`, 'api.*.read_api']) {
        const res = await w.get('/v1/apis.getApi', { apiId }, await w.rootKey([permission]));
        assert.equal(res.status, 200, `${permission}: ${res.body}`);
        assert.deepEqual(res.json, { id: apiId, name: 'scoped-read', workspaceId: w.workspaceId });
      }
    });

    test('read_api on another API, or another action on this one → 403 naming api.<apiId>.read_api', async () => {
      const apiId = await w.createApi('not-mine');
      const otherApiId = await w.createApi('mine');
      for (const permissions of [
        [`api.${otherApiId}.read_api`],
        [`api.${apiId}.read_key`, `api.${apiId}.delete_api`],
        ['api.*.read_key'],
      ]) {
        const res = await w.get('/v1/apis.getApi', { apiId }, await w.rootKey(permissions));
        assert.equal(res.status, 403, `${permissions.join(',')}: ${res.body}`);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.equal(res.json.error.detail, `Missing permission: api.${apiId}.read_api`);
      }
    });

    test("another workspace's API is 404 even for a root key lacking read_api (never 403)", async () => {
      const other = await w.otherWorkspace();
      const theirs = await w.createApi('theirs', other.root);
      for (const key of [w.root, await w.rootKey(['api.*.read_key']), await w.rootKey([`api.${theirs}.read_api`])]) {
        const res = await w.get('/v1/apis.getApi', { apiId: theirs }, key);
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
      }
      const own = await w.get('/v1/apis.getApi', { apiId: theirs }, other.root);
      assert.deepEqual(own.json, { id: theirs, name: 'theirs', workspaceId: other.workspaceId });
    });

    // The permission names the API the request is about; `request` creates it, so read it afterwards.
    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.read_api`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure');
        return { method: 'GET', path: '/v1/apis.getApi', query: { apiId: securityApiId } };
      },
      foreign: async (w, other) => ({ method: 'GET', path: '/v1/apis.getApi', query: { apiId: await w.createApi('foreign', other.root) } }),
    });
  });
}
