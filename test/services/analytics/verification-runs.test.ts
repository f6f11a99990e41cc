import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';
import type { Store } from '../../../src/store/store.ts';
import { writeVerifications } from '../../../src/services/analytics/verification-writes.ts';
import type { VerificationEvent } from '../../../src/services/verification/verification-recorder.ts';
import type { VerifyCode } from '../../../src/domain/verify-codes.ts';

// A batch's minute rows when events come in runs of one group (a hot key), which writeVerifications sums without
// building each event's id: runs that cross a minute, change outcome, identity or tags, and tags equal but in another
// array, must give the same rows as a plain tally of every event.

/** A deterministic pseudo-random sequence (LCG), so a failing run can be replayed. */
const prng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};

const T0 = Date.UTC(2025, 5, 30, 23, 58); // runs cross minutes, an hour, a day and a month
const SHARED = ['plan:pro', 'region'];
const TAG_SETS: Array<() => readonly string[] | undefined> = [
  () => undefined,
  () => [],
  () => SHARED,
  () => [...SHARED], // the same tags in another array
  () => ['other'],
];

/** `n` events in runs of up to 30 of one group, over three keys, time moving 0–7 s per event. */
function runs(ws: string, n: number, seed: number): VerificationEvent[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const events: VerificationEvent[] = [];
  let time = T0;
  while (events.length < n) {
    const keyId = pick(['key_a', 'key_b', 'key_c']);
    const code = pick<VerifyCode>(['VALID', 'VALID', 'RATE_LIMITED']);
    const identityId = pick([null, 'id_1']);
    const externalId = identityId ? 'user_1' : pick([null, undefined]);
    const tags = pick(TAG_SETS);
    for (let i = Math.ceil(rand() * 30); i > 0 && events.length < n; i--) {
      time += Math.floor(rand() * 7_000);
      events.push({
        keyId,
        workspaceId: ws,
        apiId: 'api_runs',
        identityId,
        externalId,
        code,
        time,
        tags: tags(),
        spentCredits: pick([0, 1, 5]),
        latency: pick([0.5, 2]),
      });
    }
  }
  return events;
}

/** `key|outcome|minute|identity|external|tags` → [count, spent credits, latency sum], of events or of stored minute rows. */
type Tally = Map<string, [number, number, number]>;
const idOf = (key: string, outcome: string, minute: number, identity: string, external: string, tags: readonly string[]) =>
  `${key}|${outcome}|${minute}|${identity}|${external}|${JSON.stringify(tags)}`;

function tally(events: VerificationEvent[]): Tally {
  const t: Tally = new Map();
  for (const e of events) {
    const id = idOf(e.keyId, e.code, e.time - (e.time % 60_000), e.identityId ?? '', e.externalId ?? '', e.tags ?? []);
    const sums = t.get(id) ?? [0, 0, 0];
    t.set(id, [sums[0] + 1, sums[1] + (e.spentCredits ?? 0), sums[2] + (e.latency ?? 0)]);
  }
  return t;
}

async function storedMinutes(store: Store, ws: string): Promise<Tally> {
  const rows = await store.db.selectFrom('analytics_key_verifications_per_minute').selectAll().where('workspace_id', '=', ws).execute();
  const t: Tally = new Map();
  for (const r of rows) {
    const tags = typeof r.tags === 'string' ? (JSON.parse(r.tags) as string[]) : (r.tags as string[]);
    const id = idOf(r.key_id, r.outcome, Number(r.time), r.identity_id, r.external_id, tags);
    assert.ok(!t.has(id), `one row per group: ${id}`);
    t.set(id, [Number(r.count), Number(r.spent_credits), Number(r.latency_sum)]);
  }
  return t;
}

const sorted = (t: Tally) => [...t].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

for (const dialect of DIALECTS) {
  describe(`a batch of events in runs (${dialect})`, () => {
    let s: Awaited<ReturnType<typeof freshStore>>;
    before(async () => {
      s = await freshStore(dialect);
    });
    after(() => s.close());

    for (const seed of [1, 2, 3]) {
      test(`seed ${seed}: the minute rows are the tally of every event, and the by_key form its sum over tags`, async () => {
        const ws = `ws_runs_${seed}`;
        const events = runs(ws, 2_000, seed);
        await writeVerifications(s.store.db, events, 'local', dialect);
        const expected = tally(events);
        assert.ok(expected.size > 50 && expected.size < 1_500, `runs give some groups, not one per event: ${expected.size}`);
        assert.deepEqual(sorted(await storedMinutes(s.store, ws)), sorted(expected));

        const byKey = new Map<string, number>();
        for (const e of events) {
          const id = `${e.keyId}|${e.code}|${e.time - (e.time % 60_000)}|${e.identityId ?? ''}|${e.externalId ?? ''}`;
          byKey.set(id, (byKey.get(id) ?? 0) + 1);
        }
        const rows = await s.store.db
          .selectFrom('analytics_key_verifications_per_minute_by_key')
          .selectAll()
          .where('workspace_id', '=', ws)
          .execute();
        const stored = new Map(
          rows.map((r) => [`${r.key_id}|${r.outcome}|${Number(r.time)}|${r.identity_id}|${r.external_id}`, Number(r.count)]),
        );
        assert.deepEqual(sorted(stored as never), sorted(byKey as never));
      });
    }
  });
}
