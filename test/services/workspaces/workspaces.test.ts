import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore, OPERATOR } from '../../helpers/harness.ts';
import { count } from '../../helpers/rows.ts';
import { expectKind } from '../../helpers/errors.ts';
import { openStore } from '../../../src/store/store.ts';
import { generateRootKey, hashKey } from '../../../src/crypto/keys.ts';
import { isWellFormedRootKey } from '../../../src/domain/root-key-format.ts';
import { authenticateRootKey } from '../../../src/services/workspaces/root-keys.ts';
import { bootstrap, createWorkspace } from '../../../src/services/workspaces/workspaces.ts';

for (const dialect of DIALECTS) {
  describe(`bootstrap (${dialect})`, () => {
    const opened: Array<() => Promise<void>> = [];
    const fresh = async () => {
      const f = await freshStore(dialect);
      opened.push(f.close);
      return f;
    };
    after(async () => {
      for (const c of opened) await c();
    });

    test('on an empty database: one workspace and a "*" root key that authenticates; null the second time', async () => {
      const { store } = await fresh();
      const result = await bootstrap(store.db, undefined);
      assert.ok(result);
      assert.equal(result.generated, true);
      assert.equal(isWellFormedRootKey(result.rootKey), true);
      const caller = await authenticateRootKey(store.db, `Bearer ${result.rootKey}`, 'req_b');
      assert.equal(caller.workspaceId, result.workspaceId);
      assert.equal(caller.rootKeyId, result.rootKeyId);
      assert.deepEqual([...caller.permissions], ['*']);
      assert.equal(await bootstrap(store.db, undefined), null);
      assert.equal(await bootstrap(store.db, generateRootKey()), null);
      assert.deepEqual(
        (await store.db.selectFrom('workspaces').select('id').execute()).map((w) => w.id),
        [result.workspaceId],
      );
      assert.equal(await count(store.db, 'root_keys'), 1);
      // Stored as a hash, audited without the secret.
      const audit = await store.db.selectFrom('audit_logs').selectAll().execute();
      assert.deepEqual(audit.map((a) => a.event).sort(), ['root_key.create', 'workspace.create']);
      assert.ok(!JSON.stringify(audit).includes(result.rootKey.slice(8)));
    });

    test('uses a given root key, which then authenticates', async () => {
      const { store } = await fresh();
      const given = generateRootKey();
      const result = await bootstrap(store.db, given);
      assert.ok(result);
      assert.equal(result.rootKey, given);
      assert.equal(result.generated, false);
      const caller = await authenticateRootKey(store.db, `Bearer ${given}`, 'req_b');
      assert.equal(caller.workspaceId, result.workspaceId);
      assert.ok(caller.permissions.has('*'));
      const row = await store.db.selectFrom('root_keys').select('hash').where('id', '=', result.rootKeyId).executeTakeFirstOrThrow();
      assert.equal(row.hash, hashKey(given));
    });

    test('a malformed given key is refused and leaves the database unbootstrapped', async () => {
      const { store } = await fresh();
      const err = await expectKind(bootstrap(store.db, 'not-a-root-key'), 'request/invalid-body');
      assert.deepEqual(
        err.errors?.map((e) => e.path),
        ['/rootKey'],
      );
      assert.equal(await count(store.db, 'workspaces'), 0);
      assert.equal(await count(store.db, 'settings'), 0);
      assert.ok(await bootstrap(store.db, undefined));
    });

    test('does nothing on a database that already has a workspace', async () => {
      const { store } = await fresh();
      await createWorkspace(store.db, 'existing', OPERATOR);
      assert.equal(await bootstrap(store.db, undefined), null);
      assert.equal(await count(store.db, 'workspaces'), 1);
      assert.equal(await count(store.db, 'root_keys'), 0);
    });

    test('5 concurrent calls on one store create exactly one workspace and one key', async () => {
      const { store } = await fresh();
      const results = await Promise.all(Array.from({ length: 5 }, () => bootstrap(store.db, undefined)));
      assert.equal(results.filter((r) => r !== null).length, 1);
      assert.equal(await count(store.db, 'workspaces'), 1);
      assert.equal(await count(store.db, 'root_keys'), 1);
    });

    test('5 concurrent calls from 5 stores on one database (5 processes) create exactly one workspace and one key', async () => {
      const { store, url } = await fresh();
      const stores = Array.from({ length: 5 }, () => openStore(url));
      try {
        const results = await Promise.all(stores.map((s) => bootstrap(s.db, undefined)));
        const winners = results.filter((r) => r !== null);
        assert.equal(winners.length, 1);
        assert.equal(await count(store.db, 'workspaces'), 1);
        assert.equal(await count(store.db, 'root_keys'), 1);
        assert.equal((await authenticateRootKey(store.db, `Bearer ${winners[0].rootKey}`, 'req_b')).workspaceId, winners[0].workspaceId);
      } finally {
        for (const s of stores) await s.close();
      }
    });
  });
}
