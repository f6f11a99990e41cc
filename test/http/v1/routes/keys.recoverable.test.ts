import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../../helpers/harness.ts';
import type { Loose } from '../../../helpers/json.ts';
import { snapshot } from '../../../helpers/rows.ts';
import { buildApp } from '../../../../src/app.ts';
import type { App } from '../../../../src/http/types.ts';

/** Recoverable keys (SPEC §4, §7): created encrypted with encrypt_key, read back with decrypt_key. */

const TABLES = [
  'keys',
  'identities',
  'roles',
  'permissions',
  'keys_roles',
  'keys_permissions',
  'ratelimits',
  'data_keys',
  'encrypted_keys',
  'audit_logs',
] as const;
/** An apis.listKeys page, with the members these tests compute with. */
type Page = Loose<{ keys: Array<Loose<{ id: string; plaintext?: string }>>; cursor?: string }>;
const encryptedRow = (w: World, keyId: string) =>
  w.store.db.selectFrom('encrypted_keys').selectAll().where('key_id', '=', keyId).executeTakeFirst();

for (const dialect of DIALECTS) {
  describe(`recoverable keys (${dialect})`, () => {
    let w: World;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('recoverable-api');
    });
    after(() => w.close());

    test('a recoverable key is stored encrypted in the same workspace; the ciphertext never holds the key', async () => {
      const { key, keyId } = await w.createKey({ apiId, prefix: 'rec', recoverable: true, name: 'r1' });
      const enc = await encryptedRow(w, keyId);
      assert.ok(enc, 'encrypted_keys row');
      assert.equal(enc.workspace_id, w.workspaceId);
      const dataKey = await w.store.db.selectFrom('data_keys').selectAll().where('id', '=', enc.data_key_id).executeTakeFirstOrThrow();
      assert.equal(dataKey.workspace_id, w.workspaceId);
      assert.equal(dataKey.master_key_id, 'test');
      const raw = Buffer.from(enc.ciphertext, 'base64');
      assert.equal(raw.length, 12 + Buffer.byteLength(key) + 16, 'nonce | ciphertext | tag');
      for (const needle of [key, key.slice('rec_'.length), Buffer.from(key).toString('base64'), Buffer.from(key).toString('hex')]) {
        assert.ok(!enc.ciphertext.includes(needle));
        assert.ok(!raw.includes(Buffer.from(needle)));
      }
      // Audit records say the key is recoverable, and hold no secret.
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', keyId).execute();
      const created = audit.find((a) => a.event === 'key.create');
      assert.equal(JSON.parse(created!.diff!).recoverable, true);
      const everything = JSON.stringify(await w.store.db.selectFrom('audit_logs').selectAll().execute());
      assert.ok(!everything.includes(key));
      assert.ok(!everything.includes(enc.ciphertext));
    });

    test('keys.getKey?decrypt=true returns the exact key as plaintext; without decrypt there is none', async () => {
      const { key, keyId } = await w.createKey({ apiId, prefix: 'rec', recoverable: true, byteLength: 64 });
      const res = await w.get('/v1/keys.getKey', { keyId, decrypt: true });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.plaintext, key);
      assert.equal(res.json.id, keyId);
      const narrow = await w.get(
        '/v1/keys.getKey',
        { keyId, decrypt: true },
        await w.rootKey([`api.${apiId}.read_key`, `api.${apiId}.decrypt_key`]),
      );
      assert.equal(narrow.status, 200, narrow.body);
      assert.equal(narrow.json.plaintext, key);
      for (const query of [{ keyId }, { keyId, decrypt: false }] as Array<Record<string, string | boolean>>) {
        const plain = await w.get('/v1/keys.getKey', query);
        assert.equal(plain.status, 200, plain.body);
        assert.equal(plain.json.plaintext, undefined);
        assert.ok(!plain.body.includes(key));
      }
    });

    test('apis.listKeys?decrypt=true returns plaintext for the recoverable keys only, on every page', async () => {
      const api = await w.createApi('list-decrypt');
      const created: Array<{ keyId: string; key: string; recoverable: boolean }> = [];
      for (let i = 0; i < 5; i++) {
        const recoverable = i % 2 === 0;
        created.push({ ...(await w.createKey({ apiId: api, recoverable })), recoverable });
      }
      const seen = new Map<string, string | undefined>();
      let cursor: string | undefined;
      do {
        const res = await w.get<Page>(
          '/v1/apis.listKeys',
          { apiId: api, decrypt: true, limit: 2, ...(cursor ? { cursor } : {}) },
          await w.rootKey([`api.${api}.read_api`, `api.${api}.read_key`, `api.${api}.decrypt_key`]),
        );
        assert.equal(res.status, 200, res.body);
        for (const k of res.json.keys) seen.set(k.id, k.plaintext);
        cursor = res.json.cursor;
      } while (cursor);
      assert.equal(seen.size, 5);
      for (const c of created) {
        if (c.recoverable) assert.equal(seen.get(c.keyId), c.key);
        else assert.equal(seen.get(c.keyId), undefined);
      }
      const plain = await w.get<Page>('/v1/apis.listKeys', { apiId: api });
      assert.equal(plain.status, 200, plain.body);
      assert.ok(plain.json.keys.every((k: Record<string, unknown>) => !('plaintext' in k)));
    });

    test('without decrypt_key → 403 naming it, and no plaintext', async () => {
      const { key, keyId } = await w.createKey({ apiId, recoverable: true });
      const reader = await w.rootKey([`api.${apiId}.read_key`, `api.${apiId}.read_api`, 'api.*.encrypt_key']);
      for (const res of [
        await w.get('/v1/keys.getKey', { keyId, decrypt: true }, reader),
        await w.get('/v1/apis.listKeys', { apiId, decrypt: true }, reader),
      ]) {
        assert.equal(res.status, 403, res.body);
        assert.equal(res.json.error.code, 'INSUFFICIENT_PERMISSIONS');
        assert.ok(res.json.error.detail.includes(`api.${apiId}.decrypt_key`), res.json.error.detail);
        assert.ok(!res.body.includes(key));
      }
      // decrypt_key for another api does not do.
      const otherApi = await w.createApi('other-decrypt');
      const wrong = await w.get(
        '/v1/keys.getKey',
        { keyId, decrypt: true },
        await w.rootKey([`api.${apiId}.read_key`, `api.${otherApi}.decrypt_key`]),
      );
      assert.equal(wrong.status, 403, wrong.body);
    });

    test('without encrypt_key → 403 and nothing written (no key, no data key, no ciphertext)', async () => {
      const other = await w.otherWorkspace();
      const otherApi = await w.createApi('fresh', other.root);
      const noEncrypt = await w.rootKey([`api.${otherApi}.create_key`, 'rbac.*.create_role'], { workspaceId: other.workspaceId });
      const noCreateRole = await w.rootKey([`api.${otherApi}.create_key`, `api.${otherApi}.encrypt_key`], {
        workspaceId: other.workspaceId,
      });
      const before = await snapshot(w, TABLES);
      const res = await w.post('/v1/keys.createKey', { apiId: otherApi, recoverable: true, roles: ['r'] }, noEncrypt);
      assert.equal(res.status, 403, res.body);
      assert.ok(res.json.error.detail.includes(`api.${otherApi}.encrypt_key`), res.json.error.detail);
      // Refused inside the transaction (a role it may not create): nothing either.
      const noRole = await w.post('/v1/keys.createKey', { apiId: otherApi, recoverable: true, roles: ['missing-role'] }, noCreateRole);
      assert.equal(noRole.status, 403, noRole.body);
      assert.deepEqual(await snapshot(w, TABLES), before);
      const none = await w.store.db.selectFrom('data_keys').select('id').where('workspace_id', '=', other.workspaceId).execute();
      assert.equal(none.length, 0);
      // The first success creates exactly one data key for that workspace.
      const ok = await w.post('/v1/keys.createKey', { apiId: otherApi, recoverable: true }, other.root);
      assert.equal(ok.status, 200, ok.body);
      const dks = await w.store.db.selectFrom('data_keys').select('id').where('workspace_id', '=', other.workspaceId).execute();
      assert.equal(dks.length, 1);
    });

    test('workspaces have different data keys, and a ciphertext moved to another workspace does not decrypt', async () => {
      const other = await w.otherWorkspace();
      const otherApi = await w.createApi('theirs', other.root);
      const mine = await w.createKey({ apiId, recoverable: true });
      const theirs = await w.createKey({ apiId: otherApi, recoverable: true }, other.root);
      const a = (await encryptedRow(w, mine.keyId))!;
      const b = (await encryptedRow(w, theirs.keyId))!;
      assert.notEqual(a.data_key_id, b.data_key_id);
      // Move my ciphertext onto their key: their decrypt must fail, never reveal my key.
      await w.store.db
        .updateTable('encrypted_keys')
        .set({ data_key_id: a.data_key_id, ciphertext: a.ciphertext })
        .where('key_id', '=', theirs.keyId)
        .execute();
      const moved = await w.get('/v1/keys.getKey', { keyId: theirs.keyId, decrypt: true }, other.root);
      assert.equal(moved.status, 500, moved.body);
      assert.ok(!moved.body.includes(mine.key));
      assert.equal(moved.json.error.code, 'INTERNAL_SERVER_ERROR');
      // A tampered ciphertext fails the same way, without echoing anything.
      const flipped = Buffer.from(b.ciphertext, 'base64');
      flipped[20] ^= 1;
      await w.store.db
        .updateTable('encrypted_keys')
        .set({ data_key_id: b.data_key_id, ciphertext: flipped.toString('base64') })
        .where('key_id', '=', theirs.keyId)
        .execute();
      const tampered = await w.get('/v1/keys.getKey', { keyId: theirs.keyId, decrypt: true }, other.root);
      assert.equal(tampered.status, 500, tampered.body);
      assert.ok(!tampered.body.includes(theirs.key));
      // Mine still decrypts.
      assert.equal((await w.get('/v1/keys.getKey', { keyId: mine.keyId, decrypt: true })).json.plaintext, mine.key);
    });

    test('a recoverable key verifies like any other, and its ciphertext goes with a permanent delete', async () => {
      const { key, keyId } = await w.createKey({ apiId, recoverable: true });
      const verified = await w.post('/v1/keys.verifyKey', { key, apiId }, null);
      assert.equal(verified.status, 200, verified.body);
      assert.equal(verified.json.valid, true);
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId, permanent: true })).status, 200);
      assert.equal(await encryptedRow(w, keyId), undefined);
    });

    describe('without a vault', () => {
      let bare: App;
      before(async () => {
        bare = await buildApp({ store: w.store });
      });
      after(() => bare.close());
      const call = async (method: 'GET' | 'POST', url: string, opts: { query?: Record<string, string>; body?: unknown }) => {
        const res = await bare.inject({
          method,
          url,
          query: opts.query,
          headers: { authorization: `Bearer ${w.root}`, ...(opts.body ? { 'content-type': 'application/json' } : {}) },
          payload: opts.body ? JSON.stringify(opts.body) : undefined,
        });
        return { status: res.statusCode, json: res.json(), body: res.body };
      };

      test('recoverable createKey, getKey?decrypt and listKeys?decrypt → 412 "no vault configured"; nothing written', async () => {
        const { keyId } = await w.createKey({ apiId, recoverable: true });
        const before = await snapshot(w, TABLES);
        for (const res of [
          await call('POST', '/v1/keys.createKey', { body: { apiId, recoverable: true } }),
          await call('GET', '/v1/keys.getKey', { query: { keyId, decrypt: 'true' } }),
          await call('GET', '/v1/apis.listKeys', { query: { apiId, decrypt: 'true' } }),
        ]) {
          assert.equal(res.status, 412, res.body);
          assert.equal(res.json.error.code, 'PRECONDITION_FAILED');
          assert.equal(res.json.error.type, 'https://keyhold.dev/errors/state/precondition-failed');
          assert.match(res.json.error.detail, /no vault configured/);
        }
        assert.deepEqual(await snapshot(w, TABLES), before);
        // Permissions still come first: 403, not 412.
        const noEncrypt = await bare.inject({
          method: 'POST',
          url: '/v1/keys.createKey',
          headers: { authorization: `Bearer ${await w.rootKey(['api.*.create_key'])}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ apiId, recoverable: true }),
        });
        assert.equal(noEncrypt.statusCode, 403, noEncrypt.body);
        // What needs no vault still works.
        const plain = await call('POST', '/v1/keys.createKey', { body: { apiId } });
        assert.equal(plain.status, 200, plain.body);
        const read = await call('GET', '/v1/keys.getKey', { query: { keyId } });
        assert.equal(read.status, 200, read.body);
        assert.equal(read.json.plaintext, undefined);
      });
    });
  });
}
