import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore } from './helpers/harness.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { AppError, type ErrorKind } from '../src/domain/errors.ts';
import { grants, permissionProblem } from '../src/domain/permissions.ts';
import { newId } from '../src/domain/ids.ts';
import { BASE58_ALPHABET } from '../src/domain/base58.ts';
import { generateKey, generateRootKey, hashKey, isWellFormedRootKey, keyStart } from '../src/crypto/keys.ts';
import { authenticateRootKey, insertRootKey, revokeRootKey } from '../src/services/workspaces/root-keys.ts';
import { bootstrap, createWorkspace } from '../src/services/workspaces/workspaces.ts';

const OPERATOR = { type: 'operator' as const, id: 'test' };
const B58 = '[1-9A-HJ-NP-Za-km-z]';

describe('permissions grammar (permissionProblem)', () => {
  for (const p of ['*', 'api.*.create_key', 'api.api_123.read_key', 'rbac.*.add_role_to_key', 'identity.*.read_identity', 'ratelimit.*.limit']) {
    test(`valid: ${p}`, () => assert.equal(permissionProblem(p), null));
  }
  const invalidCases: Array<[string, string, RegExp]> = [
    ['unknown type', 'vault.*.read_key', /unknown resource type "vault"/],
    ['unknown action', 'api.*.fly', /unknown action "fly"/],
    ['action of another type', 'api.*.create_role', /unknown action "create_role"/],
    ['two parts', 'api.read_key', /not of the form/],
    ['four parts', 'api.*.read_key.extra', /not of the form/],
    ['empty', '', /not of the form/],
    ['empty resource id', 'api..read_key', /resource id/],
    ['two stars', '*.*', /not of the form/],
  ];
  for (const [name, p, message] of invalidCases) {
    test(`invalid: ${name} (${JSON.stringify(p)})`, () => {
      const problem = permissionProblem(p);
      assert.equal(typeof problem, 'string');
      assert.match(problem!, message);
    });
  }
});

describe('permission evaluation (grants)', () => {
  test('"*" grants everything', () => {
    const held = new Set(['*']);
    for (const p of ['api.api_1.read_key', 'api.*.create_api', 'rbac.*.add_role_to_key', 'identity.id_1.delete_identity']) {
      assert.equal(grants(held, p), true, p);
    }
  });
  test('api.*.x grants api.<id>.x and api.*.x, but not api.<id>.y nor another type', () => {
    const held = new Set(['api.*.read_key']);
    assert.equal(grants(held, 'api.api_123.read_key'), true);
    assert.equal(grants(held, 'api.*.read_key'), true);
    assert.equal(grants(held, 'api.api_123.create_key'), false);
    assert.equal(grants(held, 'api.*.create_key'), false);
    assert.equal(grants(held, 'rbac.*.read_key'), false);
  });
  test('an exact permission grants itself only', () => {
    const held = new Set(['api.a.read_key']);
    assert.equal(grants(held, 'api.a.read_key'), true);
    assert.equal(grants(held, 'api.b.read_key'), false);
    assert.equal(grants(held, 'api.*.read_key'), false);
    assert.equal(grants(held, 'api.a.create_key'), false);
  });
  test('an empty set grants nothing', () => {
    assert.equal(grants(new Set(), 'api.a.read_key'), false);
    assert.equal(grants(new Set(), '*'), false);
  });
});

describe('key material (crypto/keys)', () => {
  test('hashKey matches the SPEC test vector', () => {
    assert.equal(hashKey('MVgWNsyPmv6VthC9moCNAPwS'), 'CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs=');
  });

  test('generateRootKey is kh_root_ + base58 of at least 128 bits, well formed, and different every time', () => {
    const keys = Array.from({ length: 50 }, generateRootKey);
    for (const k of keys) {
      // 33 base58 characters carry 193 bits; 22 would be the minimum for 128.
      assert.match(k, new RegExp(`^kh_root_${B58}{33}$`));
      assert.equal(isWellFormedRootKey(k), true, k);
    }
    assert.equal(new Set(keys).size, keys.length);
  });

  test('isWellFormedRootKey refuses anything else', () => {
    const good = generateRootKey();
    for (const bad of ['', 'kh_root_', 'kh_root_short', `KH_ROOT_${good.slice(8)}`, `sk_${good.slice(8)}`, good.slice(8),
      `kh_root_${'0'.repeat(30)}`, `kh_root_${'l'.repeat(30)}`, `${good} `, `kh_root_${'a'.repeat(65)}`]) {
      assert.equal(isWellFormedRootKey(bad), false, JSON.stringify(bad));
    }
    assert.equal(isWellFormedRootKey(`kh_root_${'a'.repeat(22)}`), true);
    assert.equal(isWellFormedRootKey(`kh_root_${'a'.repeat(64)}`), true);
  });

  test('generateKey: <prefix>_ + base58, start is prefix_ + 4 characters', () => {
    const { key, start } = generateKey('sk', 16);
    assert.match(key, new RegExp(`^sk_${B58}{16,22}$`));
    assert.equal(start, key.slice(0, 7));
    assert.match(start, new RegExp(`^sk_${B58}{4}$`));
    assert.notEqual(generateKey('sk', 16).key, key);
  });

  test('generateKey without a prefix: bare base58, start is its first 4 characters', () => {
    const { key, start } = generateKey(undefined, 16);
    assert.match(key, new RegExp(`^${B58}{16,22}$`));
    assert.equal(start, key.slice(0, 4));
  });

  test('generateKey length follows byteLength', () => {
    const { key } = generateKey('p', 255);
    // 255 random bytes are 2040 bits: at most 349 base58 characters.
    assert.ok(key.length - 2 > 300 && key.length - 2 <= 349, String(key.length));
  });

  test('keyStart', () => {
    assert.equal(keyStart('sk_abcdefgh', 'sk'), 'sk_abcd');
    assert.equal(keyStart('abcdefgh'), 'abcd');
    assert.equal(keyStart('abcdefgh', 'zz'), 'abcd');
    assert.equal(keyStart('kh_root_WXYZ1234', 'kh_root'), 'kh_root_WXYZ');
  });
});

describe('ids (domain/ids)', () => {
  test('format: <prefix>_ + 22 base58 characters', () => {
    for (const prefix of ['ws', 'key', 'api', 'role', 'perm', 'id', 'mig', 'req', 'rk', 'log'] as const) {
      assert.match(newId(prefix), new RegExp(`^${prefix}_${B58}{22}$`));
    }
  });

  test('unique within one millisecond', (t) => {
    t.mock.method(Date, 'now', () => 1_700_000_000_000);
    const ids = Array.from({ length: 1000 }, () => newId('key'));
    assert.equal(new Set(ids).size, ids.length);
  });

  test('an id made in a later millisecond sorts after an earlier one, across the whole time range', (t) => {
    let now = 0;
    t.mock.method(Date, 'now', () => now);
    const times = [0, 1, 2, 57, 58, 1_000, 1_700_000_000_000, 1_700_000_000_001, 4_102_444_800_000, 2 ** 48 - 1];
    const ids = times.map((ms) => { now = ms; return newId('key'); });
    for (const id of ids) assert.match(id, new RegExp(`^key_${B58}{22}$`));
    assert.deepEqual([...ids].sort(), ids);
    // Many ids, one per millisecond with random parts: still in creation order.
    const more = Array.from({ length: 200 }, (_, i) => { now = 1_700_000_000_000 + i; return newId('log'); });
    assert.deepEqual([...more].sort(), more);
  });

  test('the base58 alphabet is in ascending ASCII order (what makes the sort work)', () => {
    assert.equal([...BASE58_ALPHABET].sort().join(''), BASE58_ALPHABET);
  });
});

async function authError(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof AppError, `expected an AppError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected an AppError');
}

const expectKind = async (promise: Promise<unknown>, kind: ErrorKind) => {
  const err = await authError(promise);
  assert.equal(err.kind, kind, err.message);
  return err;
};

const count = async (store: Store, table: 'workspaces' | 'root_keys' | 'audit_logs' | 'settings'): Promise<number> =>
  Number((await store.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

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
      for (const header of ['Basic x', `Basic ${rootKey}`, 'Bearer', 'Bearer garbage', 'Bearer not-a-root-key', `Bearer ${rootKey.slice(8)}`,
        `Bearer ${rootKey} extra`, `Token ${rootKey}`, 'Bearer kh_root_0OIl0OIl0OIl0OIl0OIl0OIl0OIl']) {
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
      const before = { keys: await count(store, 'root_keys'), audit: await count(store, 'audit_logs') };
      const err = await expectKind(newKey(['api.*.read_key', 'vault.*.read', 'api.*.fly', 'api.read_key', '']), 'request/invalid-body');
      assert.equal(err.status, 400);
      assert.deepEqual(err.errors?.map((e) => e.path), ['/permissions/1', '/permissions/2', '/permissions/3', '/permissions/4']);
      for (const e of err.errors!) assert.ok(e.message.length > 0);
      const empty = await expectKind(newKey([]), 'request/invalid-body');
      assert.deepEqual(empty.errors?.map((e) => e.path), ['/permissions']);
      assert.deepEqual({ keys: await count(store, 'root_keys'), audit: await count(store, 'audit_logs') }, before);
    });

    test('insertRootKey writes the key and its audit record atomically, even outside a transaction', async () => {
      const own = await freshStore(dialect);
      try {
        const ws = await createWorkspace(own.store.db, 'atomic', OPERATOR);
        // Make the audit insert fail after the root key insert has run.
        await own.store.db.schema.alterTable('audit_logs').renameTo('audit_logs_away').execute();
        await assert.rejects(insertRootKey(own.store.db, { workspaceId: ws.workspaceId, permissions: ['*'] }, OPERATOR));
        assert.equal(await count(own.store, 'root_keys'), 0);
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
        ...await store.db.selectFrom('root_keys').selectAll().execute(),
        ...await store.db.selectFrom('audit_logs').selectAll().execute(),
      ];
      assert.ok(rows.some((r) => Object.values(r).includes(rootKeyId)), 'the key and its audit record were read');
      for (const r of rows) {
        for (const [column, value] of Object.entries(r)) {
          assert.ok(!String(value).includes(secret), `plaintext found in column ${column}`);
        }
      }
    });
  });

  describe(`bootstrap (${dialect})`, () => {
    const opened: Array<() => Promise<void>> = [];
    const fresh = async () => {
      const f = await freshStore(dialect);
      opened.push(f.close);
      return f;
    };
    after(async () => { for (const c of opened) await c(); });

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
      assert.deepEqual((await store.db.selectFrom('workspaces').select('id').execute()).map((w) => w.id), [result.workspaceId]);
      assert.equal(await count(store, 'root_keys'), 1);
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
      assert.deepEqual(err.errors?.map((e) => e.path), ['/rootKey']);
      assert.equal(await count(store, 'workspaces'), 0);
      assert.equal(await count(store, 'settings'), 0);
      assert.ok(await bootstrap(store.db, undefined));
    });

    test('does nothing on a database that already has a workspace', async () => {
      const { store } = await fresh();
      await createWorkspace(store.db, 'existing', OPERATOR);
      assert.equal(await bootstrap(store.db, undefined), null);
      assert.equal(await count(store, 'workspaces'), 1);
      assert.equal(await count(store, 'root_keys'), 0);
    });

    test('5 concurrent calls on one store create exactly one workspace and one key', async () => {
      const { store } = await fresh();
      const results = await Promise.all(Array.from({ length: 5 }, () => bootstrap(store.db, undefined)));
      assert.equal(results.filter((r) => r !== null).length, 1);
      assert.equal(await count(store, 'workspaces'), 1);
      assert.equal(await count(store, 'root_keys'), 1);
    });

    test('5 concurrent calls from 5 stores on one database (5 processes) create exactly one workspace and one key', async () => {
      const { store, url } = await fresh();
      const stores = Array.from({ length: 5 }, () => openStore(url));
      try {
        const results = await Promise.all(stores.map((s) => bootstrap(s.db, undefined)));
        const winners = results.filter((r) => r !== null);
        assert.equal(winners.length, 1);
        assert.equal(await count(store, 'workspaces'), 1);
        assert.equal(await count(store, 'root_keys'), 1);
        assert.equal((await authenticateRootKey(store.db, `Bearer ${winners[0].rootKey}`, 'req_b')).workspaceId, winners[0].workspaceId);
      } finally {
        for (const s of stores) await s.close();
      }
    });
  });
}
