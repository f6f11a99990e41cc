import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, world, type Response, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { paths } from '../../../helpers/errors.ts';
import { sha256b64 } from '../../../helpers/hashes.ts';
import { drain, hashOf, newPlain } from '../../../helpers/migrations.ts';
import { count } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';
import { windowWithRoom } from '../../../helpers/timing.ts';
import { buildApp } from '../../../../src/app.ts';
import { createMigration } from '../../../../src/services/migrations/migration-records.ts';

const PATH = '/v1/migrations.enqueueKeys';
const STATUS = '/v1/migrations.getMigration';
const assertError = (res: Response, status: number, kind: string) => {
  assert.equal(res.status, status, res.body);
  assert.equal(res.json.error.type, `https://keyhold.dev/errors/${kind}`);
};
/** A migrations.getMigration answer, with the members these tests compute with. */
type Migration = Loose<{ updatedAt: number; failures: Array<Loose<{ index: number; hash: string; reason: string }>> }>;

for (const dialect of DIALECTS) {
  describe(`migrations.enqueueKeys and getMigration (${dialect})`, () => {
    let w: World;
    let apiId: string;
    const newMigration = async (workspaceId = w.workspaceId) =>
      (await createMigration(w.store.db, workspaceId, 'test', OPERATOR)).migrationId;
    const enqueueOk = async (body: Record<string, unknown>, key = w.root) => {
      const res = await w.post<{ migrationId: string; enqueued: number }>(PATH, body, key);
      assert.equal(res.status, 202, res.body);
      return res.json;
    };
    const items = (migrationId: string) =>
      w.store.db.selectFrom('key_migration_items').selectAll().where('migration_id', '=', migrationId).orderBy('item_index').execute();

    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('migration-target');
    });
    after(() => w.close());

    test('202 {migrationId, enqueued}: every item is a pending row at once, indexes continue across requests, one job per request, audited', async () => {
      const migrationId = await newMigration();
      const plains = [newPlain(), newPlain(), newPlain()];
      const first = await enqueueOk({ migrationId, apiId, keys: [{ hash: hashOf(plains[0]) }, { plaintext: plains[1], prefix: 'imp' }] });
      assert.deepEqual(first, { migrationId, enqueued: 2 });
      const second = await enqueueOk({ migrationId, apiId, keys: [{ hash: hashOf(plains[2]), name: 'third' }] });
      assert.deepEqual(second, { migrationId, enqueued: 1 });
      // Durable before any worker ran: the rows and the jobs are committed when the 202 is sent.
      const rows = await items(migrationId);
      assert.deepEqual(
        rows.map((r) => [Number(r.item_index), r.hash, r.status, r.key_id, r.reason]),
        plains.map((p, i) => [i, sha256b64(p), 'pending', null, null]),
      );
      const jobs = await w.store.db.selectFrom('jobs').selectAll().where('payload', 'like', `%${migrationId}%`).orderBy('id').execute();
      assert.equal(jobs.length, 2);
      assert.deepEqual(
        jobs.map((j) => [j.task, j.status, Number(j.attempts)]),
        [
          ['migration.import', 'pending', 0],
          ['migration.import', 'pending', 0],
        ],
      );
      // The plaintext is at rest only as the vault's ciphertext: not in the job, the items or the audit log.
      const everything = JSON.stringify([jobs, rows, await w.store.db.selectFrom('audit_logs').selectAll().execute()]);
      assert.ok(!everything.includes(plains[1]), 'no plaintext in the queue');
      const payload = JSON.parse(jobs[0].payload);
      assert.equal(payload.items[1].start, plains[1].slice(0, 8));
      assert.ok(payload.items[1].encrypted.ciphertext);
      const audit = await w.store.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('target_id', '=', migrationId)
        .where('event', '=', 'migration.enqueue')
        .orderBy('id')
        .execute();
      assert.equal(audit.length, 2);
      assert.equal(audit[0].actor_type, 'root_key');
      assert.match(audit[0].request_id!, /^req_/);
      assert.deepEqual(
        { ...JSON.parse(audit[0].diff!), jobId: undefined },
        { apiId, enqueued: 2, firstIndex: 0, lastIndex: 1, jobId: undefined },
      );
      const status = await w.get(STATUS, { migrationId });
      assert.equal(status.status, 200, status.body);
      assert.deepEqual(
        { ...status.json, updatedAt: 0 },
        {
          migrationId,
          workspaceId: w.workspaceId,
          status: 'pending',
          counts: { enqueued: 3, pending: 3, migrated: 0, failed: 0 },
          failures: [],
          updatedAt: 0,
        },
      );
      await drain(w.store);
    });

    test('validation: every problem of every item is listed with its path (400), nothing is enqueued', async () => {
      const migrationId = await newMigration();
      const before = [await count(w.store.db, 'key_migration_items'), await count(w.store.db, 'jobs')];
      const p = newPlain();
      const res = await w.post(PATH, {
        migrationId,
        apiId,
        keys: [
          { name: 'neither' },
          { hash: hashOf(p), plaintext: p },
          { hash: { value: 'not-base64', variant: 'sha256_base64' } },
          { hash: { value: sha256b64(p), variant: 'md5' } },
          { plaintext: newPlain(), prefix: 'ninechars' },
          { hash: hashOf(newPlain()), ratelimit: { type: 'fast', limit: 10, refillRate: 1, refillInterval: 1000 } },
          { hash: hashOf(newPlain()), apiId },
          { hash: hashOf(newPlain()), externalId: 'user_1' },
          { hash: hashOf(newPlain()), remaining: 0 },
          { hash: hashOf(newPlain()), refill: { interval: 'daily', amount: 10 } },
          { hash: hashOf(newPlain()), ratelimit: { limit: 10, duration: 999 } },
          { plaintext: 'other_abcdefgh', prefix: 'imp' },
        ],
      });
      assertError(res, 400, 'request/invalid-body');
      assert.deepEqual(paths(res), [
        '/keys/0',
        '/keys/1',
        '/keys/10/ratelimit/duration',
        '/keys/11/prefix',
        '/keys/2/hash/value',
        '/keys/3/hash/variant',
        '/keys/4/prefix',
        '/keys/5/ratelimit/duration',
        '/keys/6/apiId',
        '/keys/7/externalId',
        '/keys/8/remaining',
        '/keys/9/refill',
      ]);
      const messages = Object.fromEntries(res.json.error.errors.map((e: { path: string; message: string }) => [e.path, e.message]));
      assert.match(messages['/keys/6/apiId'], /not allowed/);
      assert.match(messages['/keys/7/externalId'], /not allowed/);
      assert.ok(!res.body.includes(p), 'no plaintext in errors');

      const tooMany = await w.post(PATH, { migrationId, apiId, keys: Array.from({ length: 101 }, () => ({ hash: hashOf(newPlain()) })) });
      assertError(tooMany, 400, 'request/invalid-body');
      assert.deepEqual(paths(tooMany), ['/keys']);
      assert.deepEqual(paths(await w.post(PATH, { migrationId, apiId, keys: [] })), ['/keys']);
      assert.deepEqual(paths(await w.post(PATH, { apiId: '', keys: [{ hash: hashOf(newPlain()) }] })), ['/apiId', '/migrationId']);
      assert.deepEqual([await count(w.store.db, 'key_migration_items'), await count(w.store.db, 'jobs')], before);
      // Exactly 100 is fine.
      assert.equal(
        (await enqueueOk({ migrationId, apiId, keys: Array.from({ length: 100 }, () => ({ hash: hashOf(newPlain()) })) })).enqueued,
        100,
      );
      await drain(w.store);
    });

    test('404: unknown or foreign migration, unknown, deleted or foreign API; nothing enqueued', async () => {
      const other = await w.otherWorkspace();
      const foreignMigration = await newMigration(other.workspaceId);
      const foreignApi = await w.createApi('foreign', other.root);
      const migrationId = await newMigration();
      const deletedApi = await w.createApi('deleted');
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: deletedApi })).status, 200);
      const keys = [{ hash: hashOf(newPlain()) }];
      const before = await count(w.store.db, 'key_migration_items');
      assertError(await w.post(PATH, { migrationId: 'mig_nope', apiId, keys }), 404, 'data/migration-not-found');
      assertError(await w.post(PATH, { migrationId: foreignMigration, apiId, keys }), 404, 'data/migration-not-found');
      assertError(await w.post(PATH, { migrationId, apiId: 'api_nope', keys }), 404, 'data/api-not-found');
      assertError(await w.post(PATH, { migrationId, apiId: deletedApi, keys }), 404, 'data/api-not-found');
      assertError(await w.post(PATH, { migrationId, apiId: foreignApi, keys }), 404, 'data/api-not-found');
      // The other workspace cannot use ours either.
      assertError(await w.post(PATH, { migrationId, apiId: foreignApi, keys }, other.root), 404, 'data/migration-not-found');
      assert.equal(await count(w.store.db, 'key_migration_items'), before);
    });

    test('403: api.<api>.create_key, plus api.<api>.encrypt_key only with plaintexts (both named); nothing enqueued', async () => {
      const migrationId = await newMigration();
      const before = await count(w.store.db, 'key_migration_items');
      const none = await w.post(PATH, { migrationId, apiId, keys: [{ plaintext: newPlain() }] }, await w.rootKey(['api.*.read_key']));
      assertError(none, 403, 'auth/insufficient-permissions');
      assert.ok(
        none.json.error.detail.includes(`api.${apiId}.create_key`) && none.json.error.detail.includes(`api.${apiId}.encrypt_key`),
        none.json.error.detail,
      );
      const createOnly = await w.rootKey([`api.${apiId}.create_key`]);
      const plain = await w.post(PATH, { migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }, { plaintext: newPlain() }] }, createOnly);
      assertError(plain, 403, 'auth/insufficient-permissions');
      assert.equal(plain.json.error.detail, `Missing permission: api.${apiId}.encrypt_key`);
      const otherApi = await w.post(
        PATH,
        { migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }] },
        await w.rootKey(['api.api_other.create_key']),
      );
      assertError(otherApi, 403, 'auth/insufficient-permissions');
      assert.equal(await count(w.store.db, 'key_migration_items'), before);
      await enqueueOk({ migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }] }, createOnly);
      await enqueueOk(
        { migrationId, apiId, keys: [{ plaintext: newPlain() }] },
        await w.rootKey(['api.*.create_key', `api.${apiId}.encrypt_key`]),
      );
      await drain(w.store);
    });

    test('a server without a vault: plaintext items → 412 (after the permission check), hashed items are enqueued', async () => {
      const bare = await buildApp({ store: w.store });
      try {
        const send = async (body: unknown, key: string): Promise<Response> => {
          const r = await bare.inject({
            method: 'POST',
            url: PATH,
            payload: JSON.stringify(body),
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          });
          return { status: r.statusCode, json: r.json(), body: r.body, headers: r.headers };
        };
        const migrationId = await newMigration();
        const res = await send({ migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }, { plaintext: newPlain() }] }, w.root);
        assertError(res, 412, 'state/precondition-failed');
        assert.match(res.json.error.detail, /vault/);
        assertError(
          await send({ migrationId, apiId, keys: [{ plaintext: newPlain() }] }, await w.rootKey([`api.${apiId}.create_key`])),
          403,
          'auth/insufficient-permissions',
        );
        assert.equal(await count(w.store.db, 'key_migration_items', ['migration_id', migrationId]), 0);
        assert.equal((await send({ migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }] }, w.root)).status, 202);
        await drain(w.store);
      } finally {
        await bare.close();
      }
    });

    test('the worker imports every item exactly once: migrated keys verify, failures carry reasons, getMigration reports it all', async () => {
      assert.equal((await w.post('/v1/permissions.createRole', { name: 'reader' })).status, 200);
      assert.equal((await w.post('/v1/permissions.createPermission', { name: 'documents.read', slug: 'documents.read' })).status, 200);
      const existing = await w.createKey({ apiId, prefix: 'old' });
      const migrationId = await newMigration();
      const plain = Array.from({ length: 5 }, () => newPlain());
      await enqueueOk({
        migrationId,
        apiId,
        keys: [
          /* 0 */ { hash: hashOf(plain[0]), name: 'hashed', meta: { plan: 'pro' }, ownerId: 'user_7', environment: 'live' },
          /* 1 */ {
            plaintext: plain[1],
            prefix: 'imp',
            roles: ['reader'],
            permissions: ['documents.read'],
            remaining: 5,
            refill: { interval: 'daily', amount: 5 },
          },
          /* 2 */ { hash: hashOf(existing.key) },
          /* 3 */ { hash: hashOf(plain[2]), roles: ['reader', 'ghost'], ratelimit: { type: 'consistent', limit: 1, duration: 60_000 } },
          /* 4 */ { hash: hashOf(plain[0]) },
          /* 5 */ { hash: hashOf(plain[3]), enabled: false },
        ],
      });
      await enqueueOk({
        migrationId,
        apiId,
        keys: [
          /* 6 */ { hash: hashOf(plain[4]), ratelimit: { limit: 1, duration: 60_000 } },
          /* 7 */ { plaintext: plain[1] },
          /* 8 */ { hash: hashOf(plain[2]), permissions: ['nope.a', 'nope.b'] },
        ],
      });
      const keysBefore = await count(w.store.db, 'keys');

      // One job at a time, in enqueue order, so that which of two items with one hash is imported is known
      // (with concurrent jobs the first to commit wins, and the other fails as a duplicate).
      const stats = await drain(w.store, 1);
      assert.equal(stats.completed, 2);

      const status = await w.get<Migration>(STATUS, { migrationId });
      assert.equal(status.status, 200, status.body);
      assert.equal(status.json.status, 'completed_with_failures');
      assert.deepEqual(status.json.counts, { enqueued: 9, pending: 0, migrated: 4, failed: 5 });
      // Item 8 repeats item 3's hash, but item 3 was not imported: item 8 fails for its own reason.
      assert.deepEqual(
        status.json.failures.map((f: { index: number; hash: string }) => [f.index, f.hash]),
        [
          [2, sha256b64(existing.key)],
          [3, sha256b64(plain[2])],
          [4, sha256b64(plain[0])],
          [7, sha256b64(plain[1])],
          [8, sha256b64(plain[2])],
        ],
      );
      const reasons = status.json.failures.map((f: { reason: string }) => f.reason);
      assert.match(reasons[0], /^duplicate hash: a key with this hash already exists$/);
      assert.match(reasons[1], /^missing role "ghost"$/);
      assert.match(reasons[2], /^duplicate hash: item 0 has the same hash$/);
      assert.match(reasons[3], /^duplicate hash/);
      assert.match(reasons[4], /^missing permissions "nope.a", "nope.b"$/);
      assert.ok(status.json.updatedAt >= Date.now() - 60_000);

      const rows = await items(migrationId);
      const byIndex = new Map(rows.map((r) => [Number(r.item_index), r]));
      assert.deepEqual(
        rows.map((r) => r.status),
        ['migrated', 'migrated', 'failed', 'failed', 'failed', 'migrated', 'migrated', 'failed', 'failed'],
      );
      assert.ok(rows.every((r) => (r.status === 'migrated') === (r.key_id !== null) && (r.status === 'failed') === (r.reason !== null)));
      assert.equal((await count(w.store.db, 'keys')) - keysBefore, rows.filter((r) => r.status === 'migrated').length);

      const verify = async (key: string) => (await w.post('/v1/keys.verifyKey', { key }, null)).json;
      const v0 = await verify(plain[0]);
      assert.equal(v0.code, 'VALID');
      assert.equal(v0.keyId, byIndex.get(0)!.key_id);
      assert.equal(v0.name, 'hashed');
      assert.deepEqual(v0.meta, { plan: 'pro' });
      assert.equal(v0.environment, 'live');
      assert.equal(v0.externalId ?? v0.ownerId, 'user_7');
      const v1 = await verify(plain[1]);
      assert.equal(v1.code, 'VALID');
      assert.deepEqual(v1.roles, ['reader']);
      assert.deepEqual(v1.permissions, ['documents.read']);
      assert.equal(v1.remaining, 4);
      assert.equal((await verify(plain[3])).code, 'DISABLED');
      // 1 a minute, in windows aligned to the minute: both verifications must fall in one window.
      await windowWithRoom(60_000, 5_000);
      const v4 = await verify(plain[4]);
      assert.equal(v4.code, 'VALID');
      assert.equal((await verify(plain[4])).code, 'RATE_LIMITED', 'the duration-form rate limit is applied');
      // The plaintext item is recoverable: stored encrypted, with its start.
      const got = await w.get('/v1/keys.getKey', { keyId: byIndex.get(1)!.key_id!, decrypt: true });
      assert.equal(got.status, 200, got.body);
      assert.equal(got.json.plaintext, plain[1]);
      assert.equal(got.json.start, plain[1].slice(0, 8));
      const keyRows = await w.store.db.selectFrom('keys').selectAll().where('migration_id', '=', migrationId).execute();
      assert.deepEqual(
        keyRows.map((k) => k.id).sort(),
        rows
          .filter((r) => r.status === 'migrated')
          .map((r) => r.key_id)
          .sort(),
      );
      // Each imported key is audited as created by the root key that enqueued it.
      const created = await w.store.db
        .selectFrom('audit_logs')
        .select(['target_id', 'actor_type'])
        .where('event', '=', 'key.create')
        .where(
          'target_id',
          'in',
          keyRows.map((k) => k.id),
        )
        .execute();
      assert.equal(created.length, keyRows.length);
      assert.ok(created.every((a) => a.actor_type === 'root_key'));

      // Running the worker again changes nothing.
      await drain(w.store);
      assert.deepEqual(await items(migrationId), rows);
    });

    test('getMigration: running while some items are done; an API deleted before the import fails its items', async () => {
      const migrationId = await newMigration();
      const doomed = await w.createApi('doomed');
      await enqueueOk({ migrationId, apiId: doomed, keys: [{ hash: hashOf(newPlain()) }, { hash: hashOf(newPlain()) }] });
      await drain(w.store);
      await enqueueOk({ migrationId, apiId: doomed, keys: [{ hash: hashOf(newPlain()) }] });
      const running = await w.get(STATUS, { migrationId });
      assert.equal(running.json.status, 'running');
      assert.deepEqual(running.json.counts, { enqueued: 3, pending: 1, migrated: 2, failed: 0 });
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: doomed })).status, 200);
      await drain(w.store);
      const done = await w.get<Migration>(STATUS, { migrationId });
      assert.equal(done.json.status, 'completed_with_failures');
      assert.deepEqual(done.json.counts, { enqueued: 3, pending: 0, migrated: 2, failed: 1 });
      assert.equal(done.json.failures[0].index, 2);
      assert.match(done.json.failures[0].reason, /api .* deleted/);

      const empty = await newMigration();
      assert.equal((await w.get(STATUS, { migrationId: empty })).json.status, 'pending');
      const clean = await newMigration();
      await enqueueOk({ migrationId: clean, apiId, keys: [{ hash: hashOf(newPlain()) }] });
      await drain(w.store);
      assert.equal((await w.get(STATUS, { migrationId: clean })).json.status, 'completed');
    });

    test("getMigration: api.*.read_key (a single API's read_key is not enough); unknown or foreign → 404", async () => {
      const migrationId = await newMigration();
      const narrow = await w.get(STATUS, { migrationId }, await w.rootKey([`api.${apiId}.read_key`]));
      assertError(narrow, 403, 'auth/insufficient-permissions');
      assert.equal(narrow.json.error.detail, 'Missing permission: api.*.read_key');
      assert.equal((await w.get(STATUS, { migrationId }, await w.rootKey(['api.*.read_key']))).status, 200);
      assertError(await w.get(STATUS, { migrationId: 'mig_nope' }), 404, 'data/migration-not-found');
      const other = await w.otherWorkspace();
      assertError(await w.get(STATUS, { migrationId }, other.root), 404, 'data/migration-not-found');
      assertError(await w.get(STATUS, {}), 400, 'request/invalid-body');
    });

    describe('enqueueKeys security', () => {
      let secureApi = '';
      securityTests(() => w, {
        get permission() {
          return `api.${secureApi}.create_key`;
        },
        request: async (w) => {
          secureApi = await w.createApi('secure');
          return {
            method: 'POST',
            path: PATH,
            body: { migrationId: await newMigration(), apiId: secureApi, keys: [{ hash: hashOf(newPlain()) }] },
          };
        },
        foreign: async (w, other) => ({
          method: 'POST',
          path: PATH,
          body: {
            migrationId: await newMigration(other.workspaceId),
            apiId: await w.createApi('foreign', other.root),
            keys: [{ hash: hashOf(newPlain()) }],
          },
        }),
      });
    });

    describe('getMigration security', () => {
      securityTests(() => w, {
        permission: 'api.*.read_key',
        request: async () => ({ method: 'GET', path: STATUS, query: { migrationId: await newMigration() } }),
        foreign: async (_w, other) => ({ method: 'GET', path: STATUS, query: { migrationId: await newMigration(other.workspaceId) } }),
      });
    });
  });
}
