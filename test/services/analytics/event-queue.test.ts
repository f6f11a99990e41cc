import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventQueue } from '../../../src/services/analytics/event-queue.ts';
import { ArrayBacklog } from '../../../src/services/analytics/array-backlog.ts';

/** A queue whose writes wait for `open()` and then fail or succeed as told, recording what they were given. */
class GatedQueue extends EventQueue<number, number[]> {
  written: number[][] = [];
  fail = false;
  #gate: Promise<void> = Promise.resolve();
  #open: () => void = () => {};
  constructor(capacity: number, maxBatch: number) {
    super('test events', capacity, new ArrayBacklog(), { maxBatch, onError: () => {} });
  }
  add(n: number): void {
    this.enqueue(n);
  }
  hold(): void {
    this.#gate = new Promise((resolve) => {
      this.#open = resolve;
    });
  }
  open(): void {
    this.#open();
  }
  protected async probe(): Promise<void> {}
  protected async write(batch: number[]): Promise<void> {
    await this.#gate;
    if (this.fail) throw new Error('store down');
    this.written.push([...batch]);
  }
}

test('a batch that fails after events were dropped during its write comes back whole; the queue keeps the newest and writes them next', async () => {
  const q = new GatedQueue(6, 4);
  q.hold();
  q.fail = true;
  for (const n of [1, 2, 3, 4]) q.add(n); // the fourth starts a flush at once
  await new Promise(setImmediate); // it has taken 1..4 and waits at the gate
  for (const n of [5, 6, 7]) q.add(n); // 7 is one over the capacity: 5 (the oldest queued) is dropped
  assert.equal(q.held, 6);
  assert.equal(q.dropped, 1);
  q.open();
  await new Promise(setImmediate); // the write fails (its error goes to onError)
  assert.deepEqual(q.written, []);
  // The failed batch back in front of 6 and 7: six events, the capacity, and nothing else dropped.
  assert.equal(q.held, 6);
  assert.equal(q.dropped, 1);
  q.fail = false;
  await q.flush();
  assert.deepEqual(q.written.flat(), [1, 2, 3, 4, 6, 7]);
  assert.equal(q.held, 0);
});

test('a flush writes a backlog in transactions of at most maxBatch events, oldest first', async () => {
  const q = new GatedQueue(100, 4);
  q.hold();
  for (let n = 1; n <= 3; n++) q.add(n);
  q.open();
  for (let n = 4; n <= 10; n++) q.add(n); // the fourth starts a flush; the rest wait for the next
  await q.flush();
  assert.deepEqual(q.written.flat(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.ok(
    q.written.every((batch) => batch.length <= 4),
    JSON.stringify(q.written),
  );
  assert.equal(q.held, 0);
});
