import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withinResponsiveTime } from '../../../src/services/verification/rate-limit-failover.ts';

/** Keeps the event loop busy for `ms`, as a server under load is. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* spin */
  }
}

test('an answer within the time resolves; none rejects after about that time', async () => {
  assert.equal(await withinResponsiveTime(Promise.resolve(7), 50), 7);
  const started = performance.now();
  await assert.rejects(withinResponsiveTime(new Promise(() => {}), 50), /did not answer within 50 ms/);
  const waited = performance.now() - started;
  assert.ok(waited >= 50, `rejected after ${waited} ms`);
});

test('a rejection is passed on as it is', async () => {
  await assert.rejects(withinResponsiveTime(Promise.reject(new Error('Connection is closed.')), 50), /Connection is closed/);
});

test('an answer that arrived while the process was too busy to read it is taken, not declared late', async () => {
  // The answer is ready at 10 ms, but the loop is blocked for 150 ms: the 50 ms timer is then due before the
  // answer is read. It must resolve with the answer.
  const answer = new Promise<string>((resolve) => setTimeout(() => resolve('answered'), 10));
  const decided = withinResponsiveTime(answer, 50);
  busy(150);
  assert.equal(await decided, 'answered');
});

test('a process that stays busy keeps waiting; once it is responsive again the wait ends', async () => {
  const never = new Promise<never>(() => {});
  const started = performance.now();
  const decided = withinResponsiveTime(never, 40);
  busy(120);
  await assert.rejects(decided, /did not answer/);
  assert.ok(performance.now() - started >= 120 + 40, 'a full responsive period after the busy one');
});
