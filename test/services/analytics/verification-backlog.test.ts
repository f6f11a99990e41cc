import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VerificationBacklog } from '../../../src/services/analytics/verification-backlog.ts';
import { ArrayBacklog } from '../../../src/services/analytics/array-backlog.ts';
import { EventQueue, type Backlog } from '../../../src/services/analytics/event-queue.ts';
import { unpackVerifications, type PackedVerifications } from '../../../src/services/analytics/packed-verifications.ts';
import type { VerificationEvent } from '../../../src/services/verification/verification-recorder.ts';
import { RECORDED_CODES } from '../../../src/services/verification/verification-recorder.ts';
import { prng } from '../../helpers/prng.ts';

const T0 = Date.UTC(2026, 10, 1);

/** An event of one of few keys (so strings repeat) or of a key never seen before, every field varied. */
function eventOf(n: number, random: () => number): VerificationEvent {
  const k = random() < 0.2 ? `key_new_${n}` : `key_${Math.floor(random() * 5)}`;
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
  return {
    keyId: k,
    workspaceId: pick(['ws_1', 'ws_2']),
    apiId: pick(['api_1', `api_${n % 7}`]),
    identityId: pick([null, 'id_1', `id_${n}`]),
    externalId: pick([undefined, null, 'user ü "1"', `user_${n}`]),
    code: pick(RECORDED_CODES),
    time: T0 + n * 37.5,
    requestId: pick([undefined, `req_${n}`, `req_ü_${n}\t`]),
    tags: pick([undefined, [], ['a', 'b'], [`t=${n}`, 'ü,"x"']]),
    spentCredits: pick([undefined, 0, n]),
    latency: pick([undefined, n / 8]),
  };
}

/** The event as it comes back from a batch: absent fields as unpackVerifications gives them. */
function stored(e: VerificationEvent): VerificationEvent {
  return {
    keyId: e.keyId,
    workspaceId: e.workspaceId,
    apiId: e.apiId,
    identityId: e.identityId,
    externalId: e.externalId ?? null,
    tags: e.tags && e.tags.length > 0 ? e.tags : undefined,
    code: e.code,
    time: e.time,
    spentCredits: e.spentCredits ?? 0,
    latency: e.latency ?? 0,
    requestId: e.requestId || undefined,
  };
}

/**
 * The same events, in order. Compared one by one: a failing deepEqual of two long arrays has node:assert build a diff
 * of them, which takes minutes.
 */
function assertSameEvents(actual: VerificationEvent[], expected: VerificationEvent[], what: string): void {
  assert.equal(actual.length, expected.length, `${what}: events`);
  for (let i = 0; i < actual.length; i++) assert.deepEqual(actual[i], expected[i], `${what}: event ${i}`);
}

for (const seed of [1, 7, 2026]) {
  test(`seed ${seed}: pushes, drops, takes and put-backs give the events an array would, in order (model check)`, () => {
    const random = prng(seed);
    const backlog = new VerificationBacklog();
    let model: VerificationEvent[] = [];
    /** Batches taken and not yet put back or written: [the batch, the events it should hold]. */
    const out: Array<[PackedVerifications, VerificationEvent[]]> = [];
    let n = 0;
    for (let step = 0; step < 4_000; step++) {
      const op = random();
      if (op < 0.6) {
        // A burst of pushes: the columns grow past their first room (1,024) and move when half is dropped.
        for (let i = Math.floor(random() * 400); i > 0; i--) {
          const e = eventOf(n++, random);
          backlog.push(e);
          model.push(e);
        }
      } else if (op < 0.75) {
        const k = Math.floor(random() * (model.length + 1));
        backlog.dropOldest(k);
        model = model.slice(k);
      } else if (op < 0.9 && model.length > 0) {
        const k = 1 + Math.floor(random() * model.length);
        out.push([backlog.take(k), model.slice(0, k)]);
        model = model.slice(k);
      } else if (out.length > 0) {
        // The newest batch taken fails and comes back in front (the queue writes one batch at a time); or it is
        // written: its events are what was taken, even after the backlog moved on.
        const [batch, events] = out.pop()!;
        assertSameEvents(unpackVerifications(structuredClone(batch)), events.map(stored), `step ${step}: a taken batch`);
        if (random() < 0.5) {
          backlog.putBack(batch);
          model = events.concat(model);
        }
      }
      assert.equal(backlog.length, model.length, `step ${step}: length`);
    }
    const rest = backlog.take(model.length);
    assertSameEvents(unpackVerifications(rest), model.map(stored), 'the rest');
    assert.equal(backlog.length, 0);
  });
}

test("while the store is down and every event is of a new key, a batch holds only its own events' strings", () => {
  const backlog = new VerificationBacklog();
  // The queue full, each event recorded dropping the oldest; every key, identity, external id and tag set new.
  for (let n = 0; n < 200_000; n++) {
    backlog.push({
      keyId: `key_${n}`,
      workspaceId: 'ws_1',
      apiId: 'api_1',
      identityId: `id_${n}`,
      externalId: `user_${n}`,
      tags: [`t=${n}`],
      code: 'VALID',
      time: T0 + n,
    });
    if (backlog.length > 1_000) backlog.dropOldest(1);
  }
  const first = backlog.take(400);
  const rest = backlog.take(backlog.length);
  for (const [batch, from, count] of [
    [first, 199_000, 400],
    [rest, 199_400, 600],
  ] as const) {
    const events = unpackVerifications(batch);
    assert.deepEqual(
      events.map((e) => e.keyId),
      Array.from({ length: count }, (_, i) => `key_${from + i}`),
    );
    // Four strings of each event and the workspace's and API's ids, each once.
    assert.equal(batch.strings.length, 4 * count + 2);
    assert.equal(new Set(batch.strings).size, batch.strings.length);
  }
});

/** An EventQueue whose writes wait until the test settles them, keeping what each write was given. */
class HeldWrites<B> extends EventQueue<VerificationEvent, B> {
  written: VerificationEvent[] = [];
  pending: { settle: (ok: boolean) => void } | undefined;
  readonly #events: (b: B) => VerificationEvent[];
  constructor(backlog: Backlog<VerificationEvent, B>, capacity: number, maxBatch: number, events: (b: B) => VerificationEvent[]) {
    super('test events', capacity, backlog, { maxBatch, onError: () => {} });
    this.#events = events;
  }
  add(e: VerificationEvent): void {
    this.enqueue(e);
  }
  protected async probe(): Promise<void> {}
  protected write(batch: B): Promise<void> {
    const copy = structuredClone(batch); // as the writer thread is sent it
    return new Promise((resolve, reject) => {
      this.pending = {
        settle: (ok) => {
          if (!ok) return reject(new Error('store down'));
          this.written.push(...this.#events(copy));
          resolve();
        },
      };
    });
  }
}

// Seeds whose runs both write and drop (the two checks at the end).
for (const seed of [1, 2, 4]) {
  test(`seed ${seed}: through EventQueue, the columns hold, drop and write what an array would (writes failing and not)`, async () => {
    const random = prng(seed);
    const capacity = 1 + Math.floor(random() * 3_000);
    const maxBatch = 1 + Math.floor(random() * capacity);
    const array = new HeldWrites<VerificationEvent[]>(new ArrayBacklog(), capacity, maxBatch, (b) => b.map(stored));
    const columns = new HeldWrites<PackedVerifications>(new VerificationBacklog(), capacity, maxBatch, unpackVerifications);
    let n = 0;
    for (let step = 0; step < 1_500; step++) {
      const op = random();
      if (op < 0.5) {
        for (let i = Math.floor(random() * 120); i > 0; i--) {
          const e = eventOf(n++, random);
          array.add(e);
          columns.add(e);
        }
      } else if (op < 0.8) {
        array.flush().catch(() => {});
        columns.flush().catch(() => {});
      } else if (array.pending) {
        const ok = random() < 0.5;
        array.pending.settle(ok);
        columns.pending!.settle(ok);
        array.pending = columns.pending = undefined;
      }
      await new Promise(setImmediate);
      await new Promise(setImmediate);
      assert.equal(columns.held, array.held, `step ${step}: held`);
      assert.equal(columns.dropped, array.dropped, `step ${step}: dropped`);
    }
    assertSameEvents(columns.written, array.written, 'written');
    assert.ok(array.written.length > 0, 'the run wrote events');
    assert.ok(array.dropped > 0, 'the run dropped events');
  });
}
