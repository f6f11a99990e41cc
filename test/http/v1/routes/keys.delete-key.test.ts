import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { sha256b64 } from '../../../helpers/hashes.ts';
import { count, keyRowIfAny, rootKeyId } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';

/** The rows of `table` that belong to the key. */
const countWhereKey = (w: World, table: 'keys_roles' | 'keys_permissions' | 'ratelimits', keyId: string): Promise<number> =>
  count(w.store.db, table, ['key_id', keyId]);
const deleteAudits = (w: World, keyId: string) =>
  w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', keyId).where('event', '=', 'key.delete').execute();
/** An apis.listKeys page. */
type Page = Loose<{ keys: Array<{ id: string }>; total: number }>;

for (const dialect of DIALECTS) {
  describe(`keys.deleteKey (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('delete-api');
    });
    after(() => w.close());

    test('soft delete keeps the row marked deleted; getKey, whoami and listKeys no longer see it; audited', async () => {
      const { key, keyId } = await w.createKey({
        apiId,
        externalId: 'user_soft',
        roles: ['soft-role'],
        permissions: ['soft.perm'],
        ratelimit: { limit: 1, duration: 1000 },
      });
      const keep = await w.createKey({ apiId });
      const listed = await w.get<Page>('/v1/apis.listKeys', { apiId });
      assert.ok(listed.json.keys.some((k: { id: string }) => k.id === keyId));
      const t0 = Date.now();
      const res = await w.post('/v1/keys.deleteKey', { keyId });
      const t1 = Date.now();
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});

      const row = await keyRowIfAny(w, keyId);
      assert.ok(row, 'a soft-deleted key stays stored');
      assert.ok(row.deleted_at !== null && row.deleted_at >= t0 && row.deleted_at <= t1, `deleted_at ${row.deleted_at}`);
      assert.equal(row.updated_at, row.deleted_at);
      assert.equal(row.hash, sha256b64(key));
      // Its links stay with it (a soft delete changes only the key row).
      assert.equal(await countWhereKey(w, 'keys_roles', keyId), 1);
      assert.equal(await countWhereKey(w, 'keys_permissions', keyId), 1);
      assert.equal(await countWhereKey(w, 'ratelimits', keyId), 1);

      assert.equal((await w.get('/v1/keys.getKey', { keyId })).status, 404);
      assert.equal((await w.post('/v1/keys.whoami', { key })).status, 404);
      const after = await w.get<Page>('/v1/apis.listKeys', { apiId });
      assert.equal(after.status, 200, after.body);
      assert.ok(!after.json.keys.some((k: { id: string }) => k.id === keyId));
      assert.ok(after.json.keys.some((k: { id: string }) => k.id === keep.keyId));
      assert.equal(after.json.total, listed.json.total - 1);
      // Other keys are untouched.
      assert.equal((await keyRowIfAny(w, keep.keyId))!.deleted_at, null);

      const audit = await deleteAudits(w, keyId);
      assert.equal(audit.length, 1);
      assert.equal(audit[0].actor_type, 'root_key');
      assert.equal(audit[0].actor_id, await rootKeyId(w, w.root));
      assert.equal(audit[0].request_id, res.headers['x-request-id']);
      assert.equal(audit[0].workspace_id, w.workspaceId);
      assert.equal(audit[0].target_type, 'key');
      assert.equal(JSON.parse(audit[0].diff!).permanent, false);
      assert.ok(!JSON.stringify(audit).includes(key));
    });

    test('permanent:true removes the row and its links, limits and encrypted copy; roles, permissions and identity stay', async () => {
      const { keyId } = await w.createKey({
        apiId,
        externalId: 'user_hard',
        roles: ['hard-role'],
        permissions: ['hard.perm'],
        ratelimit: { limit: 1, duration: 1000 },
      });
      const identityId = (await keyRowIfAny(w, keyId))!.identity_id!;
      // An encrypted copy, as a recoverable key would have.
      const now = Date.now();
      await w.store.db
        .insertInto('data_keys')
        .values({ id: `dk_for_${keyId}`, workspace_id: w.workspaceId, master_key_id: 'mk_test', wrapped: 'x', created_at: now })
        .execute();
      await w.store.db
        .insertInto('encrypted_keys')
        .values({ key_id: keyId, workspace_id: w.workspaceId, data_key_id: `dk_for_${keyId}`, ciphertext: 'y', created_at: now })
        .execute();
      const res = await w.post('/v1/keys.deleteKey', { keyId, permanent: true });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, {});
      assert.equal(await keyRowIfAny(w, keyId), undefined);
      assert.equal(await countWhereKey(w, 'keys_roles', keyId), 0);
      assert.equal(await countWhereKey(w, 'keys_permissions', keyId), 0);
      assert.equal(await countWhereKey(w, 'ratelimits', keyId), 0);
      assert.equal((await w.store.db.selectFrom('encrypted_keys').select('key_id').where('key_id', '=', keyId).execute()).length, 0);
      assert.ok(await w.store.db.selectFrom('roles').select('id').where('name', '=', 'hard-role').executeTakeFirst());
      assert.ok(await w.store.db.selectFrom('permissions').select('id').where('slug', '=', 'hard.perm').executeTakeFirst());
      assert.ok(await w.store.db.selectFrom('identities').select('id').where('id', '=', identityId).executeTakeFirst());
      assert.equal((await w.get('/v1/keys.getKey', { keyId })).status, 404);
      const audit = await deleteAudits(w, keyId);
      assert.equal(audit.length, 1);
      assert.equal(JSON.parse(audit[0].diff!).permanent, true);
      assert.equal(audit[0].request_id, res.headers['x-request-id']);
    });

    test('permanent:false is a soft delete', async () => {
      const { keyId } = await w.createKey({ apiId });
      const res = await w.post('/v1/keys.deleteKey', { keyId, permanent: false });
      assert.equal(res.status, 200, res.body);
      assert.notEqual((await keyRowIfAny(w, keyId))!.deleted_at, null);
    });

    test('a second delete → 404, soft or permanent, and writes no second audit record', async () => {
      for (const [first, second] of [
        [false, false],
        [true, true],
        [true, false],
        [false, true],
      ]) {
        const { keyId } = await w.createKey({ apiId });
        assert.equal((await w.post('/v1/keys.deleteKey', { keyId, permanent: first })).status, 200);
        const before = await keyRowIfAny(w, keyId);
        const again = await w.post('/v1/keys.deleteKey', { keyId, permanent: second });
        assert.equal(again.status, 404, again.body);
        assert.equal(again.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        assert.deepEqual(await keyRowIfAny(w, keyId), before, 'the second call changes nothing');
        assert.equal((await deleteAudits(w, keyId)).length, 1);
      }
    });

    test('concurrent deletes of one key: exactly one succeeds, the others are 404, one audit record', async () => {
      for (const permanent of [false, true]) {
        const { keyId } = await w.createKey({ apiId, roles: ['race-role'] });
        const results = await Promise.all(Array.from({ length: 6 }, () => w.post('/v1/keys.deleteKey', { keyId, permanent })));
        assert.deepEqual(results.map((r) => r.status).sort(), [200, 404, 404, 404, 404, 404], results.map((r) => r.body).join('\n'));
        assert.equal((await deleteAudits(w, keyId)).length, 1);
        if (permanent) assert.equal(await keyRowIfAny(w, keyId), undefined);
        else assert.notEqual((await keyRowIfAny(w, keyId))!.deleted_at, null);
      }
    });

    test('unknown key → 404', async () => {
      const res = await w.post('/v1/keys.deleteKey', { keyId: 'key_1111111111111111111111' });
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.code, 'NOT_FOUND');
      assert.ok(res.json.error.detail.includes('key_1111111111111111111111'));
    });

    test('invalid bodies → 400; nothing deleted', async () => {
      const { keyId } = await w.createKey({ apiId });
      for (const [body, paths] of [
        [{}, ['/keyId']],
        [{ keyId: '' }, ['/keyId']],
        [{ keyId: 5 }, ['/keyId']],
        [{ keyId, permanent: 'yes' }, ['/permanent']],
        [{ keyId: '', permanent: 1 }, ['/keyId', '/permanent']],
      ] as const) {
        const res = await w.post('/v1/keys.deleteKey', body);
        assert.equal(res.status, 400, res.body);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.deepEqual(res.json.error.errors.map((e: { path: string }) => e.path).sort(), paths);
      }
      const bad = await w.post('/v1/keys.deleteKey', `{"keyId":"${keyId}"`);
      assert.equal(bad.status, 400, bad.body);
      const row = await keyRowIfAny(w, keyId);
      assert.equal(row!.deleted_at, null);
      assert.equal((await deleteAudits(w, keyId)).length, 0);
    });

    test('unknown members are ignored', async () => {
      const { keyId } = await w.createKey({ apiId });
      const res = await w.post('/v1/keys.deleteKey', { keyId, reason: 'cleanup', apiId: 'api_x' });
      assert.equal(res.status, 200, res.body);
      assert.notEqual((await keyRowIfAny(w, keyId))!.deleted_at, null);
    });

    test('delete_key for this api or api.* is enough; for another api, or another action → 403; the key stays', async () => {
      const otherApi = await w.createApi('other-delete');
      for (const permissions of [[`api.${apiId}.delete_key`], ['api.*.delete_key']]) {
        const { keyId } = await w.createKey({ apiId });
        const res = await w.post('/v1/keys.deleteKey', { keyId, permanent: true }, await w.rootKey(permissions));
        assert.equal(res.status, 200, `${permissions}: ${res.body}`);
        assert.equal(await keyRowIfAny(w, keyId), undefined);
      }
      const { keyId } = await w.createKey({ apiId });
      for (const permissions of [
        [`api.${otherApi}.delete_key`],
        [`api.${apiId}.update_key`, `api.${apiId}.read_key`],
        ['api.*.delete_api'],
      ]) {
        const res = await w.post('/v1/keys.deleteKey', { keyId }, await w.rootKey(permissions));
        assert.equal(res.status, 403, `${permissions}: ${res.body}`);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.ok(res.json.error.detail.includes(`api.${apiId}.delete_key`), res.json.error.detail);
      }
      assert.equal((await keyRowIfAny(w, keyId))!.deleted_at, null);
      assert.equal((await deleteAudits(w, keyId)).length, 0);
    });

    // The 403 names the API of the key the request is about; `request` creates it, so read it afterwards.
    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.delete_key`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure');
        const { keyId } = await w.createKey({ apiId: securityApiId });
        return { method: 'POST', path: '/v1/keys.deleteKey', body: { keyId } };
      },
      foreign: async (w, other) => {
        const { keyId } = await w.createKey({ apiId: await w.createApi('foreign', other.root) }, other.root);
        return { method: 'POST', path: '/v1/keys.deleteKey', body: { keyId, permanent: true } };
      },
    });

    test("another workspace's key → 404 and stays untouched", async () => {
      const other = await w.otherWorkspace();
      const { keyId } = await w.createKey({ apiId: await w.createApi('theirs', other.root) }, other.root);
      for (const permanent of [false, true]) {
        const res = await w.post('/v1/keys.deleteKey', { keyId, permanent });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
      }
      assert.equal((await keyRowIfAny(w, keyId))!.deleted_at, null);
      assert.equal((await deleteAudits(w, keyId)).length, 0);
      assert.equal((await w.get('/v1/keys.getKey', { keyId }, other.root)).status, 200);
    });

    test('security failures delete nothing', async () => {
      const { keyId } = await w.createKey({ apiId });
      const revoked = await w.revokedRootKey();
      const noPerm = await w.rootKey(['api.*.read_key']);
      for (const [key, status] of [
        [null, 401],
        [revoked, 401],
        [noPerm, 403],
      ] as const) {
        const res = await w.post('/v1/keys.deleteKey', { keyId, permanent: true }, key);
        assert.equal(res.status, status, res.body);
      }
      assert.equal((await keyRowIfAny(w, keyId))!.deleted_at, null);
    });
  });
}
