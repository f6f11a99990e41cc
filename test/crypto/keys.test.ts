import { describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { generateKey, generateRootKey, hasValidChecksum, hashKey, keyStart } from '../../src/crypto/keys.ts';
import { isWellFormedRootKey } from '../../src/domain/root-key-format.ts';
import { B58, expectedChecksum } from '../helpers/formats.ts';

describe('key material (crypto/keys)', () => {
  test('hashKey matches the SPEC test vector', () => {
    assert.equal(hashKey('MVgWNsyPmv6VthC9moCNAPwS'), 'CptSN3vQ0shZLIsdT5c/tlpeFK/qqxY0R/aQNCfKhWs=');
  });

  test('generateRootKey is kh_root_ + base58 of at least 128 bits, well formed, and different every time', () => {
    const keys = Array.from({ length: 50 }, generateRootKey);
    for (const k of keys) {
      // 33 base58 characters carry 193 bits (22 would be the minimum for 128), then the 6-character checksum.
      assert.match(k, new RegExp(`^kh_root_${B58}{39}$`));
      assert.equal(k.slice(-6), expectedChecksum(k.slice(0, -6)), k);
      assert.equal(isWellFormedRootKey(k), true, k);
    }
    assert.equal(new Set(keys).size, keys.length);
  });

  test('isWellFormedRootKey refuses anything else', () => {
    const good = generateRootKey();
    for (const bad of [
      '',
      'kh_root_',
      'kh_root_short',
      `KH_ROOT_${good.slice(8)}`,
      `sk_${good.slice(8)}`,
      good.slice(8),
      `kh_root_${'0'.repeat(30)}`,
      `kh_root_${'l'.repeat(30)}`,
      `${good} `,
      `kh_root_${'a'.repeat(65)}`,
    ]) {
      assert.equal(isWellFormedRootKey(bad), false, JSON.stringify(bad));
    }
    assert.equal(isWellFormedRootKey(`kh_root_${'a'.repeat(22)}`), true);
    assert.equal(isWellFormedRootKey(`kh_root_${'a'.repeat(64)}`), true);
  });

  test('generateKey: <prefix>_ + base58, start is prefix_ + 4 characters', () => {
    const { key, start } = generateKey('sk', 16);
    assert.match(key, new RegExp(`^sk_${B58}{22}${B58}{6}$`));
    assert.equal(key.slice(-6), expectedChecksum(key.slice(0, -6)));
    assert.equal(start, key.slice(0, 7));
    assert.match(start, new RegExp(`^sk_${B58}{4}$`));
    assert.notEqual(generateKey('sk', 16).key, key);
  });

  test('generateKey without a prefix: bare base58, start is its first 4 characters', () => {
    const { key, start } = generateKey(undefined, 16);
    assert.match(key, new RegExp(`^${B58}{28}$`));
    assert.equal(key.slice(-6), expectedChecksum(key.slice(0, -6)));
    assert.equal(start, key.slice(0, 4));
  });

  test('generateKey length follows byteLength', () => {
    const { key } = generateKey('p', 255);
    // 255 random bytes are 2040 bits: at most 349 base58 characters, then 6 of checksum.
    assert.equal(key.length, 2 + 349 + 6);
    assert.equal(key.slice(-6), expectedChecksum(key.slice(0, -6)));
  });

  test('the checksum is CRC-32 (zlib) of the UTF-8 bytes before it, base58, padded with 1 to 6 characters', () => {
    for (let i = 0; i < 200; i++) {
      const { key } = generateKey(i % 2 ? 'sk' : undefined, 16 + (i % 40));
      assert.equal(hasValidChecksum(key), true, key);
      assert.equal(key.slice(-6), expectedChecksum(key.slice(0, -6)), key);
    }
    // Known values: CRC-32 of "" is 0, so its checksum is all padding; "123456789" is the CRC's check value 0xCBF43926.
    assert.equal(expectedChecksum(''), '111111');
    assert.equal(hasValidChecksum('sk_abc111111'), false);
    assert.equal(expectedChecksum('123456789'), '6DNX4R');
    assert.equal(hasValidChecksum('123456789' + '6DNX4R'), true);
  });

  test('a corrupted checksum, an old key or a too-short string is not a checksummed key', () => {
    const { key } = generateKey('sk', 16);
    const last = key.at(-1) === 'z' ? 'y' : 'z';
    assert.equal(hasValidChecksum(key.slice(0, -1) + last), false);
    assert.equal(hasValidChecksum(`x${key.slice(1)}`), false, 'a changed body changes the checksum');
    assert.equal(hasValidChecksum('MVgWNsyPmv6VthC9moCNAPwS'), false);
    assert.equal(hasValidChecksum('111111'), false);
  });

  test('keyStart', () => {
    assert.equal(keyStart('sk_abcdefgh', 'sk'), 'sk_abcd');
    assert.equal(keyStart('abcdefgh'), 'abcd');
    assert.equal(keyStart('abcdefgh', 'zz'), 'abcd');
    assert.equal(keyStart('kh_root_WXYZ1234', 'kh_root'), 'kh_root_WXYZ');
  });
});

describe('docs/leaked-keys.md', () => {
  const doc = readFileSync(new URL('../../docs/leaked-keys.md', import.meta.url), 'utf8');
  /** The regular expression of the table row whose shape starts with `shape`. */
  const regexOf = (shape: string): RegExp => {
    const row = doc.split('\n').find((l) => l.startsWith(`| ${shape}`));
    assert.ok(row, `no row "${shape}"`);
    return new RegExp(/`([^`]+)`/.exec(row.split('|')[2])![1]);
  };

  test('the regular expression of each shape matches the keys Keyhold makes, embedded in text', () => {
    const inText = (k: string) => `token = "${k}";`;
    assert.match(inText(generateRootKey()), regexOf('root key'));
    assert.match(inText(generateKey('sk_live', 16).key), regexOf('key of one prefix, default'));
    for (const bytes of [16, 32, 255]) {
      assert.match(inText(generateKey('sk_live', bytes).key), regexOf('key of one prefix, any'));
      assert.match(inText(generateKey('acme', bytes).key), regexOf('key with any prefix'));
      assert.match(inText(generateKey(undefined, bytes).key), regexOf('key without a prefix'));
    }
    assert.doesNotMatch(inText(generateKey('sk_live', 32).key), regexOf('key of one prefix, default'));
  });

  test('the test vector of the checksum', () => {
    assert.match(doc, /checksum of `123456789` \(CRC-32 `0xCBF43926`\) is `6DNX4R`/);
    assert.equal(expectedChecksum('123456789'), '6DNX4R');
  });
});
