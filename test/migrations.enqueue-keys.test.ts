import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { DIALECTS, world, type Response, type World } from './helpers/harness.ts';
import { securityTests } from './helpers/security.ts';
import { buildApp } from '../src/app.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { createMigration, WORKER_TASKS } from '../src/services/migrations/key-migrations.ts';
import { announceJobs, enqueue, JobQueue, PermanentJobError, type TaskDefinition, type TaskRegistry } from '../src/jobs/queue.ts';
import { Worker } from '../src/jobs/worker.ts';
import { run as cli } from '../src/cli/main.ts';

const PATH = '/v1/migrations.enqueueKeys';
const STATUS = '/v1/migrations.getMigration';
const OPERATOR = { type: 'operator' as const, id: 'test' };
/** SPEC §4 sha256_base64, computed independently of the code under test. */
const sha256b64 = (s: string): string => createHash('sha256').update(s).digest('base64');
const newPlain = (prefix = 'imp'): string => `${prefix}_${randomBytes(12).toString('hex')}`;
const hashOf = (plain: string) => ({ value: sha256b64(plain), variant: 'sha256_base64' });
const paths = (res: Response): string[] => [...new Set<string>(res.json.error.errors.map((e: { path: string }) => e.path))].sort();
const count = async (store: Store, table: 'key_migration_items' | 'jobs' | 'keys' | 'settings', where?: [string, string]): Promise<number> => {
  let q = store.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n'));
  if (where) q = q.where(where[0] as never, '=', where[1] as never);
  return Number((await q.executeTakeFirstOrThrow()).n);
};
const assertError = (res: Response, status: number, kind: string) => {
  assert.equal(res.status, status, res.body);
  assert.equal(res.json.error.type, `https://keyhold.dev/errors/${kind}`);
};
/**
 * Runs a worker on the store until no job is left. (Two jobs importing one hash at once on PostgreSQL: the
 * second waits for the first, hits the unique index and is retried, after a backoff kept short here.)
 */
async function drain(store: Store, concurrency = 4): Promise<{ completed: number }> {
  const worker = new Worker(new JobQueue(store, WORKER_TASKS, { backoffBaseMs: 5 }), { concurrency });
  for (;;) {
    await worker.runUntilIdle();
    const left = await store.db.selectFrom('jobs').select('id').where('status', 'in', ['pending', 'running']).execute();
    if (left.length === 0) return worker.stats;
    await new Promise((r) => setTimeout(r, 20));
  }
}

for (const dialect of DIALECTS) {
  describe(`migrations.enqueueKeys and getMigration (${dialect})`, () => {
    let w: World;
    let apiId: string;
    const newMigration = async (workspaceId = w.workspaceId) => (await createMigration(w.store.db, workspaceId, 'test', OPERATOR)).migrationId;
    const enqueueOk = async (body: Record<string, unknown>, key = w.root) => {
      const res = await w.post(PATH, body, key);
      assert.equal(res.status, 202, res.body);
      return res.json as { migrationId: string; enqueued: number };
    };
    const items = (migrationId: string) => w.store.db.selectFrom('key_migration_items').selectAll()
      .where('migration_id', '=', migrationId).orderBy('item_index').execute();

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
      assert.deepEqual(rows.map((r) => [Number(r.item_index), r.hash, r.status, r.key_id, r.reason]),
        plains.map((p, i) => [i, sha256b64(p), 'pending', null, null]));
      const jobs = await w.store.db.selectFrom('jobs').selectAll().where('payload', 'like', `%${migrationId}%`).orderBy('id').execute();
      assert.equal(jobs.length, 2);
      assert.deepEqual(jobs.map((j) => [j.task, j.status, Number(j.attempts)]), [['migration.import', 'pending', 0], ['migration.import', 'pending', 0]]);
      // The plaintext is at rest only as the vault's ciphertext: not in the job, the items or the audit log.
      const everything = JSON.stringify([jobs, rows, await w.store.db.selectFrom('audit_logs').selectAll().execute()]);
      assert.ok(!everything.includes(plains[1]), 'no plaintext in the queue');
      const payload = JSON.parse(jobs[0].payload);
      assert.equal(payload.items[1].start, plains[1].slice(0, 8));
      assert.ok(payload.items[1].encrypted.ciphertext);
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', migrationId).where('event', '=', 'migration.enqueue').orderBy('id').execute();
      assert.equal(audit.length, 2);
      assert.equal(audit[0].actor_type, 'root_key');
      assert.match(audit[0].request_id!, /^req_/);
      assert.deepEqual({ ...JSON.parse(audit[0].diff!), jobId: undefined }, { apiId, enqueued: 2, firstIndex: 0, lastIndex: 1, jobId: undefined });
      const status = await w.get(STATUS, { migrationId });
      assert.equal(status.status, 200, status.body);
      assert.deepEqual({ ...status.json, updatedAt: 0 }, {
        migrationId, workspaceId: w.workspaceId, status: 'pending', counts: { enqueued: 3, pending: 3, migrated: 0, failed: 0 }, failures: [], updatedAt: 0,
      });
      await drain(w.store);
    });

    test('validation: every problem of every item is listed with its path (400), nothing is enqueued', async () => {
      const migrationId = await newMigration();
      const before = [await count(w.store, 'key_migration_items'), await count(w.store, 'jobs')];
      const p = newPlain();
      const res = await w.post(PATH, {
        migrationId, apiId, keys: [
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
        '/keys/0', '/keys/1', '/keys/10/ratelimit/duration', '/keys/11/prefix', '/keys/2/hash/value', '/keys/3/hash/variant', '/keys/4/prefix',
        '/keys/5/ratelimit/duration', '/keys/6/apiId', '/keys/7/externalId', '/keys/8/remaining', '/keys/9/refill',
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
      assert.deepEqual([await count(w.store, 'key_migration_items'), await count(w.store, 'jobs')], before);
      // Exactly 100 is fine.
      assert.equal((await enqueueOk({ migrationId, apiId, keys: Array.from({ length: 100 }, () => ({ hash: hashOf(newPlain()) })) })).enqueued, 100);
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
      const before = await count(w.store, 'key_migration_items');
      assertError(await w.post(PATH, { migrationId: 'mig_nope', apiId, keys }), 404, 'data/migration-not-found');
      assertError(await w.post(PATH, { migrationId: foreignMigration, apiId, keys }), 404, 'data/migration-not-found');
      assertError(await w.post(PATH, { migrationId, apiId: 'api_nope', keys }), 404, 'data/api-not-found');
      assertError(await w.post(PATH, { migrationId, apiId: deletedApi, keys }), 404, 'data/api-not-found');
      assertError(await w.post(PATH, { migrationId, apiId: foreignApi, keys }), 404, 'data/api-not-found');
      // The other workspace cannot use ours either.
      assertError(await w.post(PATH, { migrationId, apiId: foreignApi, keys }, other.root), 404, 'data/migration-not-found');
      assert.equal(await count(w.store, 'key_migration_items'), before);
    });

    test('403: api.<api>.create_key, plus api.<api>.encrypt_key only with plaintexts (both named); nothing enqueued', async () => {
      const migrationId = await newMigration();
      const before = await count(w.store, 'key_migration_items');
      const none = await w.post(PATH, { migrationId, apiId, keys: [{ plaintext: newPlain() }] }, await w.rootKey(['api.*.read_key']));
      assertError(none, 403, 'auth/insufficient-permissions');
      assert.ok(none.json.error.detail.includes(`api.${apiId}.create_key`) && none.json.error.detail.includes(`api.${apiId}.encrypt_key`), none.json.error.detail);
      const createOnly = await w.rootKey([`api.${apiId}.create_key`]);
      const plain = await w.post(PATH, { migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }, { plaintext: newPlain() }] }, createOnly);
      assertError(plain, 403, 'auth/insufficient-permissions');
      assert.equal(plain.json.error.detail, `Missing permission: api.${apiId}.encrypt_key`);
      const otherApi = await w.post(PATH, { migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }] }, await w.rootKey(['api.api_other.create_key']));
      assertError(otherApi, 403, 'auth/insufficient-permissions');
      assert.equal(await count(w.store, 'key_migration_items'), before);
      await enqueueOk({ migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }] }, createOnly);
      await enqueueOk({ migrationId, apiId, keys: [{ plaintext: newPlain() }] }, await w.rootKey(['api.*.create_key', `api.${apiId}.encrypt_key`]));
      await drain(w.store);
    });

    test('a server without a vault: plaintext items → 412 (after the permission check), hashed items are enqueued', async () => {
      const bare = await buildApp({ store: w.store });
      try {
        const send = async (body: unknown, key: string): Promise<Response> => {
          const r = await bare.inject({ method: 'POST', url: PATH, payload: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } });
          return { status: r.statusCode, json: r.json(), body: r.body, headers: r.headers };
        };
        const migrationId = await newMigration();
        const res = await send({ migrationId, apiId, keys: [{ hash: hashOf(newPlain()) }, { plaintext: newPlain() }] }, w.root);
        assertError(res, 412, 'state/precondition-failed');
        assert.match(res.json.error.detail, /vault/);
        assertError(await send({ migrationId, apiId, keys: [{ plaintext: newPlain() }] }, await w.rootKey([`api.${apiId}.create_key`])), 403, 'auth/insufficient-permissions');
        assert.equal(await count(w.store, 'key_migration_items', ['migration_id', migrationId]), 0);
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
        migrationId, apiId, keys: [
          /* 0 */ { hash: hashOf(plain[0]), name: 'hashed', meta: { plan: 'pro' }, ownerId: 'user_7', environment: 'live' },
          /* 1 */ { plaintext: plain[1], prefix: 'imp', roles: ['reader'], permissions: ['documents.read'], remaining: 5, refill: { interval: 'daily', amount: 5 } },
          /* 2 */ { hash: hashOf(existing.key) },
          /* 3 */ { hash: hashOf(plain[2]), roles: ['reader', 'ghost'], ratelimit: { type: 'consistent', limit: 1, duration: 60_000 } },
          /* 4 */ { hash: hashOf(plain[0]) },
          /* 5 */ { hash: hashOf(plain[3]), enabled: false },
        ],
      });
      await enqueueOk({ migrationId, apiId, keys: [/* 6 */ { hash: hashOf(plain[4]), ratelimit: { limit: 1, duration: 60_000 } }, /* 7 */ { plaintext: plain[1] }, /* 8 */ { hash: hashOf(plain[2]), permissions: ['nope.a', 'nope.b'] }] });
      const keysBefore = await count(w.store, 'keys');

      // One job at a time, in enqueue order, so that which of two items with one hash is imported is known
      // (with concurrent jobs the first to commit wins, and the other fails as a duplicate).
      const stats = await drain(w.store, 1);
      assert.equal(stats.completed, 2);

      const status = await w.get(STATUS, { migrationId });
      assert.equal(status.status, 200, status.body);
      assert.equal(status.json.status, 'completed_with_failures');
      assert.deepEqual(status.json.counts, { enqueued: 9, pending: 0, migrated: 4, failed: 5 });
      // Item 8 repeats item 3's hash, but item 3 was not imported: item 8 fails for its own reason.
      assert.deepEqual(status.json.failures.map((f: { index: number; hash: string }) => [f.index, f.hash]),
        [[2, sha256b64(existing.key)], [3, sha256b64(plain[2])], [4, sha256b64(plain[0])], [7, sha256b64(plain[1])], [8, sha256b64(plain[2])]]);
      const reasons = status.json.failures.map((f: { reason: string }) => f.reason);
      assert.match(reasons[0], /^duplicate hash: a key with this hash already exists$/);
      assert.match(reasons[1], /^missing role "ghost"$/);
      assert.match(reasons[2], /^duplicate hash: item 0 has the same hash$/);
      assert.match(reasons[3], /^duplicate hash/);
      assert.match(reasons[4], /^missing permissions "nope.a", "nope.b"$/);
      assert.ok(status.json.updatedAt >= Date.now() - 60_000);

      const rows = await items(migrationId);
      const byIndex = new Map(rows.map((r) => [Number(r.item_index), r]));
      assert.deepEqual(rows.map((r) => r.status), ['migrated', 'migrated', 'failed', 'failed', 'failed', 'migrated', 'migrated', 'failed', 'failed']);
      assert.ok(rows.every((r) => (r.status === 'migrated') === (r.key_id !== null) && (r.status === 'failed') === (r.reason !== null)));
      assert.equal(await count(w.store, 'keys') - keysBefore, rows.filter((r) => r.status === 'migrated').length);

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
      const v4 = await verify(plain[4]);
      assert.equal(v4.code, 'VALID');
      assert.equal((await verify(plain[4])).code, 'RATE_LIMITED', 'the duration-form rate limit is applied');
      // The plaintext item is recoverable: stored encrypted, with its start.
      const got = await w.get('/v1/keys.getKey', { keyId: byIndex.get(1)!.key_id!, decrypt: true });
      assert.equal(got.status, 200, got.body);
      assert.equal(got.json.plaintext, plain[1]);
      assert.equal(got.json.start, plain[1].slice(0, 8));
      const keyRows = await w.store.db.selectFrom('keys').selectAll().where('migration_id', '=', migrationId).execute();
      assert.deepEqual(keyRows.map((k) => k.id).sort(), rows.filter((r) => r.status === 'migrated').map((r) => r.key_id).sort());
      // Each imported key is audited as created by the root key that enqueued it.
      const created = await w.store.db.selectFrom('audit_logs').select(['target_id', 'actor_type']).where('event', '=', 'key.create').where('target_id', 'in', keyRows.map((k) => k.id)).execute();
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
      const done = await w.get(STATUS, { migrationId });
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

    test('getMigration: api.*.read_key (a single API\'s read_key is not enough); unknown or foreign → 404', async () => {
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
        get permission() { return `api.${secureApi}.create_key`; },
        request: async (w) => {
          secureApi = await w.createApi('secure');
          return { method: 'POST', path: PATH, body: { migrationId: await newMigration(), apiId: secureApi, keys: [{ hash: hashOf(newPlain()) }] } };
        },
        foreign: async (w, other) => ({
          method: 'POST', path: PATH,
          body: { migrationId: await newMigration(other.workspaceId), apiId: await w.createApi('foreign', other.root), keys: [{ hash: hashOf(newPlain()) }] },
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

  describe(`keyhold migrations / worker CLI (${dialect})`, () => {
    let w: World;
    before(async () => { w = await world(dialect); });
    after(() => w.close());
    /** Runs the CLI in-process on this store; returns the exit code and the one --json line. */
    const run = async (...argv: string[]): Promise<{ code: number; json: any }> => {
      const saved = process.env.DATABASE_URL;
      process.env.DATABASE_URL = w.url;
      const out: string[] = [];
      try {
        const code = await cli([...argv, '--json'], (x) => out.push(x), () => {});
        assert.equal(out.length, 1, JSON.stringify(out));
        return { code, json: JSON.parse(out[0]) };
      } finally {
        if (saved === undefined) delete process.env.DATABASE_URL;
        else process.env.DATABASE_URL = saved;
      }
    };

    test('migrations create → {migrationId}, audited as the operator; migrations status → the getMigration object', async () => {
      const created = await run('migrations', 'create', '--workspace', w.workspaceId, '--name', 'legacy import');
      assert.equal(created.code, 0, JSON.stringify(created.json));
      assert.deepEqual(Object.keys(created.json), ['migrationId']);
      assert.match(created.json.migrationId, /^mig_[1-9A-HJ-NP-Za-km-z]{22}$/);
      const { migrationId } = created.json;
      const row = await w.store.db.selectFrom('key_migrations').selectAll().where('id', '=', migrationId).executeTakeFirstOrThrow();
      assert.deepEqual([row.workspace_id, row.name], [w.workspaceId, 'legacy import']);
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', migrationId).execute();
      assert.deepEqual(audit.map((a) => [a.event, a.actor_type, a.workspace_id]), [['migration.create', 'operator', w.workspaceId]]);

      const apiId = await w.createApi('cli');
      const key = newPlain();
      assert.equal((await w.post(PATH, { migrationId, apiId, keys: [{ hash: hashOf(key) }, { hash: hashOf(key) }] })).status, 202);
      await drain(w.store);
      const status = await run('migrations', 'status', '--id', migrationId);
      assert.equal(status.code, 0);
      assert.deepEqual(status.json, (await w.get(STATUS, { migrationId })).json);
      assert.equal(status.json.status, 'completed_with_failures');
    });

    test('errors: unknown workspace or migration → 1; missing options or a bad --concurrency → 2', async () => {
      const unknownWs = await run('migrations', 'create', '--workspace', 'ws_nope');
      assert.deepEqual([unknownWs.code, unknownWs.json.error.kind], [1, 'data/workspace-not-found']);
      const unknownMig = await run('migrations', 'status', '--id', 'mig_nope');
      assert.deepEqual([unknownMig.code, unknownMig.json.error.kind], [1, 'data/migration-not-found']);
      assert.equal((await run('migrations', 'create')).code, 2);
      assert.equal((await run('migrations', 'status')).code, 2);
      const bad = await run('worker', '--concurrency', '0');
      assert.deepEqual([bad.code, bad.json.error.kind], [2, 'usage']);
      assert.equal((await run('worker', '--visibility-timeout', 'soon')).code, 2);
    });
  });

  describe(`job queue (${dialect})`, () => {
    let w: World;
    before(async () => { w = await world(dialect); });
    after(() => w.close());

    /** A test task under the registry's one name, recording its runs; `fail` decides whether a run throws. */
    const recorder = (behaviour: { fail?: (n: number) => Error | undefined; onGiveUp?: (reason: string) => void } = {}) => {
      const runs: number[] = [];
      const definition: TaskDefinition<{ n: number; tag: string }> = {
        async run(tx, payload) {
          runs.push(payload.n);
          // A write that must commit or roll back with the job.
          await tx.insertInto('settings').values({ name: `${payload.tag}:${payload.n}:${randomBytes(4).toString('hex')}`, value: 'ran', updated_at: 0 }).execute();
          const err = behaviour.fail?.(payload.n);
          if (err) throw err;
        },
        async giveUp(tx, payload, reason) {
          behaviour.onGiveUp?.(reason);
          await tx.insertInto('settings').values({ name: `${payload.tag}:gaveup:${payload.n}`, value: reason, updated_at: 0 }).execute();
        },
      };
      return { runs, tasks: { 'migration.import': definition } as unknown as TaskRegistry };
    };
    const put = (store: Store, tag: string, n: number, opts: { maxAttempts?: number; now?: number } = {}) =>
      store.db.transaction().execute((tx) => enqueue(tx, 'migration.import', { n, tag } as never, opts));
    const committed = async (tag: string) => (await w.store.db.selectFrom('settings').select('name').where('name', 'like', `${tag}:%`).execute()).map((r) => r.name);
    const jobRow = (id: string) => w.store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();

    test('a failing job is retried with exponential backoff (base·2^attempts), its writes rolled back each time, then fails for good and gives up once', async () => {
      let now = 1_000_000;
      const gaveUp: string[] = [];
      const { runs, tasks } = recorder({ fail: () => new Error('boom'), onGiveUp: (r) => gaveUp.push(r) });
      const queue = new JobQueue(w.store, tasks, { backoffBaseMs: 1000, now: () => now });
      const id = await put(w.store, 'backoff', 1, { maxAttempts: 3, now });
      let [job] = await queue.claim('A', 10);
      assert.equal(job.id, id);
      assert.equal(job.attempts, 1);
      assert.deepEqual(await queue.process(job), { outcome: 'retried', error: 'Error: boom' });
      let row = (await jobRow(id))!;
      assert.deepEqual([row.status, Number(row.run_at), row.locked_by, row.last_error], ['pending', now + 2000, null, 'Error: boom']);
      now += 1999;
      assert.deepEqual(await queue.claim('A', 10), [], 'not before its backoff');
      now += 1;
      [job] = await queue.claim('A', 10);
      assert.equal(job.attempts, 2);
      assert.equal((await queue.process(job)).outcome, 'retried');
      row = (await jobRow(id))!;
      assert.equal(Number(row.run_at), now + 4000);
      now += 4000;
      [job] = await queue.claim('A', 10);
      assert.equal(job.attempts, 3);
      assert.equal((await queue.process(job)).outcome, 'failed');
      row = (await jobRow(id))!;
      assert.deepEqual([row.status, Number(row.attempts), row.last_error], ['failed', 3, 'Error: boom']);
      assert.deepEqual(runs, [1, 1, 1]);
      assert.deepEqual(gaveUp, ['Error: boom']);
      assert.deepEqual(await committed('backoff'), ['backoff:gaveup:1'], 'no write of a failed attempt survives; giveUp\'s does');
      now += 10 ** 9;
      assert.deepEqual(await queue.claim('A', 10), [], 'a failed job is never claimed again');
    });

    test('PermanentJobError fails at once; a job that succeeds on a retry commits exactly once and is deleted', async () => {
      let now = 5_000_000;
      const { runs, tasks } = recorder({ fail: (n) => (n === 1 ? new PermanentJobError('bad payload') : runs.filter((x) => x === 2).length === 1 ? new Error('transient') : undefined) });
      const queue = new JobQueue(w.store, tasks, { backoffBaseMs: 10, now: () => now });
      const permanent = await put(w.store, 'perm', 1, { now });
      const flaky = await put(w.store, 'perm', 2, { now });
      const claimed = await queue.claim('A', 10);
      assert.deepEqual(claimed.map((j) => j.id), [permanent, flaky]);
      assert.equal((await queue.process(claimed[0])).outcome, 'failed');
      assert.equal((await queue.process(claimed[1])).outcome, 'retried');
      now += 20;
      const [again] = await queue.claim('A', 10);
      assert.equal((await queue.process(again)).outcome, 'completed');
      assert.equal(await jobRow(flaky), undefined, 'completed jobs are deleted');
      assert.equal((await committed('perm')).filter((n) => n.startsWith('perm:2:')).length, 1);
      assert.deepEqual(runs, [1, 2, 2]);
    });

    test('stale-lock recovery: a running job whose lock is older than the visibility timeout goes back to pending; the old holder\'s run is discarded', async () => {
      let now = 9_000_000;
      const { runs, tasks } = recorder();
      const queue = new JobQueue(w.store, tasks, { staleMs: 30_000, now: () => now });
      const id = await put(w.store, 'stale', 1, { now });
      const [held] = await queue.claim('dead-worker', 1);
      assert.equal(held.id, id);
      now += 20_000;
      assert.equal(await queue.heartbeat(held), true);
      now += 29_999;
      assert.deepEqual(await queue.recoverStale(), { requeued: 0, failed: 0 }, 'the heartbeat kept it');
      assert.deepEqual(await queue.claim('B', 1), []);
      now += 2;
      assert.deepEqual(await queue.recoverStale(), { requeued: 1, failed: 0 });
      const row = (await jobRow(id))!;
      assert.deepEqual([row.status, row.locked_by], ['pending', null]);
      assert.match(row.last_error!, /lock expired.*dead-worker/);
      const [taken] = await queue.claim('B', 1);
      assert.equal(taken.attempts, 2);
      // The first holder wakes up: its lock is gone, so nothing it does is kept.
      assert.equal(await queue.heartbeat(held), false);
      assert.deepEqual(await queue.process(held), { outcome: 'lost' });
      assert.equal((await queue.fail(held, new Error('late'))), 'lost');
      assert.equal((await queue.process(taken)).outcome, 'completed');
      assert.deepEqual(runs, [1]);
      assert.equal((await committed('stale')).length, 1);
    });

    test('stale-lock recovery of a job on its last attempt fails it for good (giveUp runs)', async () => {
      let now = 20_000_000;
      const { tasks } = recorder();
      const queue = new JobQueue(w.store, tasks, { staleMs: 1000, now: () => now });
      const id = await put(w.store, 'exhausted', 1, { maxAttempts: 1, now });
      await queue.claim('dead-worker', 1);
      now += 1001;
      assert.deepEqual(await queue.recoverStale(), { requeued: 0, failed: 1 });
      assert.equal((await jobRow(id))!.status, 'failed');
      assert.deepEqual(await committed('exhausted'), ['exhausted:gaveup:1']);
    });

    test('two queue clients (two connections or pools) on one store never claim or run one job twice', async () => {
      const second = openStore(w.url);
      try {
        const N = 120;
        for (let i = 0; i < N; i += 40) {
          await w.store.db.transaction().execute(async (tx) => {
            for (let n = i; n < i + 40; n++) await enqueue(tx, 'migration.import', { n, tag: 'race' } as never);
          });
        }
        // Claims alone: concurrent claims of everything get disjoint sets that cover every job.
        const claimants = [new JobQueue(w.store, recorder().tasks), new JobQueue(second, recorder().tasks)];
        const claims = await Promise.all([0, 1, 2, 3].map((i) => claimants[i % 2].claim(`C${i}`, N)));
        const ids = claims.flat().map((j) => j.id);
        assert.equal(ids.length, N);
        assert.equal(new Set(ids).size, N);
        await w.store.db.updateTable('jobs').set({ status: 'pending', locked_at: null, locked_by: null, attempts: 0 }).where('status', '=', 'running').execute();

        // Workers: every job runs exactly once in all.
        const a = recorder();
        const b = recorder();
        const workers = [
          new Worker(new JobQueue(w.store, a.tasks), { id: 'wa', concurrency: 4, pollMs: 10 }),
          new Worker(new JobQueue(second, b.tasks), { id: 'wb', concurrency: 4, pollMs: 10 }),
        ];
        for (const worker of workers) worker.start();
        const deadline = Date.now() + 60_000;
        while (await count(w.store, 'jobs', ['status', 'pending']) + await count(w.store, 'jobs', ['status', 'running']) > 0) {
          assert.ok(Date.now() < deadline, 'jobs finish');
          await new Promise((r) => setTimeout(r, 20));
        }
        await Promise.all(workers.map((x) => x.stop()));
        const all = [...a.runs, ...b.runs].sort((x, y) => x - y);
        assert.deepEqual(all, Array.from({ length: N }, (_, i) => i), 'each job ran once');
        const rows = await committed('race');
        assert.equal(rows.length, N);
        assert.equal(new Set(rows.map((r) => r.split(':')[1])).size, N);
        assert.equal(workers[0].stats.completed + workers[1].stats.completed, N);
        assert.equal(workers[0].stats.lost + workers[1].stats.lost, 0);
      } finally {
        await second.close();
      }
    });

    test('a worker wakes up for jobs enqueued in its process and stops gracefully after finishing the job in flight', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => { release = r; });
      let started!: () => void;
      const running = new Promise<void>((r) => { started = r; });
      const runs: number[] = [];
      const tasks = { 'migration.import': { async run(_tx: unknown, p: { n: number }) { started(); await gate; runs.push(p.n); } } } as unknown as TaskRegistry;
      const worker = new Worker(new JobQueue(w.store, tasks), { pollMs: 60_000, concurrency: 1 });
      worker.start();
      await new Promise((r) => setTimeout(r, 50));
      await put(w.store, 'wake', 7);
      announceJobs();
      await running;
      const stopped = worker.stop();
      let done = false;
      void stopped.then(() => { done = true; });
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(done, false, 'stop waits for the job in flight');
      release();
      await stopped;
      assert.deepEqual(runs, [7]);
      assert.equal(worker.stats.completed, 1);
    });
  });
}
