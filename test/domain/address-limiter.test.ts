import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AddressLimiter } from '../../src/domain/address-limiter.ts';

test('counts per address within a fixed window, and starts again in the next one', () => {
  const limiter = new AddressLimiter(10, { windowMs: 1000 });
  limiter.count('a', 5_000);
  limiter.count('a', 5_999);
  limiter.count('b', 5_500);
  assert.equal(limiter.countOf('a', 5_999), 2, 'countOf does not count');
  assert.equal(limiter.countOf('b', 5_999), 1);
  assert.equal(limiter.countOf('a', 6_000), 0, 'a new window');
  limiter.count('a', 6_000);
  assert.equal(limiter.countOf('a', 6_000), 1);
  assert.equal(limiter.countOf('unknown', 6_000), 0);
});

test('isOver once an address reached its limit in the window, without counting; other addresses unaffected', () => {
  const limiter = new AddressLimiter(3);
  for (let i = 0; i < 2; i++) limiter.count('a', i);
  assert.equal(limiter.isOver('a', 2), false);
  limiter.count('a', 2);
  assert.equal(limiter.isOver('a', 3), true);
  assert.equal(limiter.isOver('a', 4), true);
  assert.equal(limiter.countOf('a', 4), 3, 'isOver counts nothing');
  assert.equal(limiter.isOver('b', 4), false);
  assert.equal(limiter.isOver('a', 60_000), false, 'the next window');
});

test('take: `limit` requests pass in a window, the next are refused and not counted', () => {
  const limiter = new AddressLimiter(120);
  const answers = Array.from({ length: 125 }, (_, i) => limiter.take('10.0.0.1', i));
  assert.deepEqual(answers.slice(0, 120), Array(120).fill(true));
  assert.deepEqual(answers.slice(120), Array(5).fill(false));
  assert.equal(limiter.countOf('10.0.0.1', 200), 120);
  assert.equal(limiter.take('10.0.0.2', 200), true, 'another address');
  assert.equal(limiter.take('10.0.0.1', 60_000), true, 'the next window');
});

test('a limit of 0 never limits and counts nothing', () => {
  const limiter = new AddressLimiter(0);
  for (let i = 0; i < 1000; i++) assert.equal(limiter.take('a', i), true);
  limiter.count('a', 1000);
  assert.equal(limiter.isOver('a', 1001), false);
  assert.equal(limiter.countOf('a', 1001), 0);
});

test('tracks at most maxAddresses addresses: the one whose window started first goes first', () => {
  const limiter = new AddressLimiter(100, { maxAddresses: 3 });
  for (const address of ['a', 'b', 'c']) limiter.count(address, 0);
  limiter.count('a', 1); // counted again in the same window: its window still started first
  limiter.count('d', 2);
  assert.equal(limiter.countOf('a', 3), 0, 'a dropped');
  assert.equal(limiter.countOf('b', 3), 1);
  assert.equal(limiter.countOf('c', 3), 1);
  assert.equal(limiter.countOf('d', 3), 1);
});

test('retryAfterSeconds: whole seconds to the window end, at least 1', () => {
  const limiter = new AddressLimiter(10);
  assert.equal(limiter.retryAfterSeconds(0), 60);
  assert.equal(limiter.retryAfterSeconds(59_500), 1);
  assert.equal(limiter.retryAfterSeconds(59_999), 1);
  assert.equal(limiter.retryAfterSeconds(30_000), 30);
  assert.equal(new AddressLimiter(10, { windowMs: 10_000 }).retryAfterSeconds(2_500), 8);
});
