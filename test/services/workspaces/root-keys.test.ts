import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore, OPERATOR } from '../../helpers/harness.ts';
import { count } from '../../helpers/rows.ts';
import { expectKind } from '../../helpers/errors.ts';
import type { Store } from '../../../src/store/store.ts';
import { generateRootKey, hashKey } from '../../../src/crypto/keys.ts';
import { authenticateRootKey, insertRootKey } from '../../../src/services/workspaces/root-keys.ts';
import { revokeRootKey } from '../../../src/services/workspaces/root-key-changes.ts';
import { createWorkspace } from '../../../src/services/workspaces/workspaces.ts';

for (const dialect of DIALECTS) {
  describe(`root-key authentication (${dialect})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let workspaceId: string;
    before(async () => {
      ({ store, close } = await freshStore(dialect));
      ({ workspaceId } = await createWorkspace(store.db, 'auth', OPERATOR));
    });
    after(() => close());

    const newKey = async (permissions: string[], opts: { workspaceId?: string; expiresAt?: number } = {}) =>
      insertRootKey(store.db, { workspaceId: opts.workspaceId ?? workspaceId, permissions, expiresAt: opts.expiresAt }, OPERATOR);

    test('a valid key yields the caller: workspace, root key id, permission set, request id', async () => {
      const { rootKey, rootKeyId } = await newKey(['api.*.read_key', 'rbac.*.create_role']);
      const caller = await authenticateRootKey(store.db, `Bearer ${rootKey}`, 'req_1');
      assert.equal(caller.workspaceId, workspaceId);
      assert.equal(caller.rootKeyId, rootKeyId);
      assert.equal(caller.requestId, 'req_1');
      assert.deepEqual([...caller.permissions].sort(), ['api.*.read_key', 'rbac.*.create_role']);
    });

    test('missing header → auth/missing', async () => {
      for (const header of [undefined, '', '   ']) {
        const err = await expectKind(authenticateRootKey(store.db, header, 'req_x'), 'auth/missing');
        assert.equal(err.status, 401);
      }
    });

    test('not "Bearer kh_root_…" → auth/malformed', async () => {
      const { rootKey } = await newKey(['*']);
      for (const header of [
        'Basic x',
        `Basic ${rootKey}`,
        'Bearer',
        'Bearer garbage',
        'Bearer not-a-root-key',
        `Bearer ${rootKey.slice(8)}`,
        `Bearer ${rootKey} extra`,
        `Token ${rootKey}`,
        'Bearer kh_root_0OIl0OIl0OIl0OIl0OIl0OIl0OIl',
      ]) {
        const err = await expectKind(authenticateRootKey(store.db, header, 'req_x'), 'auth/malformed');
        assert.equal(err.status, 401);
      }
    });

    test('well formed but unknown → auth/invalid', async () => {
      const err = await expectKind(authenticateRootKey(store.db, `Bearer ${generateRootKey()}`, 'req_x'), 'auth/invalid');
      assert.equal(err.status, 401);
    });

    test('revoked → auth/revoked', async () => {
      const { rootKey, rootKeyId } = await newKey(['*']);
      await authenticateRootKey(store.db, `Bearer ${rootKey}`, 'req_x');
      await revokeRootKey(store.db, rootKeyId, OPERATOR);
      const err = await expectKind(authenticateRootKey(store.db, `Bearer ${rootKey}`, 'req_x'), 'auth/revoked');
      assert.equal(err.status, 401);
    });

    test('expired → auth/expired; valid until its expiry', async () => {
      const past = await newKey(['*'], { expiresAt: Date.now() - 1 });
      const err = await expectKind(authenticateRootKey(store.db, `Bearer ${past.rootKey}`, 'req_x'), 'auth/expired');
      assert.equal(err.status, 401);
      const expiresAt = Date.now() + 60_000;
      const future = await newKey(['*'], { expiresAt });
      assert.equal((await authenticateRootKey(store.db, `Bearer ${future.rootKey}`, 'req_x', expiresAt - 1)).rootKeyId, future.rootKeyId);
      await expectKind(authenticateRootKey(store.db, `Bearer ${future.rootKey}`, 'req_x', expiresAt), 'auth/expired');
    });

    test('a key of a soft-deleted workspace → auth/invalid', async () => {
      const other = await createWorkspace(store.db, 'doomed', OPERATOR);
      const { rootKey } = await newKey(['*'], { workspaceId: other.workspaceId });
      assert.equal((await authenticateRootKey(store.db, `Bearer ${rootKey}`, 'req_x')).workspaceId, other.workspaceId);
      await store.db.updateTable('workspaces').set({ deleted_at: Date.now() }).where('id', '=', other.workspaceId).execute();
      await expectKind(authenticateRootKey(store.db, `Bearer ${rootKey}`, 'req_x'), 'auth/invalid');
    });

    test('insertRootKey rejects invalid permissions, listing each with its path, and writes nothing', async () => {
      const before = { keys: await count(store.db, 'root_keys'), audit: await count(store.db, 'audit_logs') };
      const err = await expectKind(newKey(['api.*.read_key', 'vault.*.read', 'api.*.fly', 'api.read_key', '']), 'request/invalid-body');
      assert.equal(err.status, 400);
      assert.deepEqual(
        err.errors?.map((e) => e.path),
        ['/permissions/1', '/permissions/2', '/permissions/3', '/permissions/4'],
      );
      for (const e of err.errors!) assert.ok(e.message.length > 0);
      const empty = await expectKind(newKey([]), 'request/invalid-body');
      assert.deepEqual(
        empty.errors?.map((e) => e.path),
        ['/permissions'],
      );
      assert.deepEqual({ keys: await count(store.db, 'root_keys'), audit: await count(store.db, 'audit_logs') }, before);
    });

    test('insertRootKey writes the key and its audit record atomically, even outside a transaction', async () => {
      const own = await freshStore(dialect);
      try {
        const ws = await createWorkspace(own.store.db, 'atomic', OPERATOR);
        // Make the audit insert fail after the root key insert has run.
        await own.store.db.schema.alterTable('audit_logs').renameTo('audit_logs_away').execute();
        await assert.rejects(insertRootKey(own.store.db, { workspaceId: ws.workspaceId, permissions: ['*'] }, OPERATOR));
        assert.equal(await count(own.store.db, 'root_keys'), 0);
      } finally {
        await own.close();
      }
    });

    test('a root key is stored only as its hash: the plaintext is in no column of root_keys or audit_logs', async () => {
      const { rootKey, rootKeyId } = await newKey(['*']);
      const secret = rootKey.slice('kh_root_'.length);
      const row = await store.db.selectFrom('root_keys').selectAll().where('id', '=', rootKeyId).executeTakeFirstOrThrow();
      assert.equal(row.hash, hashKey(rootKey));
      assert.equal(row.start, rootKey.slice(0, 12));
      const rows = [
        ...(await store.db.selectFrom('root_keys').selectAll().execute()),
        ...(await store.db.selectFrom('audit_logs').selectAll().execute()),
      ];
      assert.ok(
        rows.some((r) => Object.values(r).includes(rootKeyId)),
        'the key and its audit record were read',
      );
      for (const r of rows) {
        for (const [column, value] of Object.entries(r)) {
          assert.ok(!String(value).includes(secret), `plaintext found in column ${column}`);
        }
      }
    });
  });
}
