import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, type World } from '../../helpers/harness.ts';
import { hashOf, newPlain } from '../../helpers/migrations.ts';
import { until, verifiedPayloads, type webhookReceiver } from '../../helpers/webhook-receiver.ts';
import { deliveringWorld } from '../../helpers/webhook-world.ts';
import { insertRootKey } from '../../../src/services/workspaces/root-keys.ts';
import { revokeRootKey } from '../../../src/services/workspaces/root-key-changes.ts';
import { markKeyLeaked } from '../../../src/services/leaks/leaked-keys.ts';
import { EVENT_TYPES } from '../../../src/domain/webhook-events.ts';
import { createMigration } from '../../../src/services/migrations/migration-records.ts';

/**
 * Each event caused by a change arrives at a real receiver, signed (verified with standardwebhooks), within
 * 2 s of its cause, with `data` naming ids and facts and never a key's plaintext or hash; a change that fails
 * or rolls back emits nothing; another workspace's changes never reach the endpoint.
 */
for (const dialect of DIALECTS) {
  describe(`events of changes, delivered (${dialect})`, () => {
    let w: World;
    let close: () => Promise<void>;
    let rx: Awaited<ReturnType<typeof webhookReceiver>>;
    let secret: string;
    let apiId: string;
    before(async () => {
      // Every type but the expiry sweep's (its own tests): a rerolled key's old key expires at once, and the
      // sweep's key.expired of it, a second later, must not land among the events a test here counts.
      const events = EVENT_TYPES.filter((t) => t !== 'key.expiring' && t !== 'key.expired');
      ({ w, rx, secret, close } = await deliveringWorld(dialect, { events }));
      apiId = await w.createApi('events');
    });
    after(() => close?.());

    /** Runs `cause`, then waits (≤ 2 s) for exactly the events of `types` it causes, and returns their payloads. */
    async function expectEvents(types: string[], cause: () => Promise<unknown>) {
      const from = rx.got.length;
      await cause();
      await until(`${types.join(', ')}`, () => rx.got.length >= from + types.length, 2000);
      await new Promise((r) => setTimeout(r, 150));
      const got = verifiedPayloads(rx.got.slice(from), secret);
      assert.deepEqual(got.map((p) => p.type).sort(), [...types].sort());
      return got;
    }

    test('key.created, key.updated (changed fields), key.deleted; never the plaintext or hash', async () => {
      let key = '';
      let keyId = '';
      const [created] = await expectEvents(['key.created'], async () => ({ key, keyId } = await w.createKey({ apiId, remaining: 5 })));
      assert.deepEqual(created.data, { keyId, apiId });
      const [updated] = await expectEvents(['key.updated'], () => w.post('/v1/keys.updateKey', { keyId, name: 'n', meta: { a: 1 } }));
      assert.deepEqual(updated.data, { keyId, apiId, changed: ['name', 'meta'] });
      const [credits] = await expectEvents(['key.updated'], () => w.post('/v1/keys.updateRemaining', { keyId, op: 'increment', value: 3 }));
      assert.deepEqual(credits.data.changed, ['remaining']);
      const [rerolled] = await expectEvents(['key.created'], () => w.post('/v2/keys.rerollKey', { keyId, expiration: 0 }));
      assert.equal(rerolled.data.rerolledFrom, keyId);
      const [deleted] = await expectEvents(['key.deleted'], () => w.post('/v1/keys.deleteKey', { keyId }));
      assert.deepEqual(deleted.data, { keyId, apiId, permanent: false });
      const hash = (await w.store.db.selectFrom('keys').select('hash').where('id', '=', keyId).executeTakeFirstOrThrow()).hash;
      for (const r of rx.got) assert.ok(!r.body.includes(key) && !r.body.includes(hash));
    });

    test('keys.imported (one per batch of createKeys); rootkey.created and rootkey.revoked', async () => {
      const [imported] = await expectEvents(['keys.imported'], () =>
        w.post(
          '/v1/migrations.createKeys',
          [1, 2, 3].map(() => ({ apiId, hash: hashOf(newPlain()) })),
        ),
      );
      assert.deepEqual(imported.data, { apiId, count: 3 });
      const { rootKeyId } = await insertRootKey(w.store.db, { workspaceId: w.workspaceId, permissions: ['api.*.read_key'] }, OPERATOR);
      await until('rootkey.created', () => rx.got.some((r) => r.body.includes(rootKeyId)), 2000);
      const [revoked] = await expectEvents(['rootkey.revoked'], () => revokeRootKey(w.store.db, rootKeyId, OPERATOR));
      assert.deepEqual(revoked.data, { rootKeyId });
    });

    test('key.leaked from the leaked-key action, once, naming where it was found and never the key', async () => {
      let key = '';
      let keyId = '';
      await expectEvents(['key.created'], async () => ({ key, keyId } = await w.createKey({ apiId })));
      const target = { kind: 'key' as const, id: keyId, workspaceId: w.workspaceId };
      const sighting = { url: 'https://github.com/o/r/blob/main/.env', source: 'commit' };
      const [leaked] = await expectEvents(['key.leaked'], () =>
        markKeyLeaked(w.store.db, target, sighting, 'disable', OPERATOR, 'req_leak'),
      );
      assert.deepEqual(leaked.data, { keyId, apiId, url: sighting.url, source: 'commit', action: 'disable' });
      assert.ok(!rx.got.at(-1)!.body.includes(key));
      const before = rx.got.length;
      assert.equal(await markKeyLeaked(w.store.db, target, sighting, 'disable', OPERATOR, 'req_leak2'), false);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(rx.got.length, before, 'a second report emits nothing');
    });

    test('migrations.enqueueKeys: keys.imported with the migration, then migration.completed with its counts', async () => {
      const plains = [newPlain(), newPlain()];
      const items = [...plains.map((p) => ({ hash: hashOf(p) })), { hash: hashOf(plains[0]) }];
      const { migrationId } = await createMigration(w.store.db, w.workspaceId, 'events', OPERATOR);
      const got = await expectEvents(['keys.imported', 'migration.completed'], async () => {
        const r = await w.post('/v1/migrations.enqueueKeys', { migrationId, apiId, keys: items });
        assert.equal(r.status, 202, r.body);
      });
      const completed = got.find((p) => p.type === 'migration.completed')!;
      const imported = got.find((p) => p.type === 'keys.imported')!;
      assert.equal(imported.data.count, 2);
      assert.equal(imported.data.migrationId, migrationId);
      assert.equal(completed.data.migrationId, migrationId);
      assert.deepEqual(completed.data.counts, { migrated: 2, failed: 1 });
    });

    test('a change that fails emits nothing; another workspace is never heard of', async () => {
      const before = rx.got.length;
      const hash = hashOf(newPlain());
      // Two items with one hash: the whole import is refused, so no keys.imported.
      assert.notEqual(
        (
          await w.post('/v1/migrations.createKeys', [
            { apiId, hash },
            { apiId, hash },
          ])
        ).status,
        200,
      );
      assert.equal((await w.post('/v1/keys.updateKey', { keyId: 'key_nope', name: 'x' })).status, 404);
      const other = await w.otherWorkspace();
      const otherApi = await w.createApi('other', other.root);
      await w.createKey({ apiId: otherApi }, other.root);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(rx.got.length, before);
    });
  });
}
