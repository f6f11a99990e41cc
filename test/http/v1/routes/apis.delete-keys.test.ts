import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import { count, keyRowIfAny, rootKeyId } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';
import { errorPaths } from '../../../helpers/errors.ts';
import { hashOf, newPlain } from '../../../helpers/migrations.ts';

const PATH = '/v1/apis.deleteKeys';

/** The `key.delete` audit records of these keys. */
const deleteAudits = (w: World, keyIds: string[]) =>
  w.store.db.selectFrom('audit_logs').selectAll().where('event', '=', 'key.delete').where('target_id', 'in', keyIds).execute();
/** The stored key rows of an API, deleted or not. */
const keyRows = (w: World, apiId: string) => w.store.db.selectFrom('keys').selectAll().where('api_id', '=', apiId).execute();
/** The rows of `table` that belong to the key. */
const rowsOfKey = (w: World, table: 'keys_roles' | 'keys_permissions' | 'ratelimits' | 'encrypted_keys', keyId: string) =>
  count(w.store.db, table, ['key_id', keyId]);
const verify = async (w: World, key: string) => (await w.post<{ code: string }>('/v1/keys.verifyKey', { key }, null)).json.code;

for (const dialect of DIALECTS) {
  describe(`apis.deleteKeys (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    test('soft: marks every live key deleted in one go, counts them, audits each; the API and its other keys stay usable', async () => {
      const apiId = await w.createApi('soft-bulk');
      const otherApi = await w.createApi('soft-bulk-neighbour');
      const rich = await w.createKey({ apiId, roles: ['bulk-role'], permissions: ['bulk.perm'], ratelimit: { limit: 5, duration: 1000 } });
      const plain = [await w.createKey({ apiId }), await w.createKey({ apiId })];
      const earlier = await w.createKey({ apiId });
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: earlier.keyId })).status, 200);
      const earlierRow = await keyRowIfAny(w, earlier.keyId);
      const neighbour = await w.createKey({ apiId: otherApi });
      // Cached as VALID first: the deletion must drop it from the cache.
      assert.equal(await verify(w, rich.key), 'VALID');

      const t0 = Date.now();
      const res = await w.post(PATH, { apiId });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, { deletedKeys: 3 });

      const deletedIds = [rich.keyId, ...plain.map((k) => k.keyId)];
      for (const keyId of deletedIds) {
        const row = await keyRowIfAny(w, keyId);
        assert.ok(row, 'a soft-deleted key stays stored');
        assert.ok(row.deleted_at !== null && row.deleted_at >= t0, `${keyId} deleted_at ${row.deleted_at}`);
      }
      assert.deepEqual(await keyRowIfAny(w, earlier.keyId), earlierRow, 'a key deleted before is not touched again');
      // A soft delete changes only the key rows.
      assert.equal(await rowsOfKey(w, 'keys_roles', rich.keyId), 1);
      assert.equal(await rowsOfKey(w, 'ratelimits', rich.keyId), 1);

      assert.equal(await verify(w, rich.key), 'NOT_FOUND');
      assert.equal((await w.get('/v1/keys.getKey', { keyId: plain[0].keyId })).status, 404);
      const listed = await w.get('/v1/apis.listKeys', { apiId });
      assert.deepEqual([listed.json.keys, listed.json.total], [[], 0]);
      assert.equal(await verify(w, neighbour.key), 'VALID', "another API's keys stay");
      assert.equal((await w.get('/v1/apis.getApi', { apiId })).status, 200, 'the API itself stays');
      const fresh = await w.createKey({ apiId });
      assert.equal(await verify(w, fresh.key), 'VALID');

      const audit = await deleteAudits(w, [...deletedIds, earlier.keyId]);
      assert.deepEqual(audit.map((a) => a.target_id).sort(), [...deletedIds, earlier.keyId].sort(), 'one record per key');
      const actor = await rootKeyId(w, w.root);
      for (const a of audit.filter((r) => r.target_id !== earlier.keyId)) {
        assert.deepEqual(
          [a.workspace_id, a.actor_type, a.actor_id, a.target_type, a.request_id, JSON.parse(a.diff!)],
          [w.workspaceId, 'root_key', actor, 'key', res.headers['x-request-id'], { permanent: false }],
        );
      }
      const feed = await w.store.db.selectFrom('change_feed').select('id').where('kind', '=', 'api').where('ref', '=', apiId).execute();
      assert.equal(feed.length, 1, 'one change drops the API’s keys from every cache');
    });

    test('permanent after soft: removes the soft-deleted rows too and counts every row removed; then 0', async () => {
      const apiId = await w.createApi('soft-then-hard');
      const keys = [await w.createKey({ apiId, roles: ['r-hard'] }), await w.createKey({ apiId }), await w.createKey({ apiId })];
      const ids = keys.map((k) => k.keyId);
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: ids[2] })).status, 200);
      assert.deepEqual((await w.post(PATH, { apiId })).json, { deletedKeys: 2 });
      assert.deepEqual((await w.post(PATH, { apiId })).json, { deletedKeys: 0 }, 'nothing live is left');
      const live = await w.createKey({ apiId });

      const res = await w.post(PATH, { apiId, permanent: true });
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json, { deletedKeys: 4 }, '3 rows soft-deleted by earlier calls and 1 live key');
      assert.deepEqual(await keyRows(w, apiId), []);
      assert.equal(await rowsOfKey(w, 'keys_roles', ids[0]), 0);
      assert.equal(await verify(w, live.key), 'NOT_FOUND');
      const permanent = (await deleteAudits(w, [...ids, live.keyId])).filter((a) => JSON.parse(a.diff!).permanent === true);
      assert.deepEqual(permanent.map((a) => a.target_id).sort(), [...ids, live.keyId].sort());
      assert.ok(permanent.every((a) => a.request_id === res.headers['x-request-id']));

      assert.deepEqual((await w.post(PATH, { apiId, permanent: true })).json, { deletedKeys: 0 });
      assert.deepEqual((await w.post(PATH, { apiId, permanent: false })).json, { deletedKeys: 0 });
    });

    test('permanent: every row goes with its links, limits and encrypted copy; roles, permissions, identity and API stay', async () => {
      const apiId = await w.createApi('hard-bulk');
      const { keyId } = await w.createKey({
        apiId,
        externalId: 'user_bulk',
        roles: ['hard-bulk-role'],
        permissions: ['hard-bulk.perm'],
        ratelimit: { limit: 1, duration: 1000 },
        recoverable: true,
      });
      const identityId = (await keyRowIfAny(w, keyId))!.identity_id!;
      assert.equal(await rowsOfKey(w, 'encrypted_keys', keyId), 1);
      assert.deepEqual((await w.post(PATH, { apiId, permanent: true })).json, { deletedKeys: 1 });
      for (const table of ['keys_roles', 'keys_permissions', 'ratelimits', 'encrypted_keys'] as const)
        assert.equal(await rowsOfKey(w, table, keyId), 0, table);
      assert.ok(await w.store.db.selectFrom('roles').select('id').where('name', '=', 'hard-bulk-role').executeTakeFirst());
      assert.ok(await w.store.db.selectFrom('permissions').select('id').where('slug', '=', 'hard-bulk.perm').executeTakeFirst());
      assert.ok(await w.store.db.selectFrom('identities').select('id').where('id', '=', identityId).executeTakeFirst());
      assert.equal((await w.get('/v1/apis.getApi', { apiId })).status, 200);
    });

    test('an API without keys → {deletedKeys: 0}, and no change for the caches', async () => {
      const apiId = await w.createApi('empty-bulk');
      for (const permanent of [false, true]) assert.deepEqual((await w.post(PATH, { apiId, permanent })).json, { deletedKeys: 0 });
      assert.equal(await count(w.store.db, 'change_feed', ['ref', apiId]), 0);
    });

    test('1600 keys (more audit records than one statement may bind): all deleted, all audited, soft then permanent', async () => {
      const apiId = await w.createApi('many-keys');
      for (let i = 0; i < 2; i++) {
        const items = Array.from({ length: 800 }, () => ({ apiId, hash: hashOf(newPlain()) }));
        const imported = await w.post('/v1/migrations.createKeys', items);
        assert.equal(imported.status, 200, imported.body.slice(0, 300));
      }
      const ids = (await keyRows(w, apiId)).map((r) => r.id);
      assert.equal(ids.length, 1600);
      assert.deepEqual((await w.post(PATH, { apiId })).json, { deletedKeys: 1600 });
      assert.deepEqual((await w.post(PATH, { apiId, permanent: true })).json, { deletedKeys: 1600 });
      assert.deepEqual(await keyRows(w, apiId), []);
      const audited = await w.store.db
        .selectFrom('audit_logs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('event', '=', 'key.delete')
        .where('target_id', 'in', ids)
        .executeTakeFirstOrThrow();
      assert.equal(Number(audited.n), 3200, 'two records per key: soft, then permanent');
    });

    test('concurrent with keys.deleteKey: every key is deleted and audited exactly once', async () => {
      const apiId = await w.createApi('race-bulk');
      const keys = await Promise.all(Array.from({ length: 6 }, () => w.createKey({ apiId })));
      const ids = keys.map((k) => k.keyId);
      const [bulk, ...singles] = await Promise.all([
        w.post<{ deletedKeys: number }>(PATH, { apiId }),
        ...ids.map((keyId) => w.post('/v1/keys.deleteKey', { keyId })),
      ]);
      assert.equal(bulk.status, 200, bulk.body);
      const singleOk = singles.filter((r) => r.status === 200).length;
      assert.ok(
        singles.every((r) => r.status === 200 || r.status === 404),
        singles.map((r) => r.body).join('\n'),
      );
      assert.equal(bulk.json.deletedKeys + singleOk, ids.length);
      assert.deepEqual((await deleteAudits(w, ids)).map((a) => a.target_id).sort(), [...ids].sort());
    });

    test('unknown, deleted or another workspace’s API → 404 data/api-not-found; their keys stay', async () => {
      const unknown = await w.post(PATH, { apiId: 'api_1111111111111111111111' });
      assert.equal(unknown.status, 404, unknown.body);
      assert.equal(unknown.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
      assert.equal(unknown.json.error.detail, 'api api_1111111111111111111111 not found');

      const gone = await w.createApi('gone-bulk');
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: gone })).status, 200);
      for (const permanent of [false, true]) assert.equal((await w.post(PATH, { apiId: gone, permanent })).status, 404);

      const other = await w.otherWorkspace();
      const theirs = await w.createApi('theirs-bulk', other.root);
      const { key, keyId } = await w.createKey({ apiId: theirs }, other.root);
      for (const permanent of [false, true]) {
        const res = await w.post(PATH, { apiId: theirs, permanent });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
      }
      assert.equal((await keyRowIfAny(w, keyId))!.deleted_at, null);
      assert.equal(await verify(w, key), 'VALID');
      assert.deepEqual(await deleteAudits(w, [keyId]), []);
    });

    test('invalid bodies → 400 naming every member; nothing deleted', async () => {
      const apiId = await w.createApi('invalid-bulk');
      const { keyId } = await w.createKey({ apiId });
      for (const [body, paths] of [
        [{}, ['/apiId']],
        [{ apiId: '' }, ['/apiId']],
        [{ apiId: 5 }, ['/apiId']],
        [{ apiId, permanent: 'yes' }, ['/permanent']],
        [{ apiId: '', permanent: 1 }, ['/apiId', '/permanent']],
      ] as const) {
        assert.deepEqual(errorPaths(await w.post(PATH, body)), paths, JSON.stringify(body));
      }
      assert.equal((await w.post(PATH, `{"apiId":"${apiId}"`)).status, 400);
      assert.equal((await keyRowIfAny(w, keyId))!.deleted_at, null);
      const ignored = await w.post(PATH, { apiId, extra: true, keyId: 'key_x' });
      assert.deepEqual(ignored.json, { deletedKeys: 1 }, 'undeclared members are ignored');
    });

    test('delete_key on this API or api.* suffices; on another API, or another action → 403 naming it; nothing deleted', async () => {
      const apiId = await w.createApi('perm-bulk');
      const otherApi = await w.createApi('perm-bulk-other');
      for (const permissions of [[`api.${apiId}.delete_key`], ['api.*.delete_key']]) {
        await w.createKey({ apiId });
        const res = await w.post(PATH, { apiId, permanent: true }, await w.rootKey(permissions));
        assert.deepEqual([res.status, res.json], [200, { deletedKeys: 1 }], `${permissions}: ${res.body}`);
      }
      const { keyId } = await w.createKey({ apiId });
      for (const permissions of [[`api.${otherApi}.delete_key`], ['api.*.delete_api', `api.${apiId}.update_key`]]) {
        const res = await w.post(PATH, { apiId }, await w.rootKey(permissions));
        assert.equal(res.status, 403, `${permissions}: ${res.body}`);
        assert.equal(res.json.error.detail, `Missing permission: api.${apiId}.delete_key`);
      }
      assert.equal((await keyRowIfAny(w, keyId))!.deleted_at, null);
      assert.deepEqual(await deleteAudits(w, [keyId]), []);
    });

    // The 403 names the API the request is about; `request` creates it, so read it afterwards.
    let securityApiId = '<apiId>';
    securityTests(() => w, {
      get permission() {
        return `api.${securityApiId}.delete_key`;
      },
      request: async (w) => {
        securityApiId = await w.createApi('secure-bulk');
        await w.createKey({ apiId: securityApiId });
        return { method: 'POST', path: PATH, body: { apiId: securityApiId } };
      },
      foreign: async (w, other) => {
        const apiId = await w.createApi('foreign-bulk', other.root);
        await w.createKey({ apiId }, other.root);
        return { method: 'POST', path: PATH, body: { apiId, permanent: true } };
      },
    });
  });
}
