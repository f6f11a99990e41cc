import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handOverBootstrapKey } from '../../src/start/bootstrap-key.ts';

const KEY = 'kh_root_2Sz1ivgX1UftqPCnW5iTV8BoEpqkWCNeQ';

describe('handOverBootstrapKey', () => {
  test('on a terminal the key is shown there and no file is written', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'keyhold-bootkey-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const shown: string[] = [];
    const file = join(dir, 'bootstrap-root-key');
    assert.equal(handOverBootstrapKey(KEY, { isTTY: true, write: (s: string) => shown.push(s) }, file), undefined);
    assert.match(shown.join(''), new RegExp(`shown once.*\\n\\n  ${KEY}\\n`, 's'));
    assert.equal(existsSync(file), false);
  });

  test('otherwise it goes to a new file of mode 0600 (an older file is replaced, its mode not kept), not to the output', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'keyhold-bootkey-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'nested', 'bootstrap-root-key');
    const shown: string[] = [];
    const terminal = { isTTY: false, write: (s: string) => shown.push(s) };
    assert.equal(handOverBootstrapKey('kh_root_old', terminal, file), file);
    chmodSync(file, 0o644);
    writeFileSync(file, 'kh_root_old\n');
    assert.equal(handOverBootstrapKey(KEY, terminal, file), file);
    assert.equal(readFileSync(file, 'utf8'), `${KEY}\n`);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(shown, []);
  });
});
