import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator, sql } from 'kysely';
import { DIALECTS, OPERATOR, scratchDatabase } from '../../helpers/harness.ts';
import { buildApp } from '../../../src/app.ts';
import { openStore, type Store } from '../../../src/store/store.ts';
import * as initial from '../../../src/store/schema-migrations/0001-initial.ts';
import * as webhookTables from '../../../src/store/schema-migrations/0008-webhooks.ts';
import { createWorkspace } from '../../../src/services/workspaces/workspaces.ts';
import { insertRootKey } from '../../../src/services/workspaces/root-keys.ts';
import { BOUNDS } from '../../../src/domain/bounds.ts';
import type { App } from '../../../src/http/types.ts';

// Keys written before requests had bounds, with numbers no read could handle, are brought back into range
// by the 0002 schema migration: afterwards they can be read, listed, updated, verified and deleted.

/** A store whose schema is only the initial migration: as a database of an earlier release. */
async function storeOfEarlierRelease(dialect: 'sqlite' | 'postgres'): Promise<{ store: Store; cleanup(): Promise<void> }> {
  const { url, cleanup } = scratchDatabase(dialect);
  const store = openStore(url);
  const schema = dialect === 'postgres' ? new URL(url).searchParams.get('schema')! : undefined;
  if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(store.db);
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => ({ '0001-initial': initial }) },
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
  return {
    store,
    cleanup: async () => {
      await store.close();
      await cleanup();
    },
  };
}

for (const dialect of DIALECTS) {
  describe(`schema migration 0002: numbers out of range (${dialect})`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    let app: App;
    let root: string;
    before(async () => {
      ({ store, cleanup } = await storeOfEarlierRelease(dialect));
      // Today's services read the webhook tables (0008) when they write: present while the earlier release's
      // data is made, dropped again before the migrations run.
      await webhookTables.up(store.db);
      const { workspaceId } = await createWorkspace(store.db, 'earlier', OPERATOR);
      root = (await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR)).rootKey;
      app = await buildApp({ store });
    });
    after(async () => {
      await app.close();
      await cleanup();
    });

    const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
      const res = await app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${root}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(method === 'GET' ? { query: body as Record<string, string> } : { payload: JSON.stringify(body) }),
      });
      return { status: res.statusCode, json: res.json() as Record<string, unknown>, body: res.body };
    };

    test('a key poisoned by an earlier release can be read, listed, updated, verified and deleted after the migration', async () => {
      const apiId = (await call('POST', '/v1/apis.createApi', { name: 'earlier' })).json.apiId as string;
      const created = await call('POST', '/v1/keys.createKey', {
        apiId,
        remaining: 10,
        refill: { interval: 'daily', amount: 10 },
        ratelimit: { limit: 10, duration: 60_000 },
      });
      const { keyId, key } = created.json as { keyId: string; key: string };
      // What earlier releases let through: past 2^53 on SQLite (whose reads then fail), past the bounds on both.
      const past = dialect === 'sqlite' ? '9007199254740993' : '4611686018427387904';
      await sql`update keys set remaining = ${sql.raw(past)}, expires_at = ${sql.raw(past)}, refill_amount = ${sql.raw(past)} where id = ${keyId}`.execute(
        store.db,
      );
      await sql`update ratelimits set ${sql.ref('limit')} = ${sql.raw(past)}, duration = ${sql.raw(past)} where key_id = ${keyId}`.execute(
        store.db,
      );

      // 0002 runs first of the migrations this earlier release lacks (later ones follow it).
      await webhookTables.down(store.db);
      assert.equal((await store.migrate())[0], '0002-clamp-out-of-range-numbers');

      const read = await call('GET', '/v1/keys.getKey', { keyId });
      assert.equal(read.status, 200, read.body);
      assert.equal(read.json.remaining, BOUNDS.count.maximum);
      assert.equal(read.json.expires, BOUNDS.timestamp.maximum);
      assert.deepEqual(
        [(read.json.ratelimit as { limit: number }).limit, (read.json.ratelimit as { duration: number }).duration],
        [BOUNDS.limit.maximum, BOUNDS.duration.maximum],
      );
      const list = await call('GET', '/v1/apis.listKeys', { apiId });
      assert.equal(list.status, 200, list.body);
      const verified = await app.inject({ method: 'POST', url: '/v1/keys.verifyKey', payload: { key } });
      assert.equal(verified.statusCode, 200, verified.body);
      assert.equal(verified.json().code, 'VALID');
      assert.equal(verified.json().remaining, BOUNDS.count.maximum - 1);
      const updated = await call('POST', '/v1/keys.updateKey', { keyId, remaining: 5, expires: null });
      assert.equal(updated.status, 200, updated.body);
      const deleted = await call('POST', '/v1/keys.deleteKey', { keyId });
      assert.equal(deleted.status, 200, deleted.body);
    });
  });
}
