import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { paths } from '../../../helpers/errors.ts';
import { keyRow, rootKeyId, snapshot } from '../../../helpers/rows.ts';
import { securityTests } from '../../../helpers/security.ts';
import { createPermission, createRole, directPermissions } from '../../../helpers/rbac.ts';

/** Every table an updateKey may write. */
const TABLES = [
  'keys',
  'identities',
  'roles',
  'permissions',
  'keys_roles',
  'keys_permissions',
  'ratelimits',
  'audit_logs',
  'change_feed',
] as const;
/** A key as keys.getKey shows it, with the members these tests compute with. */
type KeyView = Loose<{ updatedAt: number; expires: number; refill: Loose<{ lastRefillAt: number }> }>;

for (const dialect of DIALECTS) {
  describe(`keys.updateKey (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('update-api');
    });
    after(() => w.close());

    const view = async (keyId: string) => {
      const r = await w.get<KeyView>('/v1/keys.getKey', { keyId });
      assert.equal(r.status, 200, r.body);
      return r.json;
    };
    const update = async (body: Record<string, unknown>, key?: string) => {
      const r = await w.post('/v1/keys.updateKey', body, key);
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(r.json, {});
      return r;
    };
    /** Everything an updateKey can change about a key, plus table counts: equal before and after a refused call. */
    const state = async (keyId: string) => ({
      row: await keyRow(w, keyId),
      view: await view(keyId),
      limits: await w.store.db.selectFrom('ratelimits').selectAll().where('key_id', '=', keyId).execute(),
      counts: await snapshot(w, TABLES),
    });
    const fullKey = () =>
      w.createKey({
        apiId,
        name: 'before',
        externalId: 'user_before',
        meta: { v: 1 },
        expires: Date.now() + 3_600_000,
        remaining: 10,
        refill: { interval: 'monthly', amount: 20, refillDay: 5 },
        ratelimit: { type: 'fast', limit: 5, duration: 1000 },
        enabled: true,
        environment: 'prod',
        roles: ['before-role'],
        permissions: ['before.perm'],
      });

    test('every field is set and read back through getKey; updatedAt moves, createdAt does not', async () => {
      const { keyId } = await w.createKey({ apiId });
      const createdAt = (await view(keyId)).createdAt;
      const t0 = Date.now();
      const expires = t0 + 86_400_000;
      const meta = { plan: 'team', nested: { list: [1, 'two', null] }, unicode: 'ünï 🔑' };
      await update({
        keyId,
        name: 'after',
        externalId: 'user_after',
        meta,
        expires,
        remaining: 7,
        refill: { interval: 'monthly', amount: 30, refillDay: 15 },
        ratelimit: { type: 'fast', limit: 9, duration: 60_000 },
        enabled: false,
        environment: 'staging',
        roles: [{ name: 'set-role', create: true }],
        permissions: [{ slug: 'set.perm', create: true }],
      });
      const t1 = Date.now();
      const got = await view(keyId);
      const identity = await w.store.db
        .selectFrom('identities')
        .selectAll()
        .where('external_id', '=', 'user_after')
        .executeTakeFirstOrThrow();
      assert.ok(got.updatedAt >= t0 && got.updatedAt <= t1, `updatedAt ${got.updatedAt} outside [${t0}, ${t1}]`);
      assert.equal(got.createdAt, createdAt);
      assert.ok(got.refill.lastRefillAt >= t0 && got.refill.lastRefillAt <= t1, 'a new refill schedule starts now');
      assert.deepEqual(got, {
        id: keyId,
        start: got.start,
        apiId,
        workspaceId: w.workspaceId,
        name: 'after',
        ownerId: 'user_after',
        externalId: 'user_after',
        meta,
        createdAt,
        updatedAt: got.updatedAt,
        expires,
        remaining: 7,
        refill: { interval: 'monthly', amount: 30, refillDay: 15, lastRefillAt: got.refill.lastRefillAt },
        ratelimit: { async: true, type: 'fast', limit: 9, duration: 60_000, refillRate: 9, refillInterval: 60_000 },
        roles: ['set-role'],
        permissions: ['set.perm'],
        enabled: false,
        environment: 'staging',
        identity: { id: identity.id, externalId: 'user_after', meta: {} },
      });
      const row = await keyRow(w, keyId);
      assert.equal(row.enabled, 0);
      assert.equal(row.identity_id, identity.id);
      assert.deepEqual(JSON.parse(row.meta!), meta);
    });

    test('absent members leave the key as it was', async () => {
      const { keyId } = await fullKey();
      const before = await view(keyId);
      const limitsBefore = await w.store.db.selectFrom('ratelimits').selectAll().where('key_id', '=', keyId).execute();
      await update({ keyId });
      const same = await view(keyId);
      assert.deepEqual({ ...same, updatedAt: 0 }, { ...before, updatedAt: 0 });
      await update({ keyId, name: 'renamed' });
      const renamed = await view(keyId);
      assert.deepEqual({ ...renamed, updatedAt: 0 }, { ...before, name: 'renamed', updatedAt: 0 });
      // Updating the name keeps the rate limit row itself (not a new one).
      assert.deepEqual(await w.store.db.selectFrom('ratelimits').selectAll().where('key_id', '=', keyId).execute(), limitsBefore);
    });

    test('null clears every nullable attribute; the identity itself stays', async () => {
      const { keyId } = await fullKey();
      await update({
        keyId,
        name: null,
        externalId: null,
        meta: null,
        expires: null,
        remaining: null,
        refill: null,
        ratelimit: null,
        environment: null,
        roles: [],
        permissions: [],
      });
      const got = await view(keyId);
      assert.deepEqual(got, {
        id: keyId,
        start: got.start,
        apiId,
        workspaceId: w.workspaceId,
        createdAt: got.createdAt,
        updatedAt: got.updatedAt,
        roles: [],
        permissions: [],
        enabled: true,
      });
      const row = await keyRow(w, keyId);
      assert.deepEqual(
        [
          row.name,
          row.identity_id,
          row.meta,
          row.expires_at,
          row.remaining,
          row.refill_interval,
          row.refill_amount,
          row.refill_day,
          row.last_refill_at,
          row.environment,
        ],
        [null, null, null, null, null, null, null, null, null, null],
      );
      assert.equal((await w.store.db.selectFrom('ratelimits').select('id').where('key_id', '=', keyId).execute()).length, 0);
      const identity = await w.store.db.selectFrom('identities').select('id').where('external_id', '=', 'user_before').execute();
      assert.equal(identity.length, 1, 'unlinking does not delete the identity');
    });

    test('enabled: true, false and absent', async () => {
      const { keyId } = await w.createKey({ apiId });
      await update({ keyId, enabled: false });
      assert.equal((await view(keyId)).enabled, false);
      await update({ keyId, name: 'still-disabled' });
      assert.equal((await view(keyId)).enabled, false);
      await update({ keyId, enabled: true });
      assert.equal((await view(keyId)).enabled, true);
      assert.equal((await keyRow(w, keyId)).enabled, 1);
    });

    test('remaining: a value (0 included) is set, null makes the key unlimited', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 3 });
      await update({ keyId, remaining: 0 });
      assert.equal((await view(keyId)).remaining, 0);
      await update({ keyId, remaining: 1000 });
      assert.equal((await view(keyId)).remaining, 1000);
      await update({ keyId, remaining: null });
      assert.equal((await view(keyId)).remaining, undefined);
      assert.equal((await keyRow(w, keyId)).remaining, null);
    });

    test('re-enabling: disabled, expired and used-up keys become valid again', async () => {
      const disabled = await w.createKey({ apiId, enabled: false });
      await update({ keyId: disabled.keyId, enabled: true });
      assert.equal((await view(disabled.keyId)).enabled, true);

      const expired = await w.createKey({ apiId, expires: Date.now() - 60_000 });
      const future = Date.now() + 3_600_000;
      await update({ keyId: expired.keyId, expires: future });
      const e1 = await view(expired.keyId);
      assert.equal(e1.expires, future);
      assert.ok(e1.expires > Date.now() && e1.enabled);
      await update({ keyId: expired.keyId, expires: Date.now() - 1 });
      assert.ok((await view(expired.keyId)).expires < Date.now(), 'expiring a key again is allowed');
      await update({ keyId: expired.keyId, expires: null });
      assert.equal((await view(expired.keyId)).expires, undefined);

      const usedUp = await w.createKey({ apiId, remaining: 1 });
      await update({ keyId: usedUp.keyId, remaining: 0 });
      assert.equal((await view(usedUp.keyId)).remaining, 0);
      await update({ keyId: usedUp.keyId, remaining: 5 });
      const u = await view(usedUp.keyId);
      assert.equal(u.remaining, 5);
      assert.equal(u.enabled, true);

      // The enabled flag changes only when `enabled` is given: credits do not re-enable a key disabled on purpose.
      const both = await w.createKey({ apiId, enabled: false, remaining: 1, expires: Date.now() - 1000 });
      await update({ keyId: both.keyId, remaining: 9 });
      assert.equal((await view(both.keyId)).enabled, false);
      await update({ keyId: both.keyId, enabled: true, expires: null });
      const b = await view(both.keyId);
      assert.deepEqual([b.enabled, b.expires, b.remaining], [true, undefined, 9]);
    });

    test('identity: externalId links (creating it once), ownerId is its alias, externalId wins, null unlinks', async () => {
      const { keyId } = await w.createKey({ apiId });
      const before = await snapshot(w, TABLES);
      await update({ keyId, externalId: 'user_link' });
      const identity = await w.store.db
        .selectFrom('identities')
        .selectAll()
        .where('external_id', '=', 'user_link')
        .executeTakeFirstOrThrow();
      assert.equal(identity.workspace_id, w.workspaceId);
      assert.equal((await snapshot(w, TABLES)).identities, before.identities + 1);
      let got = await view(keyId);
      assert.deepEqual(
        [got.externalId, got.ownerId, got.identity],
        ['user_link', 'user_link', { id: identity.id, externalId: 'user_link', meta: {} }],
      );

      // Another key linking the same externalId reuses the identity.
      const other = await w.createKey({ apiId });
      await update({ keyId: other.keyId, ownerId: 'user_link' });
      assert.equal((await keyRow(w, other.keyId)).identity_id, identity.id);
      assert.equal((await snapshot(w, TABLES)).identities, before.identities + 1);

      // Both given: externalId wins, the ownerId creates nothing.
      await update({ keyId, ownerId: 'user_loser', externalId: 'user_winner' });
      got = await view(keyId);
      assert.equal(got.externalId, 'user_winner');
      assert.equal((await w.store.db.selectFrom('identities').select('id').where('external_id', '=', 'user_loser').execute()).length, 0);
      // externalId null wins over an ownerId string: unlinked.
      await update({ keyId, ownerId: 'user_loser', externalId: null });
      got = await view(keyId);
      assert.equal(got.identity, undefined);
      assert.equal((await keyRow(w, keyId)).identity_id, null);
      assert.equal((await w.store.db.selectFrom('identities').select('id').where('external_id', '=', 'user_loser').execute()).length, 0);
      // ownerId alone links and unlinks.
      await update({ keyId, ownerId: 'user_owner' });
      assert.equal((await view(keyId)).ownerId, 'user_owner');
      await update({ keyId, ownerId: null });
      assert.equal((await view(keyId)).ownerId, undefined);
      // Absent: the link stays.
      await update({ keyId, externalId: 'user_keep' });
      await update({ keyId, name: 'n' });
      assert.equal((await view(keyId)).externalId, 'user_keep');
    });

    test('ratelimit: inserted when absent, replaced in place when present, deleted with null', async () => {
      const { keyId } = await w.createKey({ apiId });
      await update({ keyId, ratelimit: { limit: 10, refillRate: 5, refillInterval: 1000 } });
      let rows = await w.store.db.selectFrom('ratelimits').selectAll().where('key_id', '=', keyId).execute();
      assert.equal(rows.length, 1);
      assert.deepEqual(
        [rows[0].name, rows[0].limit, rows[0].duration, rows[0].type, rows[0].auto_apply, rows[0].identity_id, rows[0].workspace_id],
        ['default', 10, 1000, 'consistent', 1, null, w.workspaceId],
      );
      const id = rows[0].id;
      await update({ keyId, ratelimit: { async: true, limit: 3, duration: 5000 } });
      rows = await w.store.db.selectFrom('ratelimits').selectAll().where('key_id', '=', keyId).execute();
      assert.equal(rows.length, 1);
      assert.equal(rows[0].id, id, 'the default limit is updated in place');
      assert.deepEqual((await view(keyId)).ratelimit, {
        async: true,
        type: 'fast',
        limit: 3,
        duration: 5000,
        refillRate: 3,
        refillInterval: 5000,
      });
      // The object replaces the limit as a whole: without type it is consistent again.
      await update({ keyId, ratelimit: { limit: 4, duration: 2000 } });
      assert.deepEqual((await view(keyId)).ratelimit, {
        async: false,
        type: 'consistent',
        limit: 4,
        duration: 2000,
        refillRate: 4,
        refillInterval: 2000,
      });
      await update({ keyId, ratelimit: null });
      assert.equal((await view(keyId)).ratelimit, undefined);
      assert.equal((await w.store.db.selectFrom('ratelimits').select('id').where('key_id', '=', keyId).execute()).length, 0);
      await update({ keyId, ratelimit: null });
      assert.equal((await view(keyId)).ratelimit, undefined, 'clearing an absent limit is a no-op');
    });

    test('refill: set with remaining, daily stays daily, monthly defaults to day 1, null clears the schedule', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 4 });
      const t0 = Date.now();
      await update({ keyId, refill: { interval: 'daily', amount: 10 } });
      let got = await view(keyId);
      assert.deepEqual({ ...got.refill, lastRefillAt: 0 }, { interval: 'daily', amount: 10, lastRefillAt: 0 });
      assert.ok(got.refill.lastRefillAt >= t0);
      let row = await keyRow(w, keyId);
      assert.deepEqual([row.refill_interval, row.refill_amount, row.refill_day, row.remaining], ['daily', 10, null, 4]);

      await update({ keyId, refill: { interval: 'monthly', amount: 12 } });
      row = await keyRow(w, keyId);
      assert.deepEqual([row.refill_interval, row.refill_amount, row.refill_day], ['monthly', 12, 1]);
      got = await view(keyId);
      assert.deepEqual({ ...got.refill, lastRefillAt: 0 }, { interval: 'monthly', amount: 12, refillDay: 1, lastRefillAt: 0 });

      // Back to daily: the day goes away.
      await update({ keyId, refill: { interval: 'daily', amount: 2 } });
      row = await keyRow(w, keyId);
      assert.deepEqual([row.refill_interval, row.refill_day], ['daily', null]);

      await update({ keyId, refill: null });
      row = await keyRow(w, keyId);
      assert.deepEqual(
        [row.refill_interval, row.refill_amount, row.refill_day, row.last_refill_at, row.remaining],
        [null, null, null, null, 4],
      );
      assert.equal((await view(keyId)).refill, undefined);

      // A key without remaining gets a refill when the same request sets remaining.
      const unlimited = await w.createKey({ apiId });
      await update({ keyId: unlimited.keyId, remaining: 0, refill: { interval: 'monthly', amount: 5, refillDay: 31 } });
      got = await view(unlimited.keyId);
      assert.deepEqual([got.remaining, got.refill.amount, got.refill.refillDay], [0, 5, 31]);
      // Removing both at once is fine.
      await update({ keyId: unlimited.keyId, remaining: null, refill: null });
      got = await view(unlimited.keyId);
      assert.deepEqual([got.remaining, got.refill], [undefined, undefined]);
    });

    test('refill needs remaining: a refill on a key without it, or clearing remaining under a refill → 400, nothing changed', async () => {
      const unlimited = await w.createKey({ apiId, name: 'unl' });
      let before = await state(unlimited.keyId);
      const noRemaining = await w.post('/v1/keys.updateKey', {
        keyId: unlimited.keyId,
        name: 'changed',
        refill: { interval: 'daily', amount: 1 },
      });
      assert.equal(noRemaining.status, 400, noRemaining.body);
      assert.equal(noRemaining.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
      assert.deepEqual(paths(noRemaining), ['/refill']);
      assert.deepEqual(await state(unlimited.keyId), before);

      const refilled = await w.createKey({ apiId, remaining: 3, refill: { interval: 'daily', amount: 3 } });
      before = await state(refilled.keyId);
      const cleared = await w.post('/v1/keys.updateKey', { keyId: refilled.keyId, name: 'changed', remaining: null });
      assert.equal(cleared.status, 400, cleared.body);
      assert.deepEqual(paths(cleared), ['/remaining']);
      const both = await w.post('/v1/keys.updateKey', { keyId: refilled.keyId, remaining: null, refill: { interval: 'daily', amount: 1 } });
      assert.equal(both.status, 400, both.body);
      assert.deepEqual(paths(both), ['/refill']);
      assert.deepEqual(await state(refilled.keyId), before);
    });

    test('roles and permissions are replaced exactly as keys.setRoles / setPermissions do, audited per link', async () => {
      const admin = await createRole(w, 'upd-admin');
      const readPerm = await createPermission(w, 'upd.read');
      const { keyId } = await w.createKey({ apiId, roles: ['upd-admin', 'upd-viewer'], permissions: ['upd.read', 'upd.old'] });
      const res = await update({
        keyId,
        name: 'with-links',
        roles: [{ id: admin }, { name: 'upd-billing', create: true }, { name: 'upd-admin' }],
        permissions: [{ id: readPerm }, { slug: 'upd.new', create: true }, { name: 'upd.alias', create: true }],
      });
      const got = await view(keyId);
      assert.deepEqual(got.roles, ['upd-admin', 'upd-billing']);
      assert.deepEqual(await directPermissions(w, keyId), ['upd.alias', 'upd.new', 'upd.read']);
      assert.equal(got.name, 'with-links');
      const events = (
        await w.store.db
          .selectFrom('audit_logs')
          .select(['event', 'diff'])
          .where('target_id', '=', keyId)
          .where('event', 'like', 'authorization.%')
          .where('request_id', '=', String(res.headers['x-request-id']))
          .execute()
      ).map((e) => `${e.event}:${JSON.parse(e.diff!).role ?? JSON.parse(e.diff!).permission}`);
      for (const e of [
        'authorization.disconnect_role_and_key:upd-viewer',
        'authorization.connect_role_and_key:upd-billing',
        'authorization.disconnect_permission_and_key:upd.old',
        'authorization.connect_permission_and_key:upd.new',
      ]) {
        assert.ok(events.includes(e), `${e} missing from ${events.join()}`);
      }
      assert.ok(!events.includes('authorization.connect_role_and_key:upd-admin'), 'a kept role is not reconnected');
      // An empty list removes them all; absent leaves them.
      await update({ keyId, roles: [] });
      assert.deepEqual((await view(keyId)).roles, []);
      assert.deepEqual(await directPermissions(w, keyId), ['upd.alias', 'upd.new', 'upd.read']);
      await update({ keyId, permissions: [] });
      assert.deepEqual(await directPermissions(w, keyId), []);
    });

    test('rbac rights: roles need add_role_to_key, permissions add+remove_permission_from_key, creating the create right', async () => {
      await createRole(w, 'rights-role');
      await createPermission(w, 'rights.perm');
      const { keyId } = await w.createKey({ apiId });
      const updateOnly = await w.rootKey([`api.${apiId}.update_key`]);
      const cases: Array<[string, Record<string, unknown>, string[]]> = [
        [updateOnly, { roles: [{ name: 'rights-role' }] }, ['rbac.*.add_role_to_key']],
        [updateOnly, { permissions: [{ slug: 'rights.perm' }] }, ['rbac.*.add_permission_to_key', 'rbac.*.remove_permission_from_key']],
        [
          updateOnly,
          { roles: [], permissions: [] },
          ['rbac.*.add_role_to_key', 'rbac.*.add_permission_to_key', 'rbac.*.remove_permission_from_key'],
        ],
        [
          await w.rootKey(['api.*.update_key', 'rbac.*.add_role_to_key']),
          { roles: [{ name: 'brand-new-role', create: true }] },
          ['rbac.*.create_role'],
        ],
        [
          await w.rootKey(['api.*.update_key', 'rbac.*.add_permission_to_key', 'rbac.*.remove_permission_from_key']),
          { permissions: [{ slug: 'brand.new', create: true }] },
          ['rbac.*.create_permission'],
        ],
        [await w.rootKey(['rbac.*.add_role_to_key']), { roles: [{ name: 'rights-role' }] }, [`api.${apiId}.update_key`]],
      ];
      const before = await state(keyId);
      for (const [key, extra, named] of cases) {
        const res = await w.post(
          '/v1/keys.updateKey',
          { keyId, name: 'denied', externalId: 'user_denied', ratelimit: { limit: 1, duration: 1000 }, ...extra },
          key,
        );
        assert.equal(res.status, 403, res.body);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        for (const p of named) assert.ok(res.json.error.detail.includes(p), `${res.json.error.detail} should name ${p}`);
        assert.deepEqual(await state(keyId), before, JSON.stringify(extra));
      }
      const granted = await w.rootKey([`api.${apiId}.update_key`, 'rbac.*.add_role_to_key', 'rbac.*.create_role']);
      await update({ keyId, roles: [{ name: 'rights-role' }, { name: 'granted-new', create: true }] }, granted);
      assert.deepEqual((await view(keyId)).roles, ['granted-new', 'rights-role']);
    });

    test('atomic: a failing role or permission reference changes nothing at all', async () => {
      const { keyId } = await fullKey();
      const before = await state(keyId);
      const res = await w.post('/v1/keys.updateKey', {
        keyId,
        name: 'never',
        externalId: 'user_never',
        meta: { never: true },
        remaining: 1,
        enabled: false,
        ratelimit: null,
        refill: null,
        roles: [{ name: 'never-role', create: true }],
        permissions: [{ id: 'perm_doesnotexist' }],
      });
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/permission-not-found');
      assert.match(res.json.error.detail, /perm_doesnotexist/);
      assert.deepEqual(await state(keyId), before);
      assert.equal((await w.store.db.selectFrom('roles').select('id').where('name', '=', 'never-role').execute()).length, 0);
      const unknownRole = await w.post('/v1/keys.updateKey', { keyId, name: 'never', roles: [{ name: 'ghost-role' }] });
      assert.equal(unknownRole.status, 404, unknownRole.body);
      assert.equal(unknownRole.json.error.type, 'https://keyhold.dev/errors/data/role-not-found');
      assert.deepEqual(await state(keyId), before);
    });

    test('audit: one key.update with {from, to} of each provided attribute, by the root key, in the request', async () => {
      const { keyId, key } = await fullKey();
      const updater = await w.rootKey(['api.*.update_key']);
      const res = await update(
        { keyId, name: 'audited', remaining: 2, ratelimit: null, externalId: 'user_audit', enabled: false, expires: null },
        updater,
      );
      const rows = await w.store.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('target_id', '=', keyId)
        .where('event', '=', 'key.update')
        .execute();
      assert.equal(rows.length, 1);
      const a = rows[0];
      assert.equal(a.request_id, res.headers['x-request-id']);
      assert.equal(a.actor_type, 'root_key');
      assert.equal(a.actor_id, await rootKeyId(w, updater));
      assert.equal(a.workspace_id, w.workspaceId);
      assert.equal(a.target_type, 'key');
      const diff = JSON.parse(a.diff!);
      assert.deepEqual(Object.keys(diff).sort(), ['enabled', 'expires', 'externalId', 'name', 'ratelimit', 'remaining']);
      assert.deepEqual(diff.name, { from: 'before', to: 'audited' });
      assert.deepEqual(diff.remaining, { from: 10, to: 2 });
      assert.deepEqual(diff.ratelimit, { from: { type: 'fast', limit: 5, duration: 1000 }, to: null });
      assert.deepEqual(diff.externalId, { from: 'user_before', to: 'user_audit' });
      assert.deepEqual(diff.enabled, { from: true, to: false });
      assert.equal(diff.expires.to, null);
      assert.ok(
        !JSON.stringify(await w.store.db.selectFrom('audit_logs').selectAll().execute()).includes(key),
        'no plaintext key in audit',
      );
    });

    test('a change_feed entry for the key is committed with the update (and none for a refused one)', async () => {
      const { keyId } = await w.createKey({ apiId });
      const feed = () => w.store.db.selectFrom('change_feed').selectAll().where('kind', '=', 'key').where('ref', '=', keyId).execute();
      const before = (await feed()).length;
      await update({ keyId, enabled: false });
      assert.equal((await feed()).length, before + 1);
      const refused = await w.post('/v1/keys.updateKey', { keyId, roles: [{ id: 'role_nope' }] });
      assert.equal(refused.status, 404, refused.body);
      assert.equal((await feed()).length, before + 1);
    });

    test('unknown key, deleted key, key of a deleted api → 404 data/key-not-found', async () => {
      const deleted = await w.createKey({ apiId });
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: deleted.keyId })).status, 200);
      const goneApi = await w.createApi('gone-api');
      const orphan = await w.createKey({ apiId: goneApi });
      assert.equal((await w.post('/v1/apis.deleteApi', { apiId: goneApi })).status, 200);
      const before = await snapshot(w, TABLES);
      for (const keyId of ['key_1111111111111111111111', deleted.keyId, orphan.keyId]) {
        const res = await w.post('/v1/keys.updateKey', { keyId, name: 'x', externalId: 'user_404' });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        assert.ok(res.json.error.detail.includes(keyId));
      }
      assert.deepEqual(await snapshot(w, TABLES), before);
    });

    test('an api-specific update_key is enough; one for another api → 403 naming this api', async () => {
      const { keyId } = await w.createKey({ apiId });
      const otherApi = await w.createApi('other-upd');
      const ok = await w.post('/v1/keys.updateKey', { keyId, name: 'specific' }, await w.rootKey([`api.${apiId}.update_key`]));
      assert.equal(ok.status, 200, ok.body);
      const denied = await w.post(
        '/v1/keys.updateKey',
        { keyId, name: 'nope' },
        await w.rootKey([`api.${otherApi}.update_key`, `api.${apiId}.read_key`]),
      );
      assert.equal(denied.status, 403, denied.body);
      assert.ok(denied.json.error.detail.includes(`api.${apiId}.update_key`), denied.json.error.detail);
      assert.equal((await view(keyId)).name, 'specific');
    });

    test('invalid bodies → 400 naming each bad member; nothing written', async () => {
      const { keyId } = await w.createKey({ apiId, remaining: 5 });
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{}, ['/keyId']],
        [{ keyId: '' }, ['/keyId']],
        [{ keyId, name: 5 }, ['/name']],
        [{ keyId, name: 'n'.repeat(257) }, ['/name']],
        [{ keyId, externalId: '' }, ['/externalId']],
        [{ keyId, ownerId: 7 }, ['/ownerId']],
        [{ keyId, meta: 'text' }, ['/meta']],
        [{ keyId, meta: [1] }, ['/meta']],
        [{ keyId, meta: { big: 'x'.repeat(64 * 1024) } }, ['/meta']],
        [{ keyId, expires: 'soon' }, ['/expires']],
        [{ keyId, expires: -1 }, ['/expires']],
        [{ keyId, remaining: -1 }, ['/remaining']],
        [{ keyId, remaining: 1.5 }, ['/remaining']],
        [{ keyId, enabled: null }, ['/enabled']],
        [{ keyId, enabled: 'yes' }, ['/enabled']],
        [{ keyId, environment: 'e'.repeat(257) }, ['/environment']],
        [{ keyId, refill: { interval: 'weekly', amount: 1 } }, ['/refill/interval']],
        [{ keyId, refill: { interval: 'monthly', amount: 0 } }, ['/refill/amount']],
        [{ keyId, refill: { interval: 'monthly', amount: 1, refillDay: 32 } }, ['/refill/refillDay']],
        [{ keyId, refill: { interval: 'daily', amount: 1, refillDay: 3 } }, ['/refill/refillDay']],
        [{ keyId, refill: { interval: 'daily', amount: 1 }, remaining: null }, ['/refill']],
        [{ keyId, ratelimit: { limit: 10 } }, ['/ratelimit/duration']],
        [{ keyId, ratelimit: { limit: 0, duration: 1000 } }, ['/ratelimit/limit']],
        [{ keyId, ratelimit: { limit: 1, duration: 999 } }, ['/ratelimit/duration']],
        [{ keyId, ratelimit: { limit: 1, duration: 1000, type: 'x' } }, ['/ratelimit/type']],
        [{ keyId, ratelimit: 'none' }, ['/ratelimit']],
        [{ keyId, roles: [{ create: true }] }, ['/roles/0']],
        [{ keyId, roles: [{ name: '' }] }, ['/roles/0/name']],
        [{ keyId, roles: 'admin' }, ['/roles']],
        [{ keyId, roles: null }, ['/roles']],
        [{ keyId, permissions: [{ slug: 'ok' }, { create: true }] }, ['/permissions/1']],
        [{ keyId, permissions: Array.from({ length: 1001 }, (_, i) => ({ slug: `p${i}` })) }, ['/permissions']],
      ];
      const before = await state(keyId);
      for (const [body, expected] of cases) {
        const res = await w.post('/v1/keys.updateKey', body);
        const what = `${JSON.stringify(body).slice(0, 200)}: ${res.body.slice(0, 500)}`;
        assert.equal(res.status, 400, what);
        assert.equal(res.json.error.code, 'BAD_REQUEST');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
        assert.deepEqual(paths(res), expected, what);
        assert.equal(res.json.error.errors.length, expected.length, `one entry per problem: ${what}`);
      }
      assert.deepEqual(await state(keyId), before);
    });

    test('several problems, schema and cross-field, are all listed at once', async () => {
      const { keyId } = await w.createKey({ apiId });
      const res = await w.post('/v1/keys.updateKey', {
        keyId,
        name: 5,
        enabled: 'no',
        remaining: null,
        refill: { interval: 'daily', amount: 1, refillDay: 2 },
        ratelimit: { limit: 1 },
        meta: { big: 'x'.repeat(70_000) },
        roles: [{ create: true }],
        permissions: [{}],
      });
      assert.equal(res.status, 400, res.body.slice(0, 500));
      assert.deepEqual(paths(res), [
        '/enabled',
        '/meta',
        '/name',
        '/permissions/0',
        '/ratelimit/duration',
        '/refill',
        '/refill/refillDay',
        '/roles/0',
      ]);
    });

    test('authentication comes before validation and lookup: a bad body or unknown key without a valid root key → 401', async () => {
      for (const key of [null, 'kh_root_1111111111111111111111111']) {
        assert.equal((await w.post('/v1/keys.updateKey', { keyId: '', name: 5 }, key)).status, 401);
        assert.equal((await w.post('/v1/keys.updateKey', { keyId: 'key_1111111111111111111111' }, key)).status, 401);
      }
    });

    test("concurrent updates of one key each apply whole: the result is one caller's set of attributes", async () => {
      for (let round = 0; round < 5; round++) {
        const { keyId } = await w.createKey({ apiId });
        const [a, b] = await Promise.all([
          w.post('/v1/keys.updateKey', { keyId, name: 'a', environment: 'a', roles: [{ name: 'conc-a', create: true }] }),
          w.post('/v1/keys.updateKey', { keyId, name: 'b', environment: 'b', roles: [{ name: 'conc-b', create: true }] }),
        ]);
        assert.equal(a.status, 200, a.body);
        assert.equal(b.status, 200, b.body);
        const got = await view(keyId);
        assert.ok(got.name === got.environment && JSON.stringify(got.roles) === `["conc-${got.name}"]`, JSON.stringify(got));
      }
    });

    securityTests(() => w, {
      get permission() {
        return `api.${apiId}.update_key`;
      },
      request: async () => ({
        method: 'POST',
        path: '/v1/keys.updateKey',
        body: { keyId: (await w.createKey({ apiId })).keyId, name: 'sec' },
      }),
      foreign: async (_w, other) => {
        const otherApi = await w.createApi('foreign-upd', other.root);
        const { keyId } = await w.createKey({ apiId: otherApi }, other.root);
        return { method: 'POST', path: '/v1/keys.updateKey', body: { keyId, name: 'hijack' } };
      },
    });
  });
}
