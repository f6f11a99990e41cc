import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, freshStore } from '../../helpers/harness.ts';
import type { Store } from '../../../src/store/store.ts';
import { createWorkspace } from '../../../src/services/workspaces/workspaces.ts';
import { operatorCaller, type Caller } from '../../../src/services/caller.ts';
import { createNamespace } from '../../../src/services/ratelimits/namespaces.ts';
import { setOverride } from '../../../src/services/ratelimits/overrides.ts';
import { NamespaceCache } from '../../../src/services/ratelimits/namespace-cache.ts';

for (const dialect of DIALECTS) {
  describe(`NamespaceCache (${dialect})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let caller: Caller;
    before(async () => {
      ({ store, close } = await freshStore(dialect));
      caller = operatorCaller((await createWorkspace(store.db, 'acme', OPERATOR)).workspaceId, OPERATOR, 'req_test');
    });
    after(() => close());

    /** Counts the statements `get` sends to the store. */
    function countingDb(): { db: Store['db']; reads: () => number } {
      let n = 0;
      const db = store.db.withPlugin({
        transformQuery: (args) => {
          n++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      return { db, reads: () => n };
    }

    test('a hit reads nothing; an absent namespace is not cached; a namespace change drops the entry', async () => {
      await createNamespace(store.db, caller, 'email');
      const cache = new NamespaceCache();
      const { db, reads } = countingDb();
      const first = await cache.get(db, caller.workspaceId, 'email');
      assert.ok(first);
      const afterLoad = reads();
      assert.equal(afterLoad, 2, 'the namespace and its overrides');
      assert.equal(await cache.get(db, caller.workspaceId, 'email'), first);
      assert.equal(reads(), afterLoad);

      assert.equal(await cache.get(db, caller.workspaceId, 'nope'), undefined);
      assert.equal(await cache.get(db, caller.workspaceId, 'nope'), undefined);
      assert.equal(reads(), afterLoad + 2, 'each miss reads the store again');

      await setOverride(store.db, caller, { namespaceName: 'email', identifier: 'vip', limit: 9, duration: 1000 });
      assert.equal((await cache.get(db, caller.workspaceId, 'email'))?.overrides.match('vip'), undefined, 'no change told yet');
      cache.invalidate([{ kind: 'namespace', id: first.id }]);
      assert.equal((await cache.get(db, caller.workspaceId, 'email'))?.overrides.match('vip')?.limit, 9);
    });

    test('another workspace with the same name is another entry', async () => {
      const other = operatorCaller((await createWorkspace(store.db, 'other', OPERATOR)).workspaceId, OPERATOR, 'req_test');
      await createNamespace(store.db, caller, 'shared');
      await createNamespace(store.db, other, 'shared');
      const cache = new NamespaceCache();
      const a = await cache.get(store.db, caller.workspaceId, 'shared');
      const b = await cache.get(store.db, other.workspaceId, 'shared');
      assert.ok(a && b);
      assert.notEqual(a.id, b.id);
    });

    test('a load that raced with a change is answered but not cached', async () => {
      await createNamespace(store.db, caller, 'raced');
      const cache = new NamespaceCache();
      const { db, reads } = countingDb();
      const loading = cache.get(db, caller.workspaceId, 'raced');
      cache.invalidate([{ kind: 'namespace', id: 'rlns_any' }]);
      assert.ok(await loading);
      const before = reads();
      assert.ok(await cache.get(db, caller.workspaceId, 'raced'));
      assert.equal(reads(), before + 2, 'loaded again');
    });

    test('at most maxEntries entries: the oldest is dropped first', async () => {
      for (const name of ['n1', 'n2', 'n3']) await createNamespace(store.db, caller, name);
      const cache = new NamespaceCache({ maxEntries: 2 });
      const { db, reads } = countingDb();
      for (const name of ['n1', 'n2', 'n3']) await cache.get(db, caller.workspaceId, name);
      const before = reads();
      await cache.get(db, caller.workspaceId, 'n3');
      await cache.get(db, caller.workspaceId, 'n2');
      assert.equal(reads(), before, 'n2 and n3 are cached');
      await cache.get(db, caller.workspaceId, 'n1');
      assert.equal(reads(), before + 2, 'n1 was evicted');
    });
  });
}
