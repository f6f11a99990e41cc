import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { sql } from 'kysely';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { count, verificationHourRow, ALL_TABLES, everyTableListed } from '../helpers/rows.ts';
import { repoUrl } from '../helpers/repo.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { isForeignKeyViolation, isUniqueViolation } from '../../src/store/errors.ts';
import { newId } from '../../src/domain/ids.ts';
import { ensureIdentity } from '../../src/services/identities/identities.ts';
import { resolveOrCreate } from '../../src/services/rbac/find-or-create-by-name.ts';
import type { Caller } from '../../src/services/caller.ts';

/** Epoch ms of 2100-01-01, far past 2^31, and the largest integer a JS number holds exactly. */
const YEAR_2100 = 4102444800000;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('expected the promise to reject');
}

/** A workspace, an API and a key inserted directly, for tests that need rows to hang others on. */
async function seed(db: Store['db'], now = Date.now()): Promise<{ workspaceId: string; apiId: string; keyId: string; hash: string }> {
  const workspaceId = newId('ws');
  const apiId = newId('api');
  const keyId = newId('key');
  const hash = `hash-${keyId}`;
  await db.insertInto('workspaces').values({ id: workspaceId, name: 'contract', created_at: now, deleted_at: null }).execute();
  await db
    .insertInto('apis')
    .values({
      id: apiId,
      workspace_id: workspaceId,
      name: 'contract-api',
      default_prefix: null,
      default_bytes: null,
      delete_protection: 0,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .execute();
  await insertKey(db, { id: keyId, workspaceId, apiId, hash }, now);
  return { workspaceId, apiId, keyId, hash };
}

function insertKey(db: Store['db'], k: { id: string; workspaceId: string; apiId: string; hash: string }, now = Date.now()) {
  return db
    .insertInto('keys')
    .values({
      id: k.id,
      workspace_id: k.workspaceId,
      api_id: k.apiId,
      hash: k.hash,
      start: 'abcd',
      name: null,
      identity_id: null,
      meta: null,
      enabled: 1,
      environment: null,
      expires_at: null,
      remaining: null,
      refill_interval: null,
      refill_amount: null,
      refill_day: null,
      last_refill_at: null,
      migration_id: null,
      created_at: now,
      updated_at: now,
      last_used_at: null,
      deleted_at: null,
    })
    .execute();
}

for (const dialect of DIALECTS) {
  describe(`store contract (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
    });
    after(() => close());

    test('reports its dialect in its capabilities', () => {
      assert.equal(store.caps.dialect, dialect);
      assert.equal(store.caps.skipLocked, dialect === 'postgres');
    });

    test('rows are ordinary objects with the selected columns', async () => {
      const { workspaceId } = await seed(store.db, 1234);
      const row = await store.db
        .selectFrom('workspaces')
        .select(['id', 'created_at'])
        .where('id', '=', workspaceId)
        .executeTakeFirstOrThrow();
      assert.equal(Object.getPrototypeOf(row), Object.prototype);
      assert.deepEqual(row, { id: workspaceId, created_at: 1234 });
    });

    test('migrate() is idempotent: a second call applies nothing and keeps the data', async () => {
      const { workspaceId } = await seed(store.db);
      assert.deepEqual(await store.migrate(), []);
      assert.deepEqual(await store.migrate(), []);
      const ws = await store.db.selectFrom('workspaces').select('id').where('id', '=', workspaceId).executeTakeFirst();
      assert.equal(ws?.id, workspaceId);
    });

    test('every table of the schema exists', async () => {
      assert.equal(everyTableListed, true);
      const result =
        store.caps.dialect === 'postgres'
          ? await sql<{
              name: string;
            }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(store.db)
          : await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(store.db);
      const present = new Set(result.rows.map((r) => r.name));
      const missing = ALL_TABLES.filter((t) => !present.has(t));
      assert.deepEqual(missing, []);
      for (const table of ALL_TABLES) assert.equal(typeof (await count(store.db, table)), 'number', table);
    });

    test('a transaction that throws rolls back all its writes and rethrows', async () => {
      const workspaceId = newId('ws');
      const failure = new Error('boom');
      const err = await rejection(
        store.db.transaction().execute(async (tx) => {
          await tx.insertInto('workspaces').values({ id: workspaceId, name: 'rolled-back', created_at: 1, deleted_at: null }).execute();
          await tx
            .insertInto('settings')
            .values({ name: `rollback-${workspaceId}`, value: 'x', updated_at: 1 })
            .execute();
          // Visible inside the transaction…
          const inside = await tx.selectFrom('workspaces').select('id').where('id', '=', workspaceId).executeTakeFirst();
          assert.equal(inside?.id, workspaceId);
          throw failure;
        }),
      );
      assert.equal(err, failure);
      // …and gone after it.
      assert.equal(await store.db.selectFrom('workspaces').select('id').where('id', '=', workspaceId).executeTakeFirst(), undefined);
      assert.equal(
        await store.db.selectFrom('settings').select('name').where('name', '=', `rollback-${workspaceId}`).executeTakeFirst(),
        undefined,
      );
      // The connection is usable afterwards.
      await store.db.transaction().execute((tx) =>
        tx
          .insertInto('settings')
          .values({ name: `after-${workspaceId}`, value: 'y', updated_at: 1 })
          .execute(),
      );
      assert.equal(
        (await store.db.selectFrom('settings').select('value').where('name', '=', `after-${workspaceId}`).executeTakeFirst())?.value,
        'y',
      );
    });

    test('a failing statement inside a transaction rolls back the statements before it', async () => {
      const { workspaceId, apiId, hash } = await seed(store.db);
      const keyId = newId('key');
      const err = await rejection(
        store.db.transaction().execute(async (tx) => {
          await tx.updateTable('workspaces').set({ name: 'renamed' }).where('id', '=', workspaceId).execute();
          await insertKey(tx, { id: keyId, workspaceId, apiId, hash });
        }),
      );
      assert.equal(isUniqueViolation(err), true, String(err));
      const ws = await store.db.selectFrom('workspaces').select('name').where('id', '=', workspaceId).executeTakeFirstOrThrow();
      assert.equal(ws.name, 'contract');
    });

    test('a duplicate keys.hash is a unique violation recognised by isUniqueViolation', async () => {
      const { workspaceId, apiId, hash } = await seed(store.db);
      const err = await rejection(insertKey(store.db, { id: newId('key'), workspaceId, apiId, hash }));
      assert.equal(isUniqueViolation(err), true, String(err));
      assert.equal(
        await store.db
          .selectFrom('keys')
          .select('id')
          .where('hash', '=', hash)
          .execute()
          .then((r) => r.length),
        1,
      );
    });

    test('isUniqueViolation is false for other constraint failures', async () => {
      // A foreign key to an api that does not exist.
      const { workspaceId } = await seed(store.db);
      const err = await rejection(insertKey(store.db, { id: newId('key'), workspaceId, apiId: 'api_missing', hash: `h-${newId('key')}` }));
      assert.ok(err instanceof Error);
      assert.equal(isUniqueViolation(err), false, String(err));
      assert.equal(isUniqueViolation(new Error('something else')), false);
      assert.equal(isUniqueViolation(undefined), false);
    });

    test('a reference to a deleted row is a foreign-key violation recognised by isForeignKeyViolation (the API maps it to 409)', async () => {
      const { workspaceId } = await seed(store.db);
      const err = await rejection(insertKey(store.db, { id: newId('key'), workspaceId, apiId: 'api_missing', hash: `h-${newId('key')}` }));
      assert.equal(isForeignKeyViolation(err), true, String(err));
      const { hash, apiId } = await seed(store.db);
      const duplicate = await rejection(insertKey(store.db, { id: newId('key'), workspaceId, apiId, hash }));
      assert.equal(isForeignKeyViolation(duplicate), false, String(duplicate));
      assert.equal(isForeignKeyViolation(new Error('something else')), false);
    });

    test('foreign keys cascade: deleting a key removes its keys_roles rows', async () => {
      const now = Date.now();
      const { workspaceId, apiId, keyId } = await seed(store.db, now);
      const otherKeyId = newId('key');
      await insertKey(store.db, { id: otherKeyId, workspaceId, apiId, hash: `hash-${otherKeyId}` });
      const roleIds = [newId('role'), newId('role')];
      await store.db
        .insertInto('roles')
        .values(
          roleIds.map((id, i) => ({
            id,
            workspace_id: workspaceId,
            name: `role-${i}-${id}`,
            description: null,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
      await store.db
        .insertInto('keys_roles')
        .values([
          ...roleIds.map((role_id) => ({ key_id: keyId, role_id, workspace_id: workspaceId, created_at: now })),
          { key_id: otherKeyId, role_id: roleIds[0], workspace_id: workspaceId, created_at: now },
        ])
        .execute();
      await store.db.deleteFrom('keys').where('id', '=', keyId).execute();
      assert.deepEqual(await store.db.selectFrom('keys_roles').select('key_id').where('key_id', '=', keyId).execute(), []);
      // Other keys' links and the roles themselves stay.
      const left = await store.db.selectFrom('keys_roles').select(['key_id', 'role_id']).where('workspace_id', '=', workspaceId).execute();
      assert.deepEqual(left, [{ key_id: otherKeyId, role_id: roleIds[0] }]);
      assert.equal((await store.db.selectFrom('roles').select('id').where('workspace_id', '=', workspaceId).execute()).length, 2);
    });

    test('concurrent ensureIdentity for one externalId, each in its own transaction, converge on one row', async () => {
      const { workspaceId } = await seed(store.db);
      const results = await Promise.all(
        Array.from({ length: 10 }, () => store.db.transaction().execute((tx) => ensureIdentity(tx, workspaceId, 'user_concurrent'))),
      );
      assert.equal(new Set(results.map((r) => r.id)).size, 1);
      assert.equal(results.filter((r) => r.created).length, 1);
      const rows = await store.db
        .selectFrom('identities')
        .select('id')
        .where('workspace_id', '=', workspaceId)
        .where('external_id', '=', 'user_concurrent')
        .execute();
      assert.deepEqual(
        rows.map((r) => r.id),
        [results[0].id],
      );
      // Later calls find it.
      assert.deepEqual(await ensureIdentity(store.db, workspaceId, 'user_concurrent'), { id: results[0].id, created: false });
    });

    test('concurrent resolveOrCreate of one missing role name converge on one row, audited once', async () => {
      const { workspaceId } = await seed(store.db);
      const caller: Caller = { workspaceId, rootKeyId: 'rk_test', permissions: new Set(['*']), requestId: 'req_test' };
      const results = await Promise.all(
        Array.from({ length: 10 }, () => store.db.transaction().execute((tx) => resolveOrCreate(tx, caller, 'role', ['admin']))),
      );
      for (const r of results) {
        assert.equal(r.length, 1);
        assert.equal(r[0].name, 'admin');
      }
      const ids = new Set(results.map((r) => r[0].id));
      assert.equal(ids.size, 1);
      const rows = await store.db
        .selectFrom('roles')
        .select('id')
        .where('workspace_id', '=', workspaceId)
        .where('name', '=', 'admin')
        .execute();
      assert.deepEqual(
        rows.map((r) => r.id),
        [...ids],
      );
      const audits = await store.db
        .selectFrom('audit_logs')
        .select('target_id')
        .where('workspace_id', '=', workspaceId)
        .where('event', '=', 'role.create')
        .execute();
      assert.deepEqual(
        audits.map((a) => a.target_id),
        [...ids],
      );
    });

    test('large integers (epoch ms, up to 2^53-1) round-trip as JS numbers; counts are numbers', async () => {
      const workspaceId = newId('ws');
      await store.db
        .insertInto('workspaces')
        .values({ id: workspaceId, name: 'big', created_at: YEAR_2100, deleted_at: Number.MAX_SAFE_INTEGER })
        .execute();
      const row = await store.db
        .selectFrom('workspaces')
        .select(['created_at', 'deleted_at'])
        .where('id', '=', workspaceId)
        .executeTakeFirstOrThrow();
      assert.equal(typeof row.created_at, 'number');
      assert.equal(row.created_at, YEAR_2100);
      assert.equal(row.deleted_at, Number.MAX_SAFE_INTEGER);
      const found = await store.db
        .selectFrom('workspaces')
        .select('id')
        .where('created_at', '=', YEAR_2100)
        .where('id', '=', workspaceId)
        .execute();
      assert.equal(found.length, 1);
      const n = await store.db
        .selectFrom('workspaces')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('id', '=', workspaceId)
        .executeTakeFirstOrThrow();
      assert.equal(n.n, 1);
    });

    test('aggregates over bigint columns (sum, max) are JS numbers', async () => {
      const { workspaceId } = await seed(store.db);
      const keyId = newId('key');
      await store.db
        .insertInto('analytics_key_verifications_per_hour')
        .values(
          [
            {
              key_id: keyId,
              hour: YEAR_2100,
              outcome: 'VALID',
              workspace_id: workspaceId,
              api_id: 'api_x',
              identity_id: null,
              count: 2 ** 40,
            },
            { key_id: keyId, hour: YEAR_2100, outcome: 'EXPIRED', workspace_id: workspaceId, api_id: 'api_x', identity_id: null, count: 3 },
          ].map((r) => verificationHourRow(store.db, r)),
        )
        .execute();
      const row = await store.db
        .selectFrom('analytics_key_verifications_per_hour')
        .select((eb) => [eb.fn.sum<number>('count').as('total'), eb.fn.max<number>('time').as('last')])
        .where('key_id', '=', keyId)
        .executeTakeFirstOrThrow();
      assert.deepEqual(row, { total: 2 ** 40 + 3, last: YEAR_2100 });
    });

    test("a second store opened on the same database sees the first one's committed writes, and vice versa", async () => {
      const other = openStore(url);
      try {
        const name = `shared-${newId('ws')}`;
        await store.db
          .transaction()
          .execute((tx) => tx.insertInto('settings').values({ name, value: 'from-first', updated_at: 1 }).execute());
        assert.equal(
          (await other.db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst())?.value,
          'from-first',
        );
        await other.db.updateTable('settings').set({ value: 'from-second' }).where('name', '=', name).execute();
        assert.equal(
          (await store.db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst())?.value,
          'from-second',
        );
      } finally {
        await other.close();
      }
    });

    if (dialect === 'sqlite') {
      test('SQLite: the file is in WAL mode with foreign keys on', async () => {
        const journal = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(store.db);
        assert.equal(journal.rows[0].journal_mode.toLowerCase(), 'wal');
        const fk = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(store.db);
        assert.equal(fk.rows[0].foreign_keys, 1);
        // Still so on a second connection to the file.
        const other = openStore(url);
        try {
          assert.equal(
            (await sql<{ journal_mode: string }>`pragma journal_mode`.execute(other.db)).rows[0].journal_mode.toLowerCase(),
            'wal',
          );
          assert.equal((await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(other.db)).rows[0].foreign_keys, 1);
        } finally {
          await other.close();
        }
      });

      // Bounded: a lock wait that blocks the event loop would make every conflict last the whole busy timeout (10 s).
      test('SQLite: two stores on one file write in concurrent transactions without SQLITE_BUSY', { timeout: 30_000 }, async () => {
        const a = openStore(url);
        const b = openStore(url);
        try {
          const tag = newId('ws');
          // Each transaction yields to the event loop while holding the write lock, so the other store
          // must wait for it without blocking the process.
          const write = (s: Store, i: number) =>
            s.db.transaction().execute(async (tx) => {
              await tx
                .insertInto('settings')
                .values({ name: `${tag}-${i}-a`, value: String(i), updated_at: 1 })
                .execute();
              await new Promise((resolve) => setTimeout(resolve, 2));
              await tx
                .insertInto('settings')
                .values({ name: `${tag}-${i}-b`, value: String(i), updated_at: 1 })
                .execute();
            });
          const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => write(i % 2 ? a : b, i)));
          assert.deepEqual(
            outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason)),
            [],
          );
          // Autocommit writes outside a transaction wait for the lock too.
          await Promise.all([
            a.db.transaction().execute(async (tx) => {
              await tx
                .insertInto('settings')
                .values({ name: `${tag}-tx`, value: 'x', updated_at: 1 })
                .execute();
              await new Promise((resolve) => setTimeout(resolve, 10));
            }),
            b.db
              .insertInto('settings')
              .values({ name: `${tag}-auto`, value: 'y', updated_at: 1 })
              .execute(),
          ]);
          const rows = await store.db.selectFrom('settings').select('name').where('name', 'like', `${tag}-%`).execute();
          assert.equal(rows.length, 42);
        } finally {
          await a.close();
          await b.close();
        }
      });

      test('SQLite: another process writing the same file in transactions does not make this one fail', { timeout: 60_000 }, async () => {
        const tag = newId('ws');
        const storeModule = repoUrl('src/store/store.ts').href;
        const script = `
          const { openStore } = await import(${JSON.stringify(storeModule)});
          const s = openStore(${JSON.stringify(url)});
          for (let i = 0; i < 30; i++) {
            await s.db.transaction().execute(async (tx) => {
              await tx.insertInto('settings').values({ name: '${tag}-child-' + i, value: 'c', updated_at: 1 }).execute();
              await new Promise((r) => setTimeout(r, 1));
            });
          }
          await s.close();`;
        const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d) => {
          stderr += d;
        });
        const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
        for (let i = 0; i < 30; i++) {
          await store.db.transaction().execute(async (tx) => {
            await tx
              .insertInto('settings')
              .values({ name: `${tag}-parent-${i}`, value: 'p', updated_at: 1 })
              .execute();
            await new Promise((resolve) => setTimeout(resolve, 1));
          });
        }
        assert.equal(await exited, 0, stderr);
        const rows = await store.db.selectFrom('settings').select('name').where('name', 'like', `${tag}-%`).execute();
        assert.equal(rows.length, 60);
      });
    }
  });
}
