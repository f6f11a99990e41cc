import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import { expectedChecksum } from '../helpers/formats.ts';

interface Finding {
  file: string;
  line: number;
  column: number;
  start: string;
  kind?: string;
  keyId?: string;
  apiId?: string;
  workspaceId?: string;
  state?: string;
  reported?: boolean;
}
type Scan = { findings: Finding[]; files: number; bytes: number };

/** `key` with its last checksum character changed: same shape, wrong checksum. */
const corrupted = (key: string) => key.slice(0, -1) + (key.at(-1) === 'z' ? 'y' : 'z');

for (const dialect of DIALECTS) {
  describe(`keyhold keys scan (${dialect})`, () => {
    let w: World;
    let dir: string;
    let apiId: string;
    before(async () => {
      w = await world(dialect);
      apiId = await w.createApi('scanned');
    });
    after(async () => {
      await w.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const cli = <T = Scan>(...argv: string[]) => runCli<T>({ DATABASE_URL: w.url, KEYHOLD_LEAKED_KEY_ACTION: undefined }, argv);

    /** A tree with keys planted at known places, and look-alikes that are not keys. */
    async function plant() {
      dir = mkdtempSync(join(tmpdir(), 'scan-'));
      const live = await w.createKey({ apiId, prefix: 'sk_live' });
      const bare = await w.createKey({ apiId });
      mkdirSync(join(dir, 'src'));
      mkdirSync(join(dir, 'node_modules', 'dep'), { recursive: true });
      mkdirSync(join(dir, '.git'));
      writeFileSync(join(dir, 'src', 'config.js'), `// config\nconst a = 1;\n  const key = "${live.key}"; // oops\n`);
      writeFileSync(join(dir, 'src', 'bare.env'), `TOKEN=${bare.key}\n`);
      writeFileSync(join(dir, 'src', 'lookalike.txt'), `${corrupted(live.key)}\nsk_${'A'.repeat(28)}\n${'x'.repeat(40)}\n`);
      writeFileSync(join(dir, 'node_modules', 'dep', 'index.js'), `"${live.key}"`);
      writeFileSync(join(dir, '.git', 'COMMIT_EDITMSG'), live.key);
      return { live, bare };
    }

    test('finds planted keys at file:line:column, prints their start only, ignores look-alikes and skipped folders; exit 1', async () => {
      const { live, bare } = await plant();
      const r = await cli('keys', 'scan', dir, '--json');
      assert.equal(r.code, 1, JSON.stringify(r));
      assert.deepEqual(
        r.json.findings.map((f) => [f.file.slice(dir.length + 1), f.line, f.column, f.start]),
        [
          ['src/bare.env', 1, 7, bare.key.slice(0, 4)],
          ['src/config.js', 3, 16, live.key.slice(0, 'sk_live_'.length + 4)],
        ],
      );
      assert.equal(r.json.files, 3);
      const text = await cli('keys', 'scan', dir);
      assert.equal(text.code, 1);
      assert.match(text.out.join('\n'), /src\/config\.js:3:16 {2}sk_live_\w{4}…/);
      for (const out of [JSON.stringify(r), text.out.join('\n')]) {
        assert.ok(!out.includes(live.key) && !out.includes(bare.key), 'the whole key is never printed');
      }
    });

    test('a node_modules folder named on the command line is read; a tree without keys exits 0', async () => {
      const named = await cli('keys', 'scan', join(dir, 'node_modules'), '--json');
      assert.deepEqual([named.code, named.json.findings.length], [1, 1]);
      const clean = await cli('keys', 'scan', join(dir, 'src', 'lookalike.txt'), '--json');
      assert.deepEqual([clean.code, clean.json.findings], [0, []]);
    });

    test('--check names key id, API, workspace and state; a tree with only disabled keys exits 0', async () => {
      const r = await cli('keys', 'scan', join(dir, 'src'), '--check', '--json');
      assert.equal(r.code, 1);
      for (const f of r.json.findings) {
        assert.equal(f.kind, 'key');
        assert.match(f.keyId!, /^key_/);
        assert.deepEqual([f.apiId, f.workspaceId, f.state], [apiId, w.workspaceId, 'live']);
      }
      for (const f of r.json.findings) await w.post('/v1/keys.updateKey', { keyId: f.keyId, enabled: false });
      const after = await cli('keys', 'scan', join(dir, 'src'), '--check', '--json');
      assert.deepEqual([after.code, after.json.findings.map((f) => f.state)], [0, ['disabled', 'disabled']]);
      // A key no database knows (made elsewhere): its checksum makes it a finding, --check says unknown.
      const body = `sk_${'B'.repeat(22)}`;
      writeFileSync(join(dir, 'elsewhere.txt'), body + expectedChecksum(body));
      const unknown = await cli('keys', 'scan', join(dir, 'elsewhere.txt'), '--check', '--json');
      assert.deepEqual([unknown.code, unknown.json.findings.map((f) => f.state)], [0, ['unknown']]);
    });

    test('--report disables the live keys found (root keys revoked), audited with the operator as actor', async () => {
      const fresh = await w.createKey({ apiId, prefix: 'sk' });
      const root = await w.rootKey(['api.*.read_api']);
      const file = join(dir, 'leak.yml');
      writeFileSync(file, `key: ${fresh.key}\nroot: ${root}\n`);
      const r = await cli('keys', 'scan', file, '--report', '--json');
      assert.equal(r.code, 1, JSON.stringify(r));
      assert.deepEqual(
        r.json.findings.map((f) => [f.kind, f.reported]),
        [
          ['key', true],
          ['root_key', true],
        ],
      );
      const v = await w.post<{ code: string }>('/v1/keys.verifyKey', { key: fresh.key }, null);
      assert.equal(v.json.code, 'DISABLED');
      assert.equal((await w.get('/v1/apis.getApi', { apiId }, root)).status, 401);
      const audits = await w.store.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('event', 'in', ['key.leaked', 'root_key.leaked'])
        .where('target_id', 'in', [fresh.keyId, r.json.findings[1].keyId!])
        .execute();
      assert.equal(audits.length, 2);
      for (const a of audits) {
        assert.equal(a.actor_type, 'operator');
        assert.match(JSON.parse(a.diff!).url, /^file:\/\/.*leak\.yml#L[12]$/);
      }
      // Reported again: nothing more is recorded.
      await cli('keys', 'scan', file, '--report', '--json');
      assert.equal(
        (
          await w.store.db
            .selectFrom('audit_logs')
            .select('id')
            .where('target_id', 'in', [fresh.keyId, r.json.findings[1].keyId!])
            .where('event', 'in', ['key.leaked', 'root_key.leaked'])
            .execute()
        ).length,
        2,
      );
    });

    test('a key across the 1 MiB chunk boundary of a large file is found at its line and column', async () => {
      const { key } = await w.createKey({ apiId, prefix: 'big' });
      const filler = `${'lorem ipsum '.repeat(8)}\n`;
      let text = filler.repeat(Math.floor((1024 * 1024 - 10) / filler.length));
      const line = text.split('\n').length;
      text += `${'.'.repeat(1024 * 1024 - 10 - text.length)}${key}\nend\n`;
      const file = join(dir, 'big.log');
      writeFileSync(file, text);
      const r = await cli('keys', 'scan', file, '--json');
      assert.deepEqual(
        r.json.findings.map((f) => [f.line, f.column, f.start]),
        [[line, 1024 * 1024 - 10 - text.lastIndexOf('\n', 1024 * 1024 - 11), key.slice(0, 8)]],
      );
    });

    test('no PATH is a usage error (exit 2); a missing path is a failure (exit 1)', async () => {
      assert.equal((await cli('keys', 'scan', '--json')).code, 2);
      assert.equal((await cli('keys', 'scan', join(dir, 'no-such-file'), '--json')).code, 1);
    });
  });
}
