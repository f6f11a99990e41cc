import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lastRefillDue, refillIsDue } from '../../src/domain/refill.ts';

const at = (iso: string) => Date.parse(iso);

describe('refill schedule (SPEC §4)', () => {
  test('daily: due at 00:00 UTC today', () => {
    assert.equal(lastRefillDue({ interval: 'daily', refillDay: null }, at('2026-03-15T13:45:00Z')), at('2026-03-15T00:00:00Z'));
    assert.equal(lastRefillDue({ interval: 'daily', refillDay: null }, at('2026-03-15T00:00:00Z')), at('2026-03-15T00:00:00Z'));
  });
  test("monthly: this month's refill day once it has come, else last month's; default day 1", () => {
    assert.equal(lastRefillDue({ interval: 'monthly', refillDay: 10 }, at('2026-03-15T12:00:00Z')), at('2026-03-10T00:00:00Z'));
    assert.equal(lastRefillDue({ interval: 'monthly', refillDay: 20 }, at('2026-03-15T12:00:00Z')), at('2026-02-20T00:00:00Z'));
    assert.equal(lastRefillDue({ interval: 'monthly', refillDay: null }, at('2026-03-15T12:00:00Z')), at('2026-03-01T00:00:00Z'));
    assert.equal(lastRefillDue({ interval: 'monthly', refillDay: 5 }, at('2026-01-03T00:00:00Z')), at('2025-12-05T00:00:00Z'));
  });
  test("a refill day past the month's end falls on its last day: 31 in April (30 days), in February (28/29)", () => {
    assert.equal(lastRefillDue({ interval: 'monthly', refillDay: 31 }, at('2026-04-30T08:00:00Z')), at('2026-04-30T00:00:00Z'));
    assert.equal(lastRefillDue({ interval: 'monthly', refillDay: 31 }, at('2026-04-29T08:00:00Z')), at('2026-03-31T00:00:00Z'));
    assert.equal(lastRefillDue({ interval: 'monthly', refillDay: 31 }, at('2026-02-28T00:00:00Z')), at('2026-02-28T00:00:00Z'));
    assert.equal(lastRefillDue({ interval: 'monthly', refillDay: 30 }, at('2028-02-29T01:00:00Z')), at('2028-02-29T00:00:00Z'));
  });
  test('due exactly once per period', () => {
    const s = { interval: 'monthly' as const, refillDay: 31 };
    assert.equal(refillIsDue(s, null, at('2026-04-30T08:00:00Z')), true);
    assert.equal(refillIsDue(s, at('2026-04-30T00:00:01Z'), at('2026-04-30T23:00:00Z')), false);
    assert.equal(refillIsDue(s, at('2026-04-30T00:00:01Z'), at('2026-05-30T23:00:00Z')), false);
    assert.equal(refillIsDue(s, at('2026-04-30T00:00:01Z'), at('2026-05-31T00:00:00Z')), true);
  });
});
