import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, world, type World } from '../../helpers/harness.ts';
import { createRole } from '../../helpers/rbac.ts';
import { drain, hashOf, newPlain } from '../../helpers/migrations.ts';
import { createMigration } from '../../../src/services/migrations/migration-records.ts';
import { sha256b64 } from '../../helpers/hashes.ts';
import { sleep } from '../../helpers/timing.ts';
import { KeyRecordLoader } from '../../../src/services/verification/key-record.ts';

for (const dialect of DIALECTS) {
  describe(`KeyRecordLoader (${dialect})`, () => {
    let w: World;
    let apiId: string;
    let loader: KeyRecordLoader;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi();
      loader = new KeyRecordLoader(w.store.db, w.store.caps.dialect);
    });
    after(() => w.close());

    test('one statement loads the key with its identity, roles, permissions direct and through roles, and limits', async () => {
      await createRole(w, 'editor', ['docs.write', 'docs.read']);
      const identity = await w.post('/v1/identities.createIdentity', {
        externalId: 'user_rec',
        meta: { tier: 'gold' },
        ratelimits: [
          { name: 'calls', limit: 10, duration: 1_000 },
          { name: 'shared', limit: 5, duration: 60_000 },
        ],
      });
      assert.equal(identity.status, 200, identity.body);
      const { keyId, key } = await w.createKey({
        apiId,
        externalId: 'user_rec',
        name: 'rec',
        meta: { a: 1 },
        environment: 'live',
        roles: ['editor', 'auditor'],
        permissions: ['docs.read', 'billing.read'],
        remaining: 3,
        refill: { interval: 'daily', amount: 3 },
        ratelimit: { type: 'fast', limit: 7, duration: 2_000 },
      });
      // A key limit replaces the identity limit of the same name.
      await w.store.db
        .insertInto('ratelimits')
        .values({
          id: 'rl_rec_calls',
          workspace_id: w.workspaceId,
          key_id: keyId,
          identity_id: null,
          name: 'calls',
          limit: 99,
          duration: 9_000,
          type: 'consistent',
          auto_apply: 0,
          created_at: 0,
          updated_at: 0,
        })
        .execute();
      const r = await loader.load(sha256b64(key));
      assert.ok(r);
      assert.deepEqual(
        {
          ...r,
          permissionSet: [...r.permissionSet],
          limits: Object.fromEntries(r.limits),
          identity: { ...r.identity, id: undefined },
          configuredLimits: r.configuredLimits.map((l) => ({ ...l, id: l.id === 'rl_rec_calls' ? l.id : l.id.slice(0, 3) })),
        },
        {
          id: keyId,
          hash: sha256b64(key),
          workspaceId: w.workspaceId,
          apiId,
          name: 'rec',
          meta: { a: 1 },
          enabled: true,
          expires: undefined,
          environment: 'live',
          hasCredits: true,
          refill: { interval: 'daily', amount: 3, refillDay: null },
          lastRefillAt: r.lastRefillAt,
          identity: { id: undefined, externalId: 'user_rec', meta: { tier: 'gold' } },
          roles: ['auditor', 'editor'],
          permissions: ['billing.read', 'docs.read', 'docs.write'],
          permissionSet: ['billing.read', 'docs.read', 'docs.write'],
          limits: {
            calls: { name: 'calls', limit: 99, duration: 9_000, type: 'consistent', autoApply: false },
            shared: { name: 'shared', limit: 5, duration: 60_000, type: 'consistent', autoApply: false },
            default: { name: 'default', limit: 7, duration: 2_000, type: 'fast', autoApply: true },
          },
          // Every stored limit with its id (what v2 shows), by name: the identity's and the key's of the same name both.
          configuredLimits: [
            { id: 'rl_', name: 'calls', limit: 10, duration: 1_000, autoApply: false, ofIdentity: true }, // rl_1… < rl_rec…
            { id: 'rl_rec_calls', name: 'calls', limit: 99, duration: 9_000, autoApply: false, ofIdentity: false },
            { id: 'rl_', name: 'default', limit: 7, duration: 2_000, autoApply: true, ofIdentity: false },
            { id: 'rl_', name: 'shared', limit: 5, duration: 60_000, autoApply: false, ofIdentity: true },
          ],
        },
      );
      assert.match(r.identity?.id ?? '', /^id_/);
    });

    test('keys with the same roles and permissions share them; deleted keys and keys of deleted APIs are not found', async () => {
      const a = await w.createKey({ apiId, roles: ['shared-role'], permissions: ['x.read'] });
      const b = await w.createKey({ apiId, roles: ['shared-role'], permissions: ['x.read'] });
      const [ra, rb] = [await loader.load(sha256b64(a.key)), await loader.load(sha256b64(b.key))];
      assert.ok(ra && rb);
      assert.equal(ra.roles, rb.roles);
      assert.equal(ra.permissionSet, rb.permissionSet);
      assert.equal(ra.limits, rb.limits);
      assert.equal(await loader.load(sha256b64('not a key')), null);
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: a.keyId })).status, 200);
      assert.equal(await loader.load(sha256b64(a.key)), null);
      const otherApi = await w.createApi();
      const c = await w.createKey({ apiId: otherApi });
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: otherApi })).status, 200);
      assert.equal(await loader.load(sha256b64(c.key)), null);
    });

    test('an unknown key, once imported, verifies at once on this server and within 1 s on another', async () => {
      const { buildApp } = await import('../../../src/app.ts');
      const second = await buildApp({ store: w.store });
      try {
        const plain = newPlain();
        const verify = (app: typeof second) =>
          app.inject({ method: 'POST', url: '/v1/keys.verifyKey', payload: { key: plain } }).then((r) => r.json().code);
        // Both servers remember the key as unknown.
        for (const app of [w.app, second]) for (let i = 0; i < 2; i++) assert.equal(await verify(app), 'NOT_FOUND');
        const res = await w.post('/v1/migrations.createKeys', [{ apiId, hash: hashOf(plain) }]);
        assert.equal(res.status, 200, res.body);
        assert.equal(await verify(w.app), 'VALID');
        const t0 = Date.now();
        let code = await verify(second);
        while (code !== 'VALID' && Date.now() - t0 < 1_000) {
          await sleep(20);
          code = await verify(second);
        }
        assert.equal(code, 'VALID', 'the change feed reached the second server within 1 s');
      } finally {
        await second.close();
      }
    });

    test('an unknown key imported by the job worker (enqueueKeys) verifies within 1 s', async () => {
      const plain = newPlain();
      const verify = () => w.app.inject({ method: 'POST', url: '/v1/keys.verifyKey', payload: { key: plain } }).then((r) => r.json().code);
      for (let i = 0; i < 2; i++) assert.equal(await verify(), 'NOT_FOUND');
      const { migrationId } = await createMigration(w.store.db, w.workspaceId, 'test', OPERATOR);
      const res = await w.post('/v1/migrations.enqueueKeys', { migrationId, apiId, keys: [{ hash: hashOf(plain) }] });
      assert.equal(res.status, 202, res.body);
      await drain(w.store);
      const t0 = Date.now();
      let code = await verify();
      while (code !== 'VALID' && Date.now() - t0 < 1_000) {
        await sleep(20);
        code = await verify();
      }
      assert.equal(code, 'VALID', 'the change feed reached the server within 1 s');
    });
  });
}
