import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore } from '../../helpers/harness.ts';
import type { Store } from '../../../src/store/store.ts';
import { writeVerifications } from '../../../src/services/analytics/verification-writes.ts';
import type { VerificationEvent } from '../../../src/services/verification/verification-recorder.ts';
import type { VerifyCode } from '../../../src/domain/verify-codes.ts';
import { prng } from '../../helpers/prng.ts';

// A batch's roll-up rows when events come in runs of one group (a hot key), which writeVerifications sums without
// building each event's id: runs that cross a minute, an hour, a day and a month, and change key, workspace, API,
// outcome, identity, external id or tags (equal tags in another array, other tags of the same length), must give the
// same rows as a plain tally of every event, at every grain.

const T0 = Date.UTC(2025, 5, 30, 23, 40); // the runs cross minutes, an hour, a day and a month
const SHARED = ['plan:pro', 'region'];
const TAG_SETS: Array<() => readonly string[] | undefined> = [
  () => undefined,
  () => [],
  () => SHARED,
  () => [...SHARED], // the same tags in another array
  () => ['plan:free', 'region'], // others of the same length
  () => ['other'],
];

/** What each member of a group takes; runs differ from the run before in one member, the hardest case for runs. */
const MEMBERS = {
  keyId: ['key_a', 'key_b', 'key_c'],
  workspaceId: [0, 1], // an index into the test's two workspaces
  apiId: ['api_one', 'api_two'],
  identityId: [null, '', 'id_1', 'id_2'],
  externalId: [null, undefined, '', 'user_1', 'user_2'],
  code: ['VALID', 'RATE_LIMITED', 'USAGE_EXCEEDED'] as VerifyCode[],
  tags: TAG_SETS,
};
type Member = keyof typeof MEMBERS;

/**
 * `n` events in runs of up to 30 of one group, over 2 workspaces, 2 APIs and 3 keys, time moving 0–7 s per event;
 * each run changes one member of the previous run's group (to another of its values).
 */
function runs(ws: readonly string[], n: number, seed: number): VerificationEvent[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const current: { [M in Member]: (typeof MEMBERS)[M][number] } = {
    keyId: 'key_a',
    workspaceId: 0,
    apiId: 'api_one',
    identityId: null,
    externalId: null,
    code: 'VALID',
    tags: TAG_SETS[0],
  };
  const events: VerificationEvent[] = [];
  let time = T0;
  while (events.length < n) {
    const member = pick(Object.keys(MEMBERS) as Member[]);
    const others = (MEMBERS[member] as readonly unknown[]).filter((v) => v !== current[member]);
    (current as Record<Member, unknown>)[member] = pick(others);
    const { workspaceId, tags, ...group } = current;
    for (let i = Math.ceil(rand() * 30); i > 0 && events.length < n; i--) {
      time += Math.floor(rand() * 7_000);
      events.push({ ...group, workspaceId: ws[workspaceId], time, tags: tags(), spentCredits: pick([0, 1, 5]), latency: pick([0.5, 2]) });
    }
  }
  return events;
}

const GRAINS = {
  minute: (t: number) => t - (t % 60_000),
  hour: (t: number) => t - (t % 3_600_000),
  day: (t: number) => t - (t % 86_400_000),
  month: (t: number) => Date.UTC(new Date(t).getUTCFullYear(), new Date(t).getUTCMonth(), 1),
};
type Grain = keyof typeof GRAINS;

/** `ws|api|key|outcome|bucket|identity|external|tags` → [count, spent credits, latency sum]. */
type Tally = Map<string, [number, number, number]>;
const idOf = (
  r: { ws: string; api: string; key: string; outcome: string; bucket: number; identity: string; external: string },
  tags: readonly string[],
) => `${r.ws}|${r.api}|${r.key}|${r.outcome}|${r.bucket}|${r.identity}|${r.external}|${JSON.stringify(tags)}`;

function tally(events: VerificationEvent[], grain: Grain): Tally {
  const t: Tally = new Map();
  for (const e of events) {
    const id = idOf(
      {
        ws: e.workspaceId,
        api: e.apiId,
        key: e.keyId,
        outcome: e.code,
        bucket: GRAINS[grain](e.time),
        identity: e.identityId ?? '',
        external: e.externalId ?? '',
      },
      e.tags ?? [],
    );
    const sums = t.get(id) ?? [0, 0, 0];
    t.set(id, [sums[0] + 1, sums[1] + (e.spentCredits ?? 0), sums[2] + (e.latency ?? 0)]);
  }
  return t;
}

async function stored(store: Store, ws: readonly string[], grain: Grain): Promise<Tally> {
  const rows = await store.db.selectFrom(`analytics_key_verifications_per_${grain}`).selectAll().where('workspace_id', 'in', ws).execute();
  const t: Tally = new Map();
  for (const r of rows) {
    const tags = typeof r.tags === 'string' ? (JSON.parse(r.tags) as string[]) : (r.tags as string[]);
    const id = idOf(
      {
        ws: r.workspace_id,
        api: r.key_space_id,
        key: r.key_id,
        outcome: r.outcome,
        bucket: Number(r.time),
        identity: r.identity_id,
        external: r.external_id,
      },
      tags,
    );
    assert.ok(!t.has(id), `one row per group: ${id}`);
    t.set(id, [Number(r.count), Number(r.spent_credits), Number(r.latency_sum)]);
  }
  return t;
}

/** A tally without its tags (the by_key form's group), counts only. */
function withoutTags(t: Tally): Map<string, number> {
  const out = new Map<string, number>();
  for (const [id, [count]] of t) {
    const head = id.slice(0, id.lastIndexOf('|'));
    out.set(head, (out.get(head) ?? 0) + count);
  }
  return out;
}

const sorted = <V>(t: Map<string, V>) => [...t].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

for (const dialect of DIALECTS) {
  describe(`a batch of events in runs (${dialect})`, () => {
    let s: Awaited<ReturnType<typeof freshStore>>;
    before(async () => {
      s = await freshStore(dialect);
    });
    after(() => s.close());

    for (const seed of [1, 2, 3]) {
      test(`seed ${seed}: each grain's rows are the tally of every event, and the by_key form its sum over tags`, async () => {
        const ws = [`ws_runs_${seed}`, `ws_runs_${seed}_b`];
        const events = runs(ws, 3_000, seed);
        await writeVerifications(s.store.db, events, 'local', dialect);
        for (const grain of Object.keys(GRAINS) as Grain[]) {
          const expected = tally(events, grain);
          if (grain === 'minute')
            assert.ok(expected.size > 50 && expected.size < 2_000, `runs give some groups, not one per event: ${expected.size}`);
          assert.deepEqual(sorted(await stored(s.store, ws, grain)), sorted(expected), grain);

          const rows = await s.store.db
            .selectFrom(`analytics_key_verifications_per_${grain}_by_key`)
            .selectAll()
            .where('workspace_id', 'in', ws)
            .execute();
          const byKey = new Map(
            rows.map((r) => [
              `${r.workspace_id}|${r.key_space_id}|${r.key_id}|${r.outcome}|${Number(r.time)}|${r.identity_id}|${r.external_id}`,
              Number(r.count),
            ]),
          );
          assert.deepEqual(sorted(byKey), sorted(withoutTags(expected)), `${grain} by_key`);
        }
      });
    }
  });
}
