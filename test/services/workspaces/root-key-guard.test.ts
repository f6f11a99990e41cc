import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { KyselyPlugin, QueryId } from 'kysely';
import { DIALECTS, freshStore, OPERATOR } from '../../helpers/harness.ts';
import { expectKind } from '../../helpers/errors.ts';
import type { Db, Store } from '../../../src/store/store.ts';
import { generateRootKey, hashKey, keyStart } from '../../../src/crypto/keys.ts';
import { insertRootKey } from '../../../src/services/workspaces/root-keys.ts';
import { revokeRootKey, setRootKeyPermissions } from '../../../src/services/workspaces/root-key-changes.ts';
import { changeBus, type Change } from '../../../src/services/changes.ts';
import { RootKeyGuard } from '../../../src/services/workspaces/root-key-guard.ts';
import { createWorkspace } from '../../../src/services/workspaces/workspaces.ts';

/**
 * `db` with every read of `root_keys` counted in `reads.n`: counted when its result comes back, since a
 * statement compiled once (findRootKey's) goes through transformQuery only when it is compiled.
 */
function countingRootKeyReads(db: Db): { db: Db; reads: { n: number } } {
  const reads = { n: 0 };
  const rootKeyQueries = new WeakSet<QueryId>();
  const plugin: KyselyPlugin = {
    transformQuery({ node, queryId }) {
      if (node.kind === 'SelectQueryNode' && JSON.stringify(node).includes('"root_keys"')) rootKeyQueries.add(queryId);
      return node;
    },
    transformResult: async ({ result, queryId }) => {
      if (rootKeyQueries.has(queryId)) reads.n++;
      return result;
    },
  };
  return { db: db.withPlugin(plugin), reads };
}

const T0 = 1_800_000_000_000; // a window start: 60 s windows begin at multiples of 60,000 ms
const bearer = (key: string) => `Bearer ${key}`;

for (const dialect of DIALECTS) {
  describe(`RootKeyGuard (${dialect})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let workspaceId: string;
    before(async () => {
      ({ store, close } = await freshStore(dialect));
      ({ workspaceId } = await createWorkspace(store.db, 'guard', OPERATOR));
    });
    after(() => close());

    const guarded = (opts: ConstructorParameters<typeof RootKeyGuard>[1] = {}) => {
      const { db, reads } = countingRootKeyReads(store.db);
      const guard = new RootKeyGuard(db, opts);
      // What the runtime does in a server: every committed change of this process reaches the guard at once.
      const hear = (changes: Change[]) => guard.invalidate(changes);
      changeBus.on('committed', hear);
      after(() => {
        changeBus.off('committed', hear);
        return guard.close();
      });
      return { guard, reads };
    };

    test('an unknown key is read once, then answered from memory until its TTL ends', async () => {
      const { guard, reads } = guarded({ unknownTtlMs: 1000 });
      const unknown = bearer(generateRootKey());
      for (let i = 0; i < 50; i++) await expectKind(guard.authenticate(unknown, 'req_x', '10.0.0.1', T0 + i), 'auth/invalid');
      assert.equal(reads.n, 1, 'one store read for 50 attempts');
      assert.equal(guard.stats.unknownHits, 49);
      await expectKind(guard.authenticate(unknown, 'req_x', '10.0.0.1', T0 + 1000), 'auth/invalid');
      assert.equal(reads.n, 2, 'read again once the entry expired');
    });

    test('a found key is read once and cached; a revocation made here applies to the next request, for good', async () => {
      const { guard, reads } = guarded();
      const { rootKey, rootKeyId } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      for (let i = 0; i < 20; i++)
        assert.equal((await guard.authenticate(bearer(rootKey), 'req_1', '10.0.0.1', T0 + i)).rootKeyId, rootKeyId);
      assert.equal(reads.n, 1, 'one store read for 20 requests');
      assert.equal(guard.cache.stats.hits, 19);
      await revokeRootKey(store.db, rootKeyId, OPERATOR);
      for (let i = 0; i < 5; i++) await expectKind(guard.authenticate(bearer(rootKey), 'req_2', '10.0.0.1', T0 + 20 + i), 'auth/revoked');
    });

    test('a permission removed here applies to the next request', async () => {
      const { guard } = guarded();
      const permissions = ['api.*.verify_key', 'api.*.read_key'];
      const { rootKey, rootKeyId } = await insertRootKey(store.db, { workspaceId, permissions }, OPERATOR);
      assert.deepEqual([...(await guard.authenticate(bearer(rootKey), 'req_1', '10.0.0.1', T0)).permissions].sort(), permissions.sort());
      await setRootKeyPermissions(store.db, rootKeyId, ['api.*.read_key'], OPERATOR);
      assert.deepEqual([...(await guard.authenticate(bearer(rootKey), 'req_2', '10.0.0.1', T0 + 1)).permissions], ['api.*.read_key']);
    });

    test('a cached key is refused from the millisecond of its expiry', async () => {
      const { guard, reads } = guarded();
      const { rootKey } = await insertRootKey(store.db, { workspaceId, permissions: ['*'], expiresAt: T0 + 100 }, OPERATOR);
      await guard.authenticate(bearer(rootKey), 'req_1', '10.0.0.1', T0);
      await guard.authenticate(bearer(rootKey), 'req_2', '10.0.0.1', T0 + 99);
      await expectKind(guard.authenticate(bearer(rootKey), 'req_3', '10.0.0.1', T0 + 100), 'auth/expired');
      assert.equal(reads.n, 1, 'answered from the cache');
    });

    test("another process' change (no event here) applies once the change reaches the guard", async () => {
      const { guard } = guarded();
      const { rootKey, rootKeyId } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      await guard.authenticate(bearer(rootKey), 'req_1', '10.0.0.1', T0);
      await store.db.updateTable('root_keys').set({ revoked_at: T0 }).where('id', '=', rootKeyId).execute();
      await guard.authenticate(bearer(rootKey), 'req_2', '10.0.0.1', T0 + 1); // cached until it hears of the change
      guard.invalidate([{ kind: 'root-key', id: rootKeyId }]); // what the feed, NOTIFY or Redis hand the runtime
      await expectKind(guard.authenticate(bearer(rootKey), 'req_3', '10.0.0.1', T0 + 2), 'auth/revoked');
    });

    test('a read that raced with a change is not cached', async () => {
      const { guard, reads } = guarded();
      const { rootKey, rootKeyId } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      const first = guard.authenticate(bearer(rootKey), 'req_1', '10.0.0.1', T0); // its read is in flight
      guard.invalidate([{ kind: 'root-key', id: rootKeyId }]);
      await first;
      await guard.authenticate(bearer(rootKey), 'req_2', '10.0.0.1', T0 + 1);
      assert.equal(reads.n, 2, 'the raced read was not kept');
    });

    test('concurrent requests of a key not cached share one read; one after a change does not join a read from before it', async () => {
      const { guard, reads } = guarded();
      const { rootKey, rootKeyId } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      const callers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => guard.authenticate(bearer(rootKey), 'req_1', '10.0.0.1', T0 + i)),
      );
      assert.deepEqual(new Set(callers.map((c) => c.rootKeyId)), new Set([rootKeyId]));
      assert.equal(reads.n, 1, 'one store read for 20 concurrent requests');
      guard.cache.clear(); // as the TTL's end: the next requests read again
      const stale = guard.authenticate(bearer(rootKey), 'req_2', '10.0.0.1', T0 + 100); // its read is in flight
      await revokeRootKey(store.db, rootKeyId, OPERATOR); // heard at once by the guard
      await expectKind(guard.authenticate(bearer(rootKey), 'req_3', '10.0.0.1', T0 + 101), 'auth/revoked');
      await stale.catch(() => {}); // either answer: it was sent before the revocation
      assert.equal(reads.n, 3, 'the request after the revocation read for itself');
    });

    test('a key remembered as unknown works at once when this process creates it (a given key, as at bootstrap)', async () => {
      const { guard } = guarded({ unknownTtlMs: 60_000 });
      const given = generateRootKey();
      await expectKind(guard.authenticate(bearer(given), 'req_1', '10.0.0.1', T0), 'auth/invalid');
      await insertRootKey(store.db, { workspaceId, permissions: ['*'], rootKey: given }, OPERATOR);
      assert.equal((await guard.authenticate(bearer(given), 'req_2', '10.0.0.1', T0 + 1)).workspaceId, workspaceId);
    });

    test('a key created by another process (no event here) is accepted once the unknown entry expires', async () => {
      const { guard } = guarded({ unknownTtlMs: 1000 });
      const given = generateRootKey();
      await expectKind(guard.authenticate(bearer(given), 'req_1', '10.0.0.1', T0), 'auth/invalid');
      // What the CLI's insert looks like from here: a row, and no rootKeyEvents in this process.
      await store.db
        .insertInto('root_keys')
        .values({
          id: `rk_other${Date.now()}`,
          workspace_id: workspaceId,
          name: null,
          hash: hashKey(given),
          start: keyStart(given, 'kh_root'),
          permissions: '["*"]',
          created_at: T0,
          expires_at: null,
          revoked_at: null,
          last_used_at: null,
        })
        .execute();
      await expectKind(guard.authenticate(bearer(given), 'req_2', '10.0.0.1', T0 + 999), 'auth/invalid');
      assert.equal((await guard.authenticate(bearer(given), 'req_3', '10.0.0.1', T0 + 1000)).workspaceId, workspaceId);
    });

    test('failures are limited per address: 429 after the burst, with no store read; other addresses unaffected', async () => {
      const { guard, reads } = guarded({ failureLimit: 3, windowMs: 60_000 });
      const { rootKey } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      const { rootKey: fresh } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      assert.ok(await guard.authenticate(bearer(rootKey), 'req_ok', '10.0.0.1', T0), 'a success from A, before A is limited');
      for (let i = 0; i < 3; i++)
        await expectKind(guard.authenticate(bearer(generateRootKey()), 'req_x', '10.0.0.1', T0 + i), 'auth/invalid');
      const before = reads.n;
      const limited = await expectKind(guard.authenticate(bearer(generateRootKey()), 'req_x', '10.0.0.1', T0 + 10), 'limit/rate-limited');
      assert.equal(limited.status, 429);
      assert.match(limited.message, /Too many failed root-key authentications from 10\.0\.0\.1; retry in 60 s/);
      assert.equal(reads.n, before, 'a limited address costs no store read');
      assert.equal(guard.retryAfterSeconds(T0 + 10), 60);

      assert.ok(await guard.authenticate(bearer(rootKey), 'req_ok', '10.0.0.1', T0 + 11), 'a key that succeeded before still works from A');
      await expectKind(guard.authenticate(bearer(fresh), 'req_new', '10.0.0.1', T0 + 12), 'limit/rate-limited');
      await expectKind(guard.authenticate(bearer(generateRootKey()), 'req_y', '10.0.0.2', T0 + 13), 'auth/invalid');
      assert.ok(await guard.authenticate(bearer(fresh), 'req_b', '10.0.0.2', T0 + 14), 'another address is not limited');
      assert.deepEqual({ failures: guard.stats.failures, limited: guard.stats.limited }, { failures: 4, limited: 2 });

      await expectKind(guard.authenticate(bearer(generateRootKey()), 'req_z', '10.0.0.1', T0 + 60_000), 'auth/invalid');
    });

    test('successes, missing and malformed headers are not counted; a limit of 0 never limits', async () => {
      const { guard } = guarded({ failureLimit: 2 });
      const { rootKey } = await insertRootKey(store.db, { workspaceId, permissions: ['*'] }, OPERATOR);
      for (let i = 0; i < 10; i++) {
        await guard.authenticate(bearer(rootKey), 'req_ok', '10.0.0.3', T0 + i);
        await expectKind(guard.authenticate(undefined, 'req_m', '10.0.0.3', T0 + i), 'auth/missing');
        await expectKind(guard.authenticate('Bearer nope', 'req_m', '10.0.0.3', T0 + i), 'auth/malformed');
      }
      await expectKind(guard.authenticate(bearer(generateRootKey()), 'req_x', '10.0.0.3', T0 + 20), 'auth/invalid');
      const { guard: unlimited } = guarded({ failureLimit: 0 });
      for (let i = 0; i < 20; i++)
        await expectKind(unlimited.authenticate(bearer(generateRootKey()), 'req', '10.0.0.4', T0 + i), 'auth/invalid');
    });
  });
}
