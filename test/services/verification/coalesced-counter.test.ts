import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoalescedCounter, type GuardedChange, type GuardedOutcome } from '../../../src/services/verification/coalesced-counter.ts';

/**
 * A counter in memory with a guard, recording every statement it is asked to run (the amounts). `hold()`
 * makes statements wait until the returned function is called.
 */
function guardedCounter(start: number, step: 1 | -1, allowed: (value: number, amount: number) => boolean) {
  let value = start;
  const statements: number[] = [];
  let failNext = false;
  let gate: Promise<void> | undefined;
  const change: GuardedChange<number> = async (amount) => {
    statements.push(amount);
    await new Promise((r) => setImmediate(r)); // a statement takes at least one turn of the event loop
    await gate;
    if (failNext) {
      failNext = false;
      throw new Error('the store went away');
    }
    if (!allowed(value, amount)) return { applied: false, value };
    value += step * amount;
    return { applied: true, value };
  };
  return {
    change,
    statements,
    get value() {
      return value;
    },
    failOnce() {
      failNext = true;
    },
    hold(): () => void {
      let open!: () => void;
      gate = new Promise((r) => {
        open = r;
      });
      return () => {
        gate = undefined;
        open();
      };
    },
  };
}

const summary = (outcomes: GuardedOutcome[]) => outcomes.map((o) => `${o.applied ? 'ok' : 'no'}:${o.value}`);

describe('CoalescedCounter', () => {
  test('changes waiting together that all fit run as ONE statement; each gets the value it would have seen alone', async () => {
    const credits = guardedCounter(10, -1, (v, n) => v >= n);
    const c = new CoalescedCounter<number>(-1);
    const outcomes = await Promise.all([1, 2, 3].map((n) => c.change('key', n, credits.change)));
    assert.deepEqual(summary(outcomes), ['ok:9', 'ok:7', 'ok:4']);
    assert.deepEqual(credits.statements, [6]);
    assert.equal(credits.value, 4);

    const count = guardedCounter(0, 1, (v, n) => v + n <= 10);
    const up = new CoalescedCounter<number>(1);
    assert.deepEqual(summary(await Promise.all([4, 1].map((n) => up.change('bucket', n, count.change)))), ['ok:4', 'ok:5']);
    assert.deepEqual(count.statements, [5]);
  });

  test('when the sum does not fit, each runs alone in call order; one behind a refused one of no smaller amount is refused without a statement', async () => {
    const credits = guardedCounter(6, -1, (v, n) => v >= n);
    const c = new CoalescedCounter<number>(-1);
    const outcomes = await Promise.all([3, 4, 5, 2, 1, 1].map((n) => c.change('key', n, credits.change)));
    // 3 fits (3 left); 4 is refused; 5 is refused behind it without a statement; 2 fits (1 left); 1 fits (0); 1 is refused.
    assert.deepEqual(summary(outcomes), ['ok:3', 'no:3', 'no:3', 'ok:1', 'ok:0', 'no:0']);
    assert.deepEqual(credits.statements, [16, 3, 4, 2, 1, 1]);
    assert.equal(credits.value, 0);
  });

  test('a change refused without a statement reports the counter as the changes applied before it left it', async () => {
    // A rate-limit count at 7 of 10: 4 is refused (7), 2 fits (9), 5 is refused behind the 4 — with 9, as one by one would say.
    const count = guardedCounter(7, 1, (v, n) => v + n <= 10);
    const c = new CoalescedCounter<number>(1);
    const outcomes = await Promise.all([4, 2, 5].map((n) => c.change('bucket', n, count.change)));
    assert.deepEqual(summary(outcomes), ['no:7', 'ok:9', 'no:9']);
    assert.deepEqual(count.statements, [11, 4, 2]);
  });

  test('changes made while a statement is in flight go into the next one; other counters are not held up', async () => {
    const a = guardedCounter(100, -1, (v, n) => v >= n);
    const b = guardedCounter(100, -1, (v, n) => v >= n);
    const c = new CoalescedCounter<number>(-1);
    const release = a.hold();
    const first = Promise.all([c.change('a', 1, a.change), c.change('a', 1, a.change)]);
    await new Promise((r) => setImmediate(r)); // a's first statement is now running, and held
    const second = Promise.all([c.change('a', 2, a.change), c.change('a', 2, a.change)]);
    assert.deepEqual(summary([await c.change('b', 5, b.change)]), ['ok:95'], 'b is decided while a statement of a is held');
    assert.deepEqual(a.statements, [2]);
    release();
    assert.deepEqual(summary(await first), ['ok:99', 'ok:98']);
    assert.deepEqual(summary(await second), ['ok:96', 'ok:94']);
    assert.deepEqual(a.statements, [2, 4]);
  });

  test('a failing statement rejects every change it carried; the next batch runs normally', async () => {
    const credits = guardedCounter(10, -1, (v, n) => v >= n);
    const c = new CoalescedCounter<number>(-1);
    credits.failOnce();
    const failed = await Promise.allSettled([1, 1].map((n) => c.change('key', n, credits.change)));
    assert.deepEqual(
      failed.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.equal(credits.value, 10);
    assert.deepEqual(summary([await c.change('key', 1, credits.change)]), ['ok:9']);
  });
});
