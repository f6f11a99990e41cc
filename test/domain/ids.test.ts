import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../src/domain/ids.ts';
import { BASE58_ALPHABET } from '../../src/domain/base58.ts';
import { B58 } from '../helpers/formats.ts';

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
    const ids = times.map((ms) => {
      now = ms;
      return newId('key');
    });
    for (const id of ids) assert.match(id, new RegExp(`^key_${B58}{22}$`));
    assert.deepEqual([...ids].sort(), ids);
    // Many ids, one per millisecond with random parts: still in creation order.
    const more = Array.from({ length: 200 }, (_, i) => {
      now = 1_700_000_000_000 + i;
      return newId('log');
    });
    assert.deepEqual([...more].sort(), more);
  });

  test('the base58 alphabet is in ascending ASCII order (what makes the sort work)', () => {
    assert.equal([...BASE58_ALPHABET].sort().join(''), BASE58_ALPHABET);
  });
});
