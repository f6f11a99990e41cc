import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { eventually } from '../../helpers/outages.ts';
import { VerificationRecorder, HOUR_MS } from '../../../src/services/verification/verification-recorder.ts';
import { RatelimitRecorder } from '../../../src/services/ratelimits/ratelimit-recorder.ts';
import { readTags } from '../../../src/services/analytics/rollups.ts';
import type { VerifyCode } from '../../../src/domain/verify-codes.ts';

/** 2025-01-30T00:00Z: the events below span two months. */
const T0 = Date.UTC(2025, 0, 30);
const RECORDED: VerifyCode[] = ['VALID', 'FORBIDDEN', 'USAGE_EXCEEDED', 'RATE_LIMITED', 'DISABLED', 'INSUFFICIENT_PERMISSIONS', 'EXPIRED'];

/** A deterministic pseudo-random sequence (LCG), so a failing run can be replayed. */
const prng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};

for (const dialect of DIALECTS) {
  describe(`analytics events (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const rawRows = (keyId: string) =>
      w.store.db.selectFrom('analytics_key_verifications').selectAll().where('key_id', '=', keyId).execute();
    /** The summed count and spent credits of `table` for these keys (per outcome). */
    const sums = async (
      table: `analytics_key_verifications${'' | '_per_minute' | '_per_hour' | '_per_day' | '_per_month'}`,
      keyIds: string[],
    ) => {
      const rows =
        table === 'analytics_key_verifications'
          ? await w.store.db
              .selectFrom(table)
              .select((eb) => ['outcome', eb.fn.countAll<number | string>().as('n'), eb.fn.sum<number | string>('spent_credits').as('c')])
              .where('key_id', 'in', keyIds)
              .groupBy('outcome')
              .execute()
          : await w.store.db
              .selectFrom(table)
              .select((eb) => ['outcome', eb.fn.sum<number | string>('count').as('n'), eb.fn.sum<number | string>('spent_credits').as('c')])
              .where('key_id', 'in', keyIds)
              .groupBy('outcome')
              .execute();
      return Object.fromEntries(rows.map((r) => [r.outcome, [Number(r.n), Number(r.c)]]));
    };

    test('the roll-ups of every grain sum to the raw events, per outcome (counts and credits)', async () => {
      const apiId = await w.createApi('ev-sums');
      const keys = [(await w.createKey({ apiId })).keyId, (await w.createKey({ apiId })).keyId];
      const r = new VerificationRecorder(w.store.db, { dialect });
      const rand = prng(3);
      for (let i = 0; i < 1500; i++) {
        r.record({
          keyId: keys[i % 2],
          workspaceId: w.workspaceId,
          apiId,
          identityId: null,
          code: RECORDED[Math.floor(rand() * RECORDED.length)],
          time: T0 + Math.floor(rand() * 5 * 24 * HOUR_MS), // five days over a month's end
          tags: rand() < 0.5 ? [] : [`t${Math.floor(rand() * 3)}`],
          spentCredits: Math.floor(rand() * 3),
          latency: 1,
        });
        if (i === 700) await r.flush();
      }
      await r.flush();
      const raw = await sums('analytics_key_verifications', keys);
      assert.equal(
        Object.values(raw).reduce((a, [n]) => a + n, 0),
        1500,
      );
      for (const grain of ['minute', 'hour', 'day', 'month'] as const)
        assert.deepEqual(await sums(`analytics_key_verifications_per_${grain}`, keys), raw, `per ${grain}`);
      const months = await w.store.db
        .selectFrom('analytics_key_verifications_per_month')
        .select('time')
        .distinct()
        .where('key_id', 'in', keys)
        .execute();
      assert.deepEqual(months.map((m) => Number(m.time)).sort(), [Date.UTC(2025, 0, 1), Date.UTC(2025, 1, 1)]);
    });

    test('enabled: false (KEYHOLD_ANALYTICS=off) records nothing, verifications nor rate-limit checks', async () => {
      const apiId = await w.createApi('ev-off');
      const { keyId } = await w.createKey({ apiId });
      const v = new VerificationRecorder(w.store.db, { dialect, enabled: false });
      const l = new RatelimitRecorder(w.store.db, { dialect, enabled: false });
      v.record({ keyId, workspaceId: w.workspaceId, apiId, identityId: null, code: 'VALID', time: T0 });
      l.record({ workspaceId: w.workspaceId, namespaceId: 'rlns_off', identifier: 'x', passed: true, time: T0 });
      assert.deepEqual([v.buffered, l.buffered], [0, 0]);
      await Promise.all([v.flush(), l.flush()]);
      assert.deepEqual(await rawRows(keyId), []);
      assert.deepEqual(
        await w.store.db.selectFrom('analytics_ratelimits').select('identifier').where('namespace_id', '=', 'rlns_off').execute(),
        [],
      );
      const on = await world(dialect, { app: { analytics: { enabled: false, region: 'local' } } });
      try {
        const api = await on.createApi('ev-off-app');
        const k = await on.createKey({ apiId: api });
        assert.equal((await on.post('/v1/keys.verifyKey', { key: k.key })).json.code, 'VALID');
        await new Promise((res) => setTimeout(res, 1_500)); // past a flush interval
        assert.deepEqual(await on.store.db.selectFrom('analytics_key_verifications').select('key_id').execute(), []);
        assert.deepEqual(await on.store.db.selectFrom('analytics_key_verifications_per_hour').select('key_id').execute(), []);
      } finally {
        await on.close();
      }
    });

    test('keys.verifyKey records each outcome as a raw event with its fields (request id, region, tags, credits)', async () => {
      const apiId = await w.createApi('ev-fields');
      const valid = await w.createKey({ apiId, remaining: 5, externalId: 'ev-owner' });
      const disabled = await w.createKey({ apiId, enabled: false });
      const spent = await w.createKey({ apiId, remaining: 1 });
      const cases: Array<[{ keyId: string; key: string }, Record<string, unknown>, VerifyCode, number]> = [
        [valid, { tags: ['path=/a', 'b'] }, 'VALID', 1],
        [valid, { authorization: { permissions: 'nothing.granted' } }, 'INSUFFICIENT_PERMISSIONS', 0],
        [disabled, {}, 'DISABLED', 0],
        [spent, {}, 'VALID', 1],
        [spent, {}, 'USAGE_EXCEEDED', 0],
      ];
      const requestIds: string[] = [];
      for (const [k, extra, code] of cases) {
        const res = await w.post('/v1/keys.verifyKey', { key: k.key, ...extra });
        assert.equal(res.json.code, code, res.body);
        requestIds.push(String(res.json.requestId));
      }
      const identity = await w.store.db.selectFrom('keys').select('identity_id').where('id', '=', valid.keyId).executeTakeFirstOrThrow();
      await eventually(
        'the events written',
        async () => (await rawRows(valid.keyId)).length === 2 && (await rawRows(spent.keyId)).length === 2,
      );
      await eventually('the events written', async () => (await rawRows(disabled.keyId)).length === 1);
      for (const [i, [k, extra, code, credits]] of cases.entries()) {
        const rows = (await rawRows(k.keyId)).filter((x) => x.request_id === requestIds[i]);
        assert.equal(rows.length, 1, `${code}: one event with the response's requestId`);
        const [row] = rows;
        assert.equal(row.outcome, code);
        assert.equal(row.workspace_id, w.workspaceId);
        assert.equal(row.key_space_id, apiId);
        assert.equal(row.region, 'local');
        assert.deepEqual(readTags(row.tags), (extra.tags as string[] | undefined) ?? []);
        assert.equal(Number(row.spent_credits), credits, `${code}: spent credits`);
        assert.ok(Number(row.time) > Date.now() - 60_000);
        if (k === valid) {
          assert.equal(row.identity_id, identity.identity_id);
          assert.equal(row.external_id, 'ev-owner');
        }
      }
    });

    test('tags: more than 20, an empty one or one of 129 characters → 400, nothing recorded', async () => {
      const apiId = await w.createApi('ev-tags');
      const { keyId, key } = await w.createKey({ apiId });
      const bad: Array<[string[], string]> = [
        [Array.from({ length: 21 }, (_, i) => `t${i}`), '/tags'],
        [['ok', ''], '/tags/1'],
        [['x'.repeat(129)], '/tags/0'],
      ];
      for (const [tags, path] of bad) {
        for (const route of ['/v1/keys.verifyKey', '/v2/keys.verifyKey']) {
          const res = await w.post(route, { key, tags });
          assert.equal(res.status, 400, `${route} ${tags.length} tags: ${res.body}`);
          assert.ok(
            res.json.error.errors.some(
              (e: { path?: string; location?: string }) =>
                (e.path ?? e.location ?? '').endsWith(path.replace(/^\//, '')) || e.path === path,
            ),
            `${route}: ${res.body}`,
          );
        }
      }
      const ok = await w.post('/v1/keys.verifyKey', { key, tags: Array.from({ length: 20 }, () => 'y'.repeat(128)) });
      assert.equal(ok.json.code, 'VALID', ok.body);
      await eventually('the valid one written', async () => (await rawRows(keyId)).length >= 1);
      await new Promise((res) => setTimeout(res, 1_200));
      const rows = await rawRows(keyId);
      assert.equal(rows.length, 1, 'only the verification with valid tags');
      assert.deepEqual(readTags(rows[0].tags), Array(20).fill('y'.repeat(128)));
    });
  });
}
