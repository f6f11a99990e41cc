import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import type { Caller } from '../../../src/services/caller.ts';
import { AppError } from '../../../src/domain/errors.ts';
import { VerificationRecorder, type VerificationEvent } from '../../../src/services/verification/verification-recorder.ts';
import { TOP, usageRangeOf, usageSummary, type UsageRange, type UsageSummary } from '../../../src/services/analytics/usage-summary.ts';
import { runApiAnalyticsQuery } from '../../../src/services/analytics/api-query.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** Yesterday 12:30:15 UTC: every event below is in the past and within every roll-up's retention. */
const NOW = Math.floor(Date.now() / DAY) * DAY - DAY + 12 * HOUR + 30 * MIN + 15_000;

const caller = (workspaceId: string, permissions: string[]): Caller => ({
  workspaceId,
  rootKeyId: 'test',
  permissions: new Set(permissions),
  requestId: 'req_test',
});

/** Rejects with an AppError of `kind`. */
async function refused(promise: Promise<unknown>, kind: string): Promise<void> {
  await assert.rejects(promise, (err: unknown) => err instanceof AppError && err.kind === kind);
}

/** Only the outcomes that occurred, for comparing with what the test recorded. */
const occurred = (outcomes: Record<string, number>) => Object.fromEntries(Object.entries(outcomes).filter(([, n]) => n > 0));

for (const dialect of DIALECTS) {
  describe(`usage summary of the dashboard's Analytics pages (${dialect})`, () => {
    let w: World;
    let other: { workspaceId: string; root: string };
    const ids: Record<string, string> = {};
    /** Key name → what an event of it carries. */
    const keys: Record<string, Pick<VerificationEvent, 'keyId' | 'apiId' | 'identityId' | 'externalId' | 'workspaceId'>> = {};

    before(async () => {
      w = await world(dialect);
      other = await w.otherWorkspace();
      ids.a = await w.createApi('api-a');
      ids.b = await w.createApi('api-b');
      ids.c = await w.createApi('api-c');
      ids.x = await w.createApi('api-x', other.root);
      const make = async (name: string, api: string, externalId: string | null, root = w.root, workspaceId = w.workspaceId) => {
        const { keyId } = await w.createKey({ apiId: ids[api], name, ...(externalId ? { externalId } : {}) }, root);
        const row = await w.store.db.selectFrom('keys').select('identity_id').where('id', '=', keyId).executeTakeFirstOrThrow();
        keys[name] = { keyId, apiId: ids[api], identityId: row.identity_id, externalId, workspaceId };
        ids[name] = keyId;
        if (row.identity_id && externalId) ids[externalId] = row.identity_id;
      };
      await make('k1', 'a', 'alice');
      await make('k2', 'a', 'bob');
      await make('k3', 'a', null);
      await make('k4', 'b', 'alice');
      await make('k5', 'c', null);
      await make('kx', 'x', null, other.root, other.workspaceId);

      const r = new VerificationRecorder(w.store.db, { dialect });
      const rec = (key: string, code: VerificationEvent['code'], time: number, n: number, tags: string[] = [], credits = 0) => {
        for (let i = 0; i < n; i++) r.record({ ...keys[key], code, time, tags, spentCredits: credits });
      };
      rec('k1', 'VALID', NOW - 10_000, 3, ['checkout', 'eu'], 1);
      rec('k2', 'RATE_LIMITED', NOW - 10_000, 2, ['eu']);
      rec('k1', 'VALID', NOW - 30 * MIN, 2);
      rec('k3', 'USAGE_EXCEEDED', NOW - 30 * MIN, 1, ['checkout', 'checkout']);
      rec('k2', 'VALID', NOW - 5 * HOUR, 4, ['eu'], 2);
      rec('k3', 'DISABLED', NOW - 3 * DAY, 6, ['batch']);
      rec('k1', 'EXPIRED', NOW - 20 * DAY, 8);
      rec('k1', 'VALID', NOW - 40 * DAY, 7);
      rec('k4', 'VALID', NOW - 10_000, 4, ['eu']);
      rec('kx', 'VALID', NOW - 10_000, 9, ['eu']);
      // An event of another workspace that names this workspace's API, key and identity: never counted here.
      r.record({ ...keys.k1, workspaceId: other.workspaceId, code: 'VALID', time: NOW - 10_000, tags: ['eu'] });
      // API c: 12 events, the j-th tagged t01…tj, so that tag ti is on 13 - i of them.
      for (let j = 1; j <= 12; j++)
        rec(
          'k5',
          'VALID',
          NOW - 10_000,
          1,
          Array.from({ length: j }, (_, i) => `t${String(i + 1).padStart(2, '0')}`),
        );
      await r.flush();
    });
    after(() => w.close());

    const admin = () => caller(w.workspaceId, ['*']);
    const summary = (scope: Parameters<typeof usageSummary>[2], range: UsageRange, as = admin()) =>
      usageSummary(w.store.db, as, scope, range, NOW);
    const ranks = (s: UsageSummary) => ({
      keys: s.topKeys.map((k) => [k.name, k.count, k.valid, k.spentCredits]),
      identities: s.topIdentities.map((i) => [i.externalId, i.count, i.valid, i.spentCredits]),
      tags: s.topTags.map((t) => [t.tag, t.count]),
    });

    test('an API over the last hour: per-minute buckets, outcomes, credits, top keys, identities and tags', async () => {
      const s = await summary({ apiId: ids.a }, '1h');
      assert.equal(s.grain, 'minute');
      assert.equal(s.buckets.length, 60);
      const minute = NOW - (NOW % MIN);
      assert.equal(s.buckets[59].time, minute);
      assert.equal(s.from, minute - 59 * MIN);
      assert.equal(s.to, minute + MIN);
      assert.deepEqual(occurred(s.buckets[59].outcomes), { VALID: 3, RATE_LIMITED: 2 });
      assert.deepEqual([s.buckets[59].total, s.buckets[59].spentCredits], [5, 3]);
      assert.deepEqual(occurred(s.buckets[29].outcomes), { VALID: 2, USAGE_EXCEEDED: 1 });
      assert.equal(s.buckets.filter((b) => b.total > 0).length, 2);
      assert.deepEqual(occurred(s.outcomes), { VALID: 5, RATE_LIMITED: 2, USAGE_EXCEEDED: 1 });
      assert.deepEqual([s.total, s.spentCredits], [8, 3]);
      assert.deepEqual(ranks(s), {
        keys: [
          ['k1', 5, 5, 3],
          ['k2', 2, 0, 0],
          ['k3', 1, 0, 0],
        ],
        identities: [
          ['alice', 5, 5, 3],
          ['bob', 2, 0, 0],
        ],
        // A tag given twice in one verification counts once.
        tags: [
          ['eu', 5],
          ['checkout', 4],
        ],
      });
      assert.deepEqual(
        s.topKeys.map((k) => [k.keyId, k.live]),
        [
          [ids.k1, true],
          [ids.k2, true],
          [ids.k3, true],
        ],
      );
      assert.deepEqual(
        s.topIdentities.map((i) => [i.identityId, i.live]),
        [
          [ids.alice, true],
          [ids.bob, true],
        ],
      );
    });

    test('the last 24 hours and 7 days read the per-hour roll-up; the last 30 days the per-day one', async () => {
      const day = await summary({ apiId: ids.a }, '24h');
      const hour = NOW - (NOW % HOUR);
      assert.deepEqual([day.grain, day.buckets.length, day.buckets[23].time, day.from], ['hour', 24, hour, hour - 23 * HOUR]);
      assert.deepEqual(occurred(day.buckets[23].outcomes), { VALID: 5, RATE_LIMITED: 2, USAGE_EXCEEDED: 1 });
      assert.deepEqual([day.buckets[18].time, day.buckets[18].total, day.buckets[18].spentCredits], [hour - 5 * HOUR, 4, 8]);
      assert.deepEqual([day.total, day.spentCredits], [12, 11]);
      assert.deepEqual(ranks(day), {
        keys: [
          ['k2', 6, 4, 8],
          ['k1', 5, 5, 3],
          ['k3', 1, 0, 0],
        ],
        identities: [
          ['bob', 6, 4, 8],
          ['alice', 5, 5, 3],
        ],
        tags: [
          ['eu', 9],
          ['checkout', 4],
        ],
      });

      const week = await summary({ apiId: ids.a }, '7d');
      assert.deepEqual([week.grain, week.buckets.length, week.from], ['hour', 168, hour - 167 * HOUR]);
      assert.equal(week.buckets[167 - 72].outcomes.DISABLED, 6);
      assert.deepEqual(occurred(week.outcomes), { VALID: 9, RATE_LIMITED: 2, USAGE_EXCEEDED: 1, DISABLED: 6 });
      assert.equal(week.total, 18);
      assert.deepEqual(ranks(week).keys, [
        ['k3', 7, 0, 0],
        ['k2', 6, 4, 8],
        ['k1', 5, 5, 3],
      ]);
      assert.deepEqual(ranks(week).tags, [
        ['eu', 9],
        ['batch', 6],
        ['checkout', 4],
      ]);

      const month = await summary({ apiId: ids.a }, '30d');
      const today = NOW - (NOW % DAY);
      assert.deepEqual([month.grain, month.buckets.length, month.buckets[29].time, month.from], ['day', 30, today, today - 29 * DAY]);
      assert.deepEqual(
        month.buckets.flatMap((b, i) => (b.total ? [[i, b.total]] : [])),
        [
          [9, 8],
          [26, 6],
          [29, 12],
        ],
        'the event 40 days ago is outside',
      );
      assert.deepEqual([month.total, month.spentCredits], [26, 11]);
      assert.deepEqual(occurred(month.outcomes), { VALID: 9, RATE_LIMITED: 2, USAGE_EXCEEDED: 1, DISABLED: 6, EXPIRED: 8 });
      assert.deepEqual(ranks(month), {
        keys: [
          ['k1', 13, 5, 3],
          ['k3', 7, 0, 0],
          ['k2', 6, 4, 8],
        ],
        identities: [
          ['alice', 13, 5, 3],
          ['bob', 6, 4, 8],
        ],
        tags: [
          ['eu', 9],
          ['batch', 6],
          ['checkout', 4],
        ],
      });
    });

    test('a key and an identity (across APIs); at most TOP tags, most first', async () => {
      const key = await summary({ keyId: ids.k1 }, '30d');
      assert.deepEqual(occurred(key.outcomes), { VALID: 5, EXPIRED: 8 });
      assert.deepEqual(ranks(key), {
        keys: [['k1', 13, 5, 3]],
        identities: [['alice', 13, 5, 3]],
        tags: [
          ['checkout', 3],
          ['eu', 3],
        ],
      });

      const alice = await summary({ identityId: ids.alice }, '1h');
      assert.deepEqual([alice.total, alice.spentCredits], [9, 3]);
      assert.deepEqual(ranks(alice), {
        keys: [
          ['k1', 5, 5, 3],
          ['k4', 4, 4, 0],
        ],
        identities: [['alice', 9, 9, 3]],
        tags: [
          ['eu', 7],
          ['checkout', 3],
        ],
      });

      const c = await summary({ apiId: ids.c }, '1h');
      assert.equal(c.total, 12);
      assert.equal(c.topTags.length, TOP);
      assert.deepEqual(
        c.topTags.map((t) => [t.tag, t.count]),
        Array.from({ length: TOP }, (_, i) => [`t${String(i + 1).padStart(2, '0')}`, 12 - i]),
      );
    });

    test('the workspace is always applied: another workspace sees its own API only, and ours as not found', async () => {
      const theirs = caller(other.workspaceId, ['*']);
      const x = await summary({ apiId: ids.x }, '1h', theirs);
      assert.deepEqual([x.total, ranks(x).keys], [9, [['kx', 9, 9, 0]]]);
      await refused(summary({ apiId: ids.a }, '1h', theirs), 'data/api-not-found');
      await refused(summary({ keyId: ids.k1 }, '1h', theirs), 'data/key-not-found');
      await refused(summary({ identityId: ids.alice }, '1h', theirs), 'data/identity-not-found');
      await refused(summary({ apiId: 'api_missing' }, '1h'), 'data/api-not-found');
    });

    test('permissions: an API or key needs its API’s read_analytics; an identity api.*.read_analytics', async () => {
      const onlyA = caller(w.workspaceId, [`api.${ids.a}.read_analytics`]);
      assert.equal((await summary({ apiId: ids.a }, '1h', onlyA)).total, 8);
      assert.equal((await summary({ keyId: ids.k2 }, '24h', onlyA)).total, 6);
      await refused(summary({ apiId: ids.b }, '1h', onlyA), 'auth/insufficient-permissions');
      await refused(summary({ keyId: ids.k4 }, '1h', onlyA), 'auth/insufficient-permissions');
      await refused(summary({ identityId: ids.alice }, '1h', onlyA), 'auth/insufficient-permissions');
      const all = caller(w.workspaceId, ['api.*.read_analytics']);
      assert.equal((await summary({ identityId: ids.bob }, '24h', all)).total, 6);
    });

    test('a range named by a page: one of 1h, 24h, 7d, 30d, else the last 24 hours', () => {
      assert.deepEqual(['1h', '24h', '7d', '30d', undefined, '', '90d', 'toString', '__proto__'].map(usageRangeOf), [
        '1h',
        '24h',
        '7d',
        '30d',
        '24h',
        '24h',
        '24h',
        '24h',
        '24h',
      ]);
    });

    describe('the query box: runApiAnalyticsQuery', () => {
      const run = (query: string, as = admin(), apiId = ids.a) => runApiAnalyticsQuery(w.store, as, apiId, query, { nowMs: NOW });

      test('runs the v2 query service over the API’s rows only, whatever the query asks', async () => {
        assert.deepEqual(
          await run(
            'SELECT outcome, count(*) AS n FROM key_verifications_v1 WHERE time >= now() - INTERVAL 7 DAY GROUP BY outcome ORDER BY outcome',
          ),
          [
            { outcome: 'DISABLED', n: 6 },
            { outcome: 'RATE_LIMITED', n: 2 },
            { outcome: 'USAGE_EXCEEDED', n: 1 },
            { outcome: 'VALID', n: 9 },
          ],
        );
        const everyApi = `SELECT count(*) AS n FROM key_verifications_per_hour_v1 WHERE key_space_id IN ('${ids.b}', '${ids.c}', '${ids.x}') OR workspace_id = '${other.workspaceId}'`;
        assert.deepEqual(await run(everyApi), [{ n: 0 }]);
        assert.deepEqual(await run('SELECT sum(count) AS n FROM key_verifications_per_minute_v1 WHERE time >= now() - INTERVAL 1 HOUR'), [
          { n: 8 },
        ]);
        // Every event of the API, 40 days back included (not pruned here): 8 + 4 + 6 + 8 + 7; API b's and c's are not.
        assert.deepEqual(await run('SELECT sum(count) AS n FROM key_verifications_per_minute_v1'), [{ n: 33 }]);
        // A caller holding only this API's permission gets the same answer.
        assert.deepEqual(
          await run('SELECT sum(count) AS n FROM key_verifications_per_minute_v1', caller(w.workspaceId, [`api.${ids.a}.read_analytics`])),
          [{ n: 33 }],
        );
      });

      test('refuses what the API refuses, and another workspace’s API or a missing permission', async () => {
        await refused(run('SELECT version()'), 'analytics/invalid-function');
        await refused(run('SELECT * FROM keys'), 'analytics/invalid-table');
        await refused(run('DELETE FROM key_verifications_v1'), 'analytics/invalid-query');
        await refused(run(''), 'analytics/invalid-query');
        await refused(run('SELECT 1', caller(other.workspaceId, ['*'])), 'data/api-not-found');
        await refused(run('SELECT 1', caller(w.workspaceId, [`api.${ids.b}.read_analytics`])), 'auth/insufficient-permissions');
      });
    });
  });
}
