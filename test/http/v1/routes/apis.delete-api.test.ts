import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DIALECTS, world, type Response, type World } from '../../../helpers/harness.ts';
import { securityTests } from '../../../helpers/security.ts';
import { hashKey } from '../../../../src/crypto/keys.ts';

for (const dialect of DIALECTS) {
  describe(`apis.deleteApi (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const apiRow = (apiId: string) => w.store.db.selectFrom('apis').selectAll().where('id', '=', apiId).executeTakeFirstOrThrow();
    const keyRows = (apiId: string) =>
      w.store.db.selectFrom('keys').select(['id', 'deleted_at', 'updated_at']).where('api_id', '=', apiId).orderBy('id').execute();
    const deleteAudits = (apiId: string) =>
      w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', apiId).where('event', '=', 'api.delete').execute();

    test('soft-deletes the API and all its live keys; then getApi, listKeys and getKey are 404', async () => {
      const apiId = await w.createApi('doomed');
      const keys = [
        await w.createKey({ apiId }),
        await w.createKey({ apiId, externalId: 'someone' }),
        await w.createKey({ apiId, name: 'third' }),
      ];
      const survivorApi = await w.createApi('survivor');
      const survivor = await w.createKey({ apiId: survivorApi });

      const t0 = Date.now();
      const res = await w.post('/v1/apis.deleteApi', { apiId });
      const t1 = Date.now();
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});

      // Soft delete: the rows stay, marked deleted, all with the API's deletion time.
      const api = await apiRow(apiId);
      assert.ok(api.deleted_at !== null && api.deleted_at >= t0 && api.deleted_at <= t1, `api deleted_at ${api.deleted_at}`);
      const rows = await keyRows(apiId);
      assert.deepEqual(
        rows.map((r) => r.id),
        keys.map((k) => k.keyId).sort(),
      );
      for (const r of rows) {
        assert.equal(r.deleted_at, api.deleted_at);
        assert.equal(r.updated_at, api.deleted_at);
      }

      const got = await w.get('/v1/apis.getApi', { apiId });
      assert.equal(got.status, 404, got.body);
      assert.equal(got.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
      const listed = await w.get('/v1/apis.listKeys', { apiId });
      assert.equal(listed.status, 404, listed.body);
      assert.equal(listed.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
      for (const { keyId } of keys) {
        const k = await w.get('/v1/keys.getKey', { keyId });
        assert.equal(k.status, 404, k.body);
        assert.equal(k.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
      }
      const created = await w.post('/v1/keys.createKey', { apiId });
      assert.equal(created.status, 404, created.body);
      assert.equal(created.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');

      // Another API and its key are untouched.
      assert.equal((await w.get('/v1/apis.getApi', { apiId: survivorApi })).status, 200);
      const s = await w.get('/v1/keys.getKey', { keyId: survivor.keyId });
      assert.equal(s.status, 200, s.body);
      assert.equal((await w.get('/v1/apis.listKeys', { apiId: survivorApi })).json.total, 1);
    });

    test('keys deleted before keep their own deletion time', async () => {
      const apiId = await w.createApi('partly-deleted');
      const early = await w.createKey({ apiId });
      const live = await w.createKey({ apiId });
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: early.keyId })).status, 200);
      const earlyDeletedAt = (await keyRows(apiId)).find((r) => r.id === early.keyId)!.deleted_at;
      assert.notEqual(earlyDeletedAt, null);
      await new Promise((r) => setTimeout(r, 5));

      const res = await w.post('/v1/apis.deleteApi', { apiId });
      assert.equal(res.status, 200, res.body);
      const api = await apiRow(apiId);
      const rows = new Map((await keyRows(apiId)).map((r) => [r.id, r]));
      assert.equal(rows.get(early.keyId)!.deleted_at, earlyDeletedAt);
      assert.equal(rows.get(live.keyId)!.deleted_at, api.deleted_at);
      assert.ok(api.deleted_at! > earlyDeletedAt!);
      const [audit] = await deleteAudits(apiId);
      assert.deepEqual(JSON.parse(audit.diff!), { name: 'partly-deleted', deletedKeys: 1 });
    });

    test('an API without keys can be deleted', async () => {
      const apiId = await w.createApi('keyless');
      const res = await w.post('/v1/apis.deleteApi', { apiId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});
      assert.notEqual((await apiRow(apiId)).deleted_at, null);
    });

    test('writes one api.delete audit record naming the root key, the request and the deleted keys', async () => {
      const apiId = await w.createApi('audit-me');
      await w.createKey({ apiId });
      await w.createKey({ apiId });
      const res = await w.post('/v1/apis.deleteApi', { apiId });
      assert.equal(res.status, 200, res.body);
      const rootKey = await w.store.db.selectFrom('root_keys').select('id').where('hash', '=', hashKey(w.root)).executeTakeFirstOrThrow();
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', apiId).orderBy('id').execute();
      assert.deepEqual(
        audit.map((a) => a.event),
        ['api.create', 'api.delete'],
      );
      const a = audit[1];
      assert.equal(a.workspace_id, w.workspaceId);
      assert.equal(a.actor_type, 'root_key');
      assert.equal(a.actor_id, rootKey.id);
      assert.equal(a.target_type, 'api');
      assert.equal(a.request_id, res.headers['x-request-id']);
      assert.equal(a.created_at, (await apiRow(apiId)).deleted_at);
      assert.deepEqual(JSON.parse(a.diff!), { name: 'audit-me', deletedKeys: 2 });
    });

    test('a second delete → 404, and nothing more is written', async () => {
      const apiId = await w.createApi('twice');
      await w.createKey({ apiId });
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId })).status, 200);
      const api = await apiRow(apiId);
      const keys = await keyRows(apiId);
      const again = await w.post('/v1/apis.deleteApi', { apiId });
      assert.equal(again.status, 404, again.body);
      assert.equal(again.json.error.code, 'NOT_FOUND');
      assert.equal(again.json.error.detail, `api ${apiId} not found`);
      assert.deepEqual(await apiRow(apiId), api);
      assert.deepEqual(await keyRows(apiId), keys);
      assert.equal((await deleteAudits(apiId)).length, 1);
    });

    test('concurrent deletes of one API: exactly one succeeds, one audit record', async () => {
      const apiId = await w.createApi('raced');
      await w.createKey({ apiId });
      const results = await Promise.all(Array.from({ length: 4 }, () => w.post('/v1/apis.deleteApi', { apiId })));
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 404, 404, 404], results.map((r) => r.body).join('\n'));
      const audits = await deleteAudits(apiId);
      assert.equal(audits.length, 1);
      assert.deepEqual(JSON.parse(audits[0].diff!), { name: 'raced', deletedKeys: 1 });
    });

    test('unknown API → 404; nothing written', async () => {
      const before = await w.store.db
        .selectFrom('audit_logs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      const res = await w.post('/v1/apis.deleteApi', { apiId: 'api_1111111111111111111111' });
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.code, 'NOT_FOUND');
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
      assert.equal(res.json.error.detail, 'api api_1111111111111111111111 not found');
      const after = await w.store.db
        .selectFrom('audit_logs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(after.n), Number(before.n));
    });

    test('apiId missing, empty or not a string → 400 naming /apiId; unknown members are ignored', async () => {
      for (const body of [{}, { apiId: '' }, { apiId: 42 }, { apiId: null }]) {
        const res = await w.post('/v1/apis.deleteApi', body);
        assert.equal(res.status, 400, res.body);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
        assert.deepEqual(
          res.json.error.errors.map((e: { path: string }) => e.path),
          ['/apiId'],
        );
      }
      const apiId = await w.createApi('extra-members');
      const res = await w.post('/v1/apis.deleteApi', { apiId, permanent: true, whatever: 1 });
      assert.equal(res.status, 200, res.body);
      assert.notEqual((await apiRow(apiId)).deleted_at, null);
    });

    test('delete protection → 412 DELETE_PROTECTED; the API and its keys stay', async () => {
      const apiId = await w.createApi('protected');
      const { keyId } = await w.createKey({ apiId });
      await w.store.db.updateTable('apis').set({ delete_protection: 1 }).where('id', '=', apiId).execute();
      const before = await apiRow(apiId);
      for (const key of [w.root, await w.rootKey([`api.${apiId}.delete_api`])]) {
        const res = await w.post('/v1/apis.deleteApi', { apiId }, key);
        assert.equal(res.status, 412, res.body);
        assert.equal(res.json.error.code, 'DELETE_PROTECTED');
        assert.equal(res.json.error.title, 'Precondition Failed');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/state/delete-protected');
        assert.equal(res.json.error.detail, `api ${apiId} is protected from deletions`);
      }
      assert.deepEqual(await apiRow(apiId), before);
      assert.equal((await w.get('/v1/apis.getApi', { apiId })).status, 200);
      assert.equal((await w.get('/v1/keys.getKey', { keyId })).status, 200);
      assert.equal((await deleteAudits(apiId)).length, 0);

      // Once protection is lifted the delete goes through.
      await w.store.db.updateTable('apis').set({ delete_protection: 0 }).where('id', '=', apiId).execute();
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId })).status, 200);
      assert.equal((await w.get('/v1/keys.getKey', { keyId })).status, 404);
    });

    test('delete protection is not revealed to a root key without delete_api', async () => {
      const apiId = await w.createApi('protected-secret');
      await w.store.db.updateTable('apis').set({ delete_protection: 1 }).where('id', '=', apiId).execute();
      const res = await w.post('/v1/apis.deleteApi', { apiId }, await w.rootKey(['api.*.read_api']));
      assert.equal(res.status, 403, res.body);
      assert.equal(res.json.error.detail, `Missing permission: api.${apiId}.delete_api`);
    });

    test('when a step fails, nothing is deleted (one transaction)', async () => {
      const apiId = await w.createApi('atomic');
      const { keyId } = await w.createKey({ apiId });
      const before = { api: await apiRow(apiId), keys: await keyRows(apiId) };
      // Make the last step (the audit record) fail.
      await sql`alter table audit_logs rename to audit_logs_hidden`.execute(w.store.db);
      let res: Response;
      try {
        res = await w.post('/v1/apis.deleteApi', { apiId });
      } finally {
        await sql`alter table audit_logs_hidden rename to audit_logs`.execute(w.store.db);
      }
      assert.equal(res.status, 500, res.body);
      assert.equal(res.json.error.code, 'INTERNAL_SERVER_ERROR');
      assert.deepEqual(await apiRow(apiId), before.api);
      assert.deepEqual(await keyRows(apiId), before.keys);
      assert.equal((await w.get('/v1/apis.getApi', { apiId })).status, 200);
      assert.equal((await w.get('/v1/keys.getKey', { keyId })).status, 200);
    });

    test('api.<apiId>.delete_api and api.*.delete_api are enough', async () => {
      for (const scoped of [true, false]) {
        const apiId = await w.createApi(scoped ? 'scoped-delete' : 'wildcard-delete');
        const { keyId } = await w.createKey({ apiId });
        const res = await w.post(
          '/v1/apis.deleteApi',
          { apiId },
          await w.rootKey([scoped ? `api.${apiId}.delete_api` : 'api.*.delete_api']),
        );
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, {});
        assert.equal((await w.get('/v1/keys.getKey', { keyId })).status, 404);
      }
    });

    test('delete_api for another API, or other actions on this one → 403 naming api.<apiId>.delete_api; nothing deleted', async () => {
      const apiId = await w.createApi('kept');
      const { keyId } = await w.createKey({ apiId });
      const otherApiId = await w.createApi('other-deletable');
      for (const permissions of [
        [`api.${otherApiId}.delete_api`],
        [`api.${apiId}.delete_key`, `api.${apiId}.update_api`],
        ['api.*.delete_key'],
      ]) {
        const res = await w.post('/v1/apis.deleteApi', { apiId }, await w.rootKey(permissions));
        assert.equal(res.status, 403, `${permissions.join(',')}: ${res.body}`);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.equal(res.json.error.detail, `Missing permission: api.${apiId}.delete_api`);
      }
      assert.equal((await apiRow(apiId)).deleted_at, null);
      assert.equal((await w.get('/v1/keys.getKey', { keyId })).status, 200);
      assert.equal((await deleteAudits(apiId)).length, 0);
    });

    test("another workspace's API → 404 (never 403) and stays intact", async () => {
      const other = await w.otherWorkspace();
      const theirs = await w.createApi('theirs', other.root);
      const { keyId } = await w.createKey({ apiId: theirs }, other.root);
      for (const key of [w.root, await w.rootKey(['api.*.read_api']), await w.rootKey([`api.${theirs}.delete_api`])]) {
        const res = await w.post('/v1/apis.deleteApi', { apiId: theirs }, key);
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
      }
      assert.equal((await apiRow(theirs)).deleted_at, null);
      assert.equal((await w.get('/v1/apis.getApi', { apiId: theirs }, other.root)).status, 200);
      assert.equal((await w.get('/v1/keys.getKey', { keyId }, other.root)).status, 200);
    });

    // The permission names the API the request is about; `request` creates it, so read it afterwards.
    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.delete_api`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure');
        return { method: 'POST', path: '/v1/apis.deleteApi', body: { apiId: securityApiId } };
      },
      foreign: async (w, other) => ({
        method: 'POST',
        path: '/v1/apis.deleteApi',
        body: { apiId: await w.createApi('foreign', other.root) },
      }),
    });
  });
}
