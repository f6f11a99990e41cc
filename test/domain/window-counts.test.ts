import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WindowCounts } from '../../src/domain/window-counts.ts';

test('counts per key within a fixed window, and starts again in the next one', () => {
  const counts = new WindowCounts(1000, 10);
  assert.equal(counts.add('a', 5_000), 1);
  assert.equal(counts.add('a', 5_999), 2);
  assert.equal(counts.add('b', 5_500), 1);
  assert.equal(counts.get('a', 5_999), 2, 'get does not count');
  assert.equal(counts.get('a', 6_000), 0, 'a new window');
  assert.equal(counts.add('a', 6_000), 1);
  assert.equal(counts.get('unknown', 6_000), 0);
});

test('tracks at most maxKeys keys: the one whose window started first goes first', () => {
  const counts = new WindowCounts(60_000, 3);
  for (const key of ['a', 'b', 'c']) counts.add(key, 0);
  counts.add('a', 1); // counted again in the same window: its window still started first
  counts.add('d', 2);
  assert.equal(counts.get('a', 3), 0, 'a dropped');
  assert.equal(counts.get('b', 3), 1);
  assert.equal(counts.get('c', 3), 1);
  assert.equal(counts.get('d', 3), 1);
});

test('retryAfterSeconds: whole seconds to the window end, at least 1', () => {
  const counts = new WindowCounts(60_000, 10);
  assert.equal(counts.retryAfterSeconds(0), 60);
  assert.equal(counts.retryAfterSeconds(59_500), 1);
  assert.equal(counts.retryAfterSeconds(59_999), 1);
  assert.equal(counts.retryAfterSeconds(30_000), 30);
});
