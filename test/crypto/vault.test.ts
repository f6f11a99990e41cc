import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DIALECTS, freshStore, OPERATOR } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import { repoUrl } from '../helpers/repo.ts';
import { createVault, VaultError, type Sealed, type Vault } from '../../src/crypto/vault.ts';
import { formatMasterKey, loadOrCreateMasterKeyFile, MasterKeyFileError, masterKeysFromConfig } from '../../src/crypto/master-keys.ts';
import { MasterKeyFormatError, parseMasterKeys, type MasterKey } from '../../src/config/master-keys.ts';
import { loadConfig } from '../../src/config/config.ts';
import { ConfigError } from '../../src/config/shapes.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { openStore, type Store } from '../../src/store/store.ts';

const mk = (id: string): MasterKey => ({ id, key: randomBytes(32) });
const A = mk('a');
const B = mk('b');
const C = mk('c');

const dataKeys = (store: Store, workspaceId?: string) => {
  let q = store.db.selectFrom('data_keys').selectAll();
  if (workspaceId) q = q.where('workspace_id', '=', workspaceId);
  return q.orderBy('id').execute();
};

for (const dialect of DIALECTS) {
  describe(`vault (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
    });
    after(() => close());
    const workspace = async () => (await createWorkspace(store.db, 'vault', OPERATOR)).workspaceId;

    test('round trip, in order; every ciphertext is base64(nonce | ciphertext | tag) with a fresh nonce', async () => {
      const ws = await workspace();
      const vault = createVault([A]);
      const plaintexts = ['acme_3ZbW5yMnmGGRw3dQ', 'ünïcødé 🔑', '', 'x'.repeat(5000), 'acme_3ZbW5yMnmGGRw3dQ'];
      const sealed = await vault.encrypt(store.db, ws, plaintexts);
      assert.equal(sealed.length, plaintexts.length);
      assert.equal(new Set(sealed.map((s) => s.dataKeyId)).size, 1);
      for (const [i, s] of sealed.entries()) {
        const raw = Buffer.from(s.ciphertext, 'base64');
        assert.equal(raw.toString('base64'), s.ciphertext);
        assert.equal(raw.length, 12 + Buffer.byteLength(plaintexts[i]) + 16);
        if (plaintexts[i]) assert.ok(!raw.includes(Buffer.from(plaintexts[i])));
      }
      assert.notEqual(sealed[0].ciphertext, sealed[4].ciphertext, 'the same plaintext twice gives different ciphertexts');
      assert.deepEqual(await vault.decrypt(store.db, ws, sealed), plaintexts);
      // A vault with an empty cache (another process) reads the same.
      assert.deepEqual(await createVault([A]).decrypt(store.db, ws, [...sealed].reverse()), [...plaintexts].reverse());
      assert.deepEqual(await vault.encrypt(store.db, ws, []), []);
      assert.deepEqual(await vault.decrypt(store.db, ws, []), []);
      const rows = await dataKeys(store, ws);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].id, sealed[0].dataKeyId);
      assert.equal(rows[0].master_key_id, 'a');
      assert.match(rows[0].id, /^dk_[1-9A-HJ-NP-Za-km-z]{22}$/);
      assert.equal(Buffer.from(rows[0].wrapped, 'base64').length, 12 + 32 + 16);
      assert.ok(!Buffer.from(rows[0].wrapped, 'base64').includes(A.key));
    });

    test('several workspaces get different data keys, and one workspace keeps using its own', async () => {
      const [ws1, ws2, ws3] = [await workspace(), await workspace(), await workspace()];
      const vault = createVault([A]);
      const [s1] = await vault.encrypt(store.db, ws1, ['one']);
      const [s2] = await vault.encrypt(store.db, ws2, ['two']);
      const [s3] = await vault.encrypt(store.db, ws3, ['three']);
      assert.equal(new Set([s1.dataKeyId, s2.dataKeyId, s3.dataKeyId]).size, 3);
      const [again] = await vault.encrypt(store.db, ws1, ['one again']);
      assert.equal(again.dataKeyId, s1.dataKeyId);
      for (const ws of [ws1, ws2, ws3]) assert.equal((await dataKeys(store, ws)).length, 1);
      const wrapped = await Promise.all([ws1, ws2, ws3].map(async (ws) => (await dataKeys(store, ws))[0].wrapped));
      assert.equal(new Set(wrapped).size, 3);
    });

    test('a tampered ciphertext, a ciphertext in another workspace, or an unknown data key fails without revealing anything', async () => {
      const [ws1, ws2] = [await workspace(), await workspace()];
      const vault = createVault([A]);
      const secret = 'acme_tamper_me_please';
      const [s] = await vault.encrypt(store.db, ws1, [secret]);
      await vault.encrypt(store.db, ws2, ['theirs']);
      const raw = Buffer.from(s.ciphertext, 'base64');
      const flip = (at: number): Sealed => {
        const copy = Buffer.from(raw);
        copy[at] ^= 0x01;
        return { dataKeyId: s.dataKeyId, ciphertext: copy.toString('base64') };
      };
      const bad: Array<[string, string, Sealed]> = [
        ['nonce', ws1, flip(0)],
        ['body', ws1, flip(14)],
        ['tag', ws1, flip(raw.length - 1)],
        ['truncated', ws1, { dataKeyId: s.dataKeyId, ciphertext: raw.subarray(0, raw.length - 1).toString('base64') }],
        ['too short', ws1, { dataKeyId: s.dataKeyId, ciphertext: 'AAAA' }],
        ['other workspace', ws2, s],
        ['unknown data key', ws1, { dataKeyId: 'dk_1111111111111111111111', ciphertext: s.ciphertext }],
      ];
      for (const [what, ws, sealed] of bad) {
        await assert.rejects(
          vault.decrypt(store.db, ws, [sealed]),
          (err: Error) => {
            assert.ok(err instanceof VaultError, `${what}: ${err}`);
            assert.ok(!err.message.includes(secret));
            assert.ok(!err.message.includes(A.key.toString('base64')));
            return true;
          },
          what,
        );
      }
      // Their own data key under my ciphertext does not work either.
      const [theirs] = await vault.encrypt(store.db, ws2, ['x']);
      await assert.rejects(vault.decrypt(store.db, ws2, [{ dataKeyId: theirs.dataKeyId, ciphertext: s.ciphertext }]), VaultError);
      // A wrapped data key copied onto another workspace's row does not unwrap there (AAD binds it).
      const [mine] = await dataKeys(store, ws1);
      const [theirsRow] = await dataKeys(store, ws2);
      await store.db.updateTable('data_keys').set({ wrapped: mine.wrapped }).where('id', '=', theirs.dataKeyId).execute();
      await assert.rejects(createVault([A]).decrypt(store.db, ws2, [theirs]), VaultError);
      await store.db.updateTable('data_keys').set({ wrapped: theirsRow.wrapped }).where('id', '=', theirs.dataKeyId).execute();
      assert.deepEqual(await createVault([A]).decrypt(store.db, ws2, [theirs]), ['x']);
      // A wrong master key under the right id does not unwrap.
      await assert.rejects(
        createVault([{ id: 'a', key: randomBytes(32) }]).decrypt(store.db, ws1, [s]),
        /does not unwrap with master key "a"/,
      );
      // The untouched original still decrypts.
      assert.deepEqual(await vault.decrypt(store.db, ws1, [s]), [secret]);
    });

    test('a data key created in a transaction that rolls back is gone, and the next one works (no stale cache)', async () => {
      const ws = await workspace();
      const vault = createVault([A]);
      await assert.rejects(
        store.db.transaction().execute(async (tx) => {
          await vault.encrypt(tx, ws, ['lost']);
          assert.equal((await tx.selectFrom('data_keys').select('id').where('workspace_id', '=', ws).execute()).length, 1);
          throw new Error('roll back');
        }),
        /roll back/,
      );
      assert.equal((await dataKeys(store, ws)).length, 0);
      const [s] = await vault.encrypt(store.db, ws, ['kept']);
      assert.deepEqual(await vault.decrypt(store.db, ws, [s]), ['kept']);
      assert.deepEqual(await createVault([A]).decrypt(store.db, ws, [s]), ['kept']);
    });

    test('concurrent first uses, in transactions, from two stores (processes), create one data key', async () => {
      const ws = await workspace();
      const second = openStore(url);
      try {
        const attempts = Array.from({ length: 16 }, (_, i) => {
          const db = (i % 2 ? second : store).db;
          // A vault each, as separate processes would have: no shared cache.
          return db.transaction().execute(async (tx) => {
            const [s] = await createVault([A]).encrypt(tx, ws, [`secret-${i}`]);
            return s;
          });
        });
        const sealed = await Promise.all(attempts);
        const rows = await dataKeys(store, ws);
        assert.equal(rows.length, 1);
        assert.ok(sealed.every((s) => s.dataKeyId === rows[0].id));
        assert.deepEqual(
          await createVault([A]).decrypt(store.db, ws, sealed),
          sealed.map((_, i) => `secret-${i}`),
        );
      } finally {
        await second.close();
      }
    });

    test('master key rotation: encrypt under A; [B, A] rotates to B; old and new ciphertexts decrypt with [B] only; new encryptions use B', async () => {
      const [ws1, ws2] = [await workspace(), await workspace()];
      const onA = createVault([A]);
      const [old1] = await onA.encrypt(store.db, ws1, ['old-one']);
      const [old2] = await onA.encrypt(store.db, ws2, ['old-two']);

      // Step 1: B first, A kept. Old ciphertexts decrypt; new data keys are wrapped by B.
      const onBA = createVault([B, A]);
      assert.deepEqual(await onBA.decrypt(store.db, ws1, [old1]), ['old-one']);
      const [mid1] = await onBA.encrypt(store.db, ws1, ['mid-one']);
      assert.notEqual(mid1.dataKeyId, old1.dataKeyId);
      const midKey = (await dataKeys(store, ws1)).find((r) => r.id === mid1.dataKeyId)!;
      assert.equal(midKey.master_key_id, 'b');
      const underA = (await dataKeys(store)).filter((r) => r.master_key_id === 'a').map((r) => r.id);
      assert.ok(underA.includes(old1.dataKeyId) && underA.includes(old2.dataKeyId));

      // Step 2: rotate. Every data key under A (of every workspace, also the other suites') is re-wrapped under B, once.
      const before = new Map((await dataKeys(store)).map((r) => [r.id, r.wrapped]));
      const { rewrapped } = await onBA.rotate(store.db);
      assert.equal(rewrapped, underA.length);
      const afterRows = await dataKeys(store);
      assert.ok(afterRows.every((r) => r.master_key_id === 'b'));
      for (const r of afterRows) {
        if (underA.includes(r.id)) assert.notEqual(r.wrapped, before.get(r.id));
        else assert.equal(r.wrapped, before.get(r.id), 'a data key already under B is untouched');
      }
      assert.deepEqual(await onBA.rotate(store.db), { rewrapped: 0 });

      // Step 3: A removed. Old and new ciphertexts decrypt; new encryptions use B.
      const onB = createVault([B]);
      assert.deepEqual(await onB.decrypt(store.db, ws1, [old1, mid1]), ['old-one', 'mid-one']);
      assert.deepEqual(await onB.decrypt(store.db, ws2, [old2]), ['old-two']);
      const [new1] = await onB.encrypt(store.db, ws1, ['new-one']);
      assert.equal(new1.dataKeyId, mid1.dataKeyId);
      const [new2] = await onB.encrypt(store.db, ws2, ['new-two']);
      assert.equal((await dataKeys(store, ws2)).find((r) => r.id === new2.dataKeyId)!.master_key_id, 'b');
      assert.deepEqual(await createVault([B]).decrypt(store.db, ws2, [old2, new2]), ['old-two', 'new-two']);
      // A alone no longer opens anything.
      await assert.rejects(createVault([A]).decrypt(store.db, ws1, [old1]), /wrapped by master key "b", which is not configured/);

      // Rotating without the key the data keys are wrapped by changes nothing and names the missing key.
      const snapshot = await dataKeys(store);
      await assert.rejects(createVault([C]).rotate(store.db), (err: Error) => {
        assert.ok(err instanceof VaultError);
        assert.match(err.message, /"b"/);
        assert.ok(!err.message.includes(B.key.toString('base64')) && !err.message.includes(C.key.toString('base64')));
        return true;
      });
      assert.deepEqual(await dataKeys(store), snapshot);
    });

    test('check (at the server start): every master key that wraps a data key must be configured and unwrap it', async () => {
      const own = await freshStore(dialect);
      try {
        const db = own.store.db;
        await createVault([A]).check(db); // no data key yet: any master key will do
        const [wsA, wsB] = await Promise.all(['a', 'b'].map(async (n) => (await createWorkspace(db, n, OPERATOR)).workspaceId));
        await createVault([A]).encrypt(db, wsA, ['under a']);
        await createVault([B]).encrypt(db, wsB, ['under b']);
        await createVault([B, A]).check(db);
        await createVault([A, B]).check(db);
        await assert.rejects(
          createVault([B]).check(db),
          (err: Error) => err instanceof VaultError && /master key "a", which is not configured/.test(err.message),
        );
        const otherA = mk('a');
        await assert.rejects(createVault([B, otherA]).check(db), (err: Error) => {
          assert.ok(err instanceof VaultError);
          assert.match(err.message, /does not unwrap with master key "a"/);
          assert.ok(!err.message.includes(otherA.key.toString('base64')) && !err.message.includes(A.key.toString('base64')));
          return true;
        });
      } finally {
        await own.close();
      }
    });

    test('concurrent rotations re-wrap every data key exactly once', async () => {
      const D = mk('d');
      const workspaces = await Promise.all(Array.from({ length: 5 }, () => workspace()));
      const sealed = await Promise.all(workspaces.map((ws) => createVault([B]).encrypt(store.db, ws, [`c-${ws}`])));
      const pending = (await dataKeys(store)).filter((r) => r.master_key_id !== 'd').length;
      // Every key the store's data keys may be wrapped by, with D first.
      const results = await Promise.all([0, 1, 2].map(() => createVault([D, A, B]).rotate(store.db)));
      assert.equal(
        results.reduce((n, r) => n + r.rewrapped, 0),
        pending,
      );
      assert.ok((await dataKeys(store)).every((r) => r.master_key_id === 'd'));
      for (const [i, ws] of workspaces.entries()) assert.deepEqual(await createVault([D]).decrypt(store.db, ws, sealed[i]), [`c-${ws}`]);
    });

    test('keyhold vault rotate re-wraps under the first of KEYHOLD_MASTER_KEYS and reports how many', async () => {
      const E = mk('e');
      const F = mk('f');
      const own = await freshStore(dialect);
      try {
        const ws = (await createWorkspace(own.store.db, 'cli', OPERATOR)).workspaceId;
        const ws2 = (await createWorkspace(own.store.db, 'cli2', OPERATOR)).workspaceId;
        const [s] = await createVault([E]).encrypt(own.store.db, ws, ['cli-secret']);
        const [s2] = await createVault([E]).encrypt(own.store.db, ws2, ['cli-secret-2']);
        const env = { DATABASE_URL: own.url, KEYHOLD_MASTER_KEYS: `${formatMasterKey(F)}, ${formatMasterKey(E)}` };
        const first = await runCli(env, ['vault', 'rotate', '--json']);
        assert.equal(first.code, 0, JSON.stringify(first.json));
        assert.deepEqual(first.json, { rewrapped: 2 });
        assert.deepEqual((await runCli(env, ['vault', 'rotate', '--json'])).json, { rewrapped: 0 });
        assert.deepEqual(await createVault([F]).decrypt(own.store.db, ws, [s]), ['cli-secret']);
        assert.deepEqual(await createVault([F]).decrypt(own.store.db, ws2, [s2]), ['cli-secret-2']);
        // Without the key the data keys are wrapped by: exit 1, nothing changed, no secret printed.
        const missing = await runCli({ DATABASE_URL: own.url, KEYHOLD_MASTER_KEYS: formatMasterKey(E) }, ['vault', 'rotate', '--json']);
        assert.equal(missing.code, 1);
        assert.equal(missing.json.error.kind, 'state/precondition-failed');
        assert.match(missing.json.error.detail, /"f"/);
        assert.ok(!JSON.stringify(missing.json).includes(E.key.toString('base64')));
        assert.ok((await dataKeys(own.store)).every((r) => r.master_key_id === 'f'));
        // An invalid value is a configuration error (exit 2) that does not echo it.
        const bad = await runCli({ DATABASE_URL: own.url, KEYHOLD_MASTER_KEYS: 'x:notbase64!!' }, ['vault', 'rotate', '--json']);
        assert.equal(bad.code, 2);
        assert.ok(!JSON.stringify(bad.json).includes('notbase64'));
      } finally {
        await own.close();
      }
      const empty = await freshStore(dialect);
      try {
        const none = await runCli({ DATABASE_URL: empty.url, KEYHOLD_MASTER_KEYS: undefined }, ['vault', 'rotate', '--json']);
        if (dialect === 'postgres') {
          // No master key file on PostgreSQL: a key generated here would be unknown to every other server.
          assert.equal(none.code, 2);
          assert.match(none.json.error.detail, /KEYHOLD_MASTER_KEYS must be set/);
        } else {
          // SQLite without KEYHOLD_MASTER_KEYS: the master key file next to the database, as the server uses.
          assert.equal(none.code, 0, JSON.stringify(none.json));
          assert.deepEqual(none.json, { rewrapped: 0 });
          const path = join(dirname(empty.url.slice('sqlite:'.length)), 'master.key');
          assert.equal(statSync(path).mode & 0o777, 0o600);
        }
      } finally {
        await empty.close();
      }
    });
  });
}

describe('parseMasterKeys (KEYHOLD_MASTER_KEYS)', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  test('comma-separated <id>:<base64 of 32 bytes>, newest first; whitespace around entries is ignored', () => {
    const keys = parseMasterKeys(` new-2025.q3:${k2.toString('base64')} ,\n old_1:${k1.toString('base64').replace(/=+$/, '')}`);
    assert.deepEqual(
      keys.map((k) => k.id),
      ['new-2025.q3', 'old_1'],
    );
    assert.ok(keys[0].key.equals(k2));
    assert.ok(keys[1].key.equals(k1));
    assert.deepEqual(parseMasterKeys(formatMasterKey({ id: 'x', key: k1 })).map(formatMasterKey), [formatMasterKey({ id: 'x', key: k1 })]);
  });

  test('every problem is reported, by entry and id, and no key material is echoed', () => {
    const short = randomBytes(16).toString('base64');
    const long = randomBytes(33).toString('base64');
    const value = [
      `a:${k1.toString('base64')}`,
      `a:${k2.toString('base64')}`,
      'nocolon',
      `bad id:${k1.toString('base64')}`,
      `s:${short}`,
      `l:${long}`,
      'u:%%%notbase64%%%',
      `url:${k1.toString('base64url')}x`,
      '',
    ].join(',');
    assert.throws(
      () => parseMasterKeys(value),
      (err: Error) => {
        assert.ok(err instanceof MasterKeyFormatError);
        assert.deepEqual(
          err.problems.map((p) => p.split(/[ :]/).slice(0, 2).join(' ')),
          ['entry 2', 'entry 3', 'entry 4', 'entry 5', 'entry 6', 'entry 7', 'entry 8', 'entry 9'],
        );
        assert.match(err.problems[0], /id "a" is listed more than once/);
        assert.match(err.problems[1], /must be <id>:<base64 of 32 bytes>/);
        assert.match(err.problems[2], /the id must be 1\.\.64 characters/);
        assert.match(err.problems[3], /\(id "s"\): the key must be standard base64 of exactly 32 bytes/);
        assert.match(err.problems[7], /entry 9 is empty/);
        for (const secret of [k1.toString('base64'), k2.toString('base64'), short, long, 'notbase64'])
          assert.ok(!err.message.includes(secret), secret);
        return true;
      },
    );
    for (const empty of ['', ' ', ',']) assert.throws(() => parseMasterKeys(empty), MasterKeyFormatError);
    assert.throws(() => parseMasterKeys(`${'i'.repeat(65)}:${k1.toString('base64')}`), /the id must be 1\.\.64/);
  });

  test('loadConfig: an invalid KEYHOLD_MASTER_KEYS is a ConfigError naming it, never echoing the value; a valid one is exposed parsed', () => {
    const secret = randomBytes(20).toString('base64');
    assert.throws(
      () => loadConfig({ KEYHOLD_MASTER_KEYS: `k:${secret}` }),
      (err: Error) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /KEYHOLD_MASTER_KEYS: entry 1 \(id "k"\)/);
        assert.ok(!err.message.includes(secret));
        return true;
      },
    );
    const config = loadConfig({ KEYHOLD_MASTER_KEYS: `k2:${k2.toString('base64')},k1:${k1.toString('base64')}` });
    assert.deepEqual(
      config.masterKeys!.map((k) => k.id),
      ['k2', 'k1'],
    );
    assert.equal(loadConfig({}).masterKeys, undefined);
    assert.equal(loadConfig({ KEYHOLD_MASTER_KEYS: '' }).masterKeys, undefined);
  });
});

describe('master key file (embedded default)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'keyhold-vault-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('created once, mode 0600, in a data directory it creates; warns once, without the key', () => {
    const dataDir = join(dir, 'nested', 'data');
    const warnings: string[] = [];
    const first = loadOrCreateMasterKeyFile(dataDir, (m) => warnings.push(m));
    assert.equal(first.length, 1);
    assert.equal(first[0].key.length, 32);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /generated a new master key/);
    assert.ok(warnings[0].includes(join(dataDir, 'master.key')));
    assert.ok(!warnings[0].includes(first[0].key.toString('base64')));
    const path = join(dataDir, 'master.key');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    // The file holds the KEYHOLD_MASTER_KEYS form, so it can be moved into the variable.
    assert.ok(readFileSync(path, 'utf8').split('\n').includes(formatMasterKey(first[0])));
    const second = loadOrCreateMasterKeyFile(dataDir, (m) => warnings.push(m));
    assert.equal(warnings.length, 1, 'no second warning');
    assert.deepEqual(second.map(formatMasterKey), first.map(formatMasterKey));
  });

  test('several processes starting at once agree on one key', async () => {
    const dataDir = join(dir, 'race');
    const vaultModule = repoUrl('src/crypto/master-keys.ts').href;
    const script = `
      const { loadOrCreateMasterKeyFile, formatMasterKey } = await import(${JSON.stringify(vaultModule)});
      process.stdout.write(loadOrCreateMasterKeyFile(${JSON.stringify(dataDir)}, () => process.stderr.write('created\\n')).map(formatMasterKey).join(','));`;
    const runOne = () =>
      new Promise<{ out: string; err: string; code: number | null }>((resolve) => {
        const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d) => {
          out += d;
        });
        child.stderr.on('data', (d) => {
          err += d;
        });
        // 'close', not 'exit': the output may still be in the pipes when the process has exited.
        child.on('close', (code) => resolve({ out, err, code }));
      });
    const results = await Promise.all(Array.from({ length: 6 }, runOne));
    for (const r of results) assert.equal(r.code, 0, r.err);
    assert.equal(new Set(results.map((r) => r.out)).size, 1);
    assert.equal(results.filter((r) => r.err.includes('created')).length, 1, 'exactly one process created (and warned)');
    assert.deepEqual(parseMasterKeys(results[0].out).map(formatMasterKey), [results[0].out]);
  });

  test('an existing file readable by others is used, with a warning; an invalid one fails naming the file', () => {
    const loose = join(dir, 'loose');
    const key = { id: 'own', key: randomBytes(32) };
    loadOrCreateMasterKeyFile(loose, () => {});
    writeFileSync(join(loose, 'master.key'), `# mine\n${formatMasterKey(key)}\n`);
    chmodSync(join(loose, 'master.key'), 0o644);
    const warnings: string[] = [];
    assert.deepEqual(loadOrCreateMasterKeyFile(loose, (m) => warnings.push(m)).map(formatMasterKey), [formatMasterKey(key)]);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /readable by other users/);
    writeFileSync(join(loose, 'master.key'), 'own:tooshort\n');
    assert.throws(
      () => loadOrCreateMasterKeyFile(loose, () => {}),
      (err: Error) => {
        assert.ok(err instanceof MasterKeyFormatError);
        assert.ok(err.message.includes(join(loose, 'master.key')));
        assert.ok(!err.message.includes('tooshort'));
        return true;
      },
    );
  });

  test('masterKeysFromConfig: KEYHOLD_MASTER_KEYS wins; SQLite uses the file next to the database; PostgreSQL without keys has none', () => {
    const given = [mk('given')];
    assert.equal(
      masterKeysFromConfig({ databaseUrl: 'postgres://h/db', masterKeys: given }, () => {}),
      given,
    );
    assert.equal(
      masterKeysFromConfig({ databaseUrl: 'postgres://h/db' }, () => {}),
      undefined,
    );
    assert.equal(
      masterKeysFromConfig({ databaseUrl: `sqlite:${join(dir, 'cfg', 'x.db')}`, masterKeys: given }, () => {}),
      given,
    );
    const warnings: string[] = [];
    const fromFile = masterKeysFromConfig({ databaseUrl: `sqlite:${join(dir, 'cfg', 'x.db')}` }, (m) => warnings.push(m))!;
    assert.equal(warnings.length, 1);
    assert.deepEqual(
      readFileSync(join(dir, 'cfg', 'master.key'), 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('#')),
      fromFile.map(formatMasterKey),
    );
    writeFileSync(join(dir, 'cfg', 'master.key'), 'broken');
    assert.throws(
      () => masterKeysFromConfig({ databaseUrl: `sqlite:${join(dir, 'cfg', 'x.db')}` }, () => {}),
      (err: Error) =>
        err instanceof MasterKeyFileError &&
        /master key file cannot be used .*master\.key: entry 1 .*set KEYHOLD_MASTER_KEYS$/.test(err.message),
    );
  });

  test('createVault refuses no keys or keys of the wrong size', () => {
    assert.throws(() => createVault([]), VaultError);
    assert.throws(() => createVault([{ id: 'x', key: randomBytes(16) }]), /must be 32 bytes/);
    const v: Vault = createVault([mk('ok')]);
    assert.ok(v);
  });
});
