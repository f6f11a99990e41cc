import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VerificationBacklog } from '../../../src/services/analytics/verification-backlog.ts';
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
        assert.deepEqual(unpackVerifications(structuredClone(batch)), events.map(stored), `step ${step}: a taken batch`);
        if (random() < 0.5) {
          backlog.putBack(batch);
          model = events.concat(model);
        }
      }
      assert.equal(backlog.length, model.length, `step ${step}: length`);
    }
    const rest = backlog.take(model.length);
    assert.deepEqual(unpackVerifications(rest), model.map(stored));
    assert.equal(backlog.length, 0);
  });
}

test('the string table holds the strings of the events held, not of every event dropped meanwhile', () => {
  const backlog = new VerificationBacklog();
  // A store that is down: the queue is full and each event recorded drops the oldest; every key is new.
  for (let n = 0; n < 200_000; n++) {
    backlog.push({ keyId: `key_${n}`, workspaceId: 'ws_1', apiId: 'api_1', identityId: `id_${n}`, code: 'VALID', time: T0 + n });
    if (backlog.length > 1_000) backlog.dropOldest(1);
  }
  const batch = backlog.take(backlog.length);
  assert.equal(batch.codes.length, 1_000);
  // The events hold 2,002 strings; the table is rebuilt once it grew by 1,000 (the events held) and 1,024 more.
  assert.ok(batch.strings.length <= 2_002 + 1_000 + 1_024 + 1, `${batch.strings.length} strings`);
  assert.deepEqual(
    unpackVerifications(batch).map((e) => e.keyId),
    Array.from({ length: 1_000 }, (_, i) => `key_${199_000 + i}`),
  );
});

test('a batch taken leaves the events behind it with a table of their own: each batch refers only to its own table', () => {
  const backlog = new VerificationBacklog();
  for (let n = 0; n < 10; n++)
    backlog.push({ keyId: `key_${n}`, workspaceId: 'ws_1', apiId: 'api_1', identityId: null, code: 'VALID', time: T0 });
  const first = backlog.take(4);
  const second = backlog.take(6);
  assert.deepEqual(
    unpackVerifications(first).map((e) => e.keyId),
    ['key_0', 'key_1', 'key_2', 'key_3'],
  );
  assert.deepEqual(
    unpackVerifications(second).map((e) => e.keyId),
    ['key_4', 'key_5', 'key_6', 'key_7', 'key_8', 'key_9'],
  );
  assert.deepEqual(new Set(second.strings), new Set(['key_4', 'key_5', 'key_6', 'key_7', 'key_8', 'key_9', 'ws_1', 'api_1']));
});
