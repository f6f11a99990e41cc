import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKey, generateRootKey, hashKey, isWellFormedRootKey, keyStart } from '../../src/crypto/keys.ts';
import { B58 } from '../helpers/formats.ts';

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
