import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../../helpers/harness.ts';
import { eventually } from '../../helpers/outages.ts';
import { windowWithRoom } from '../../helpers/timing.ts';
import { VerificationRecorder, HOUR_MS } from '../../../src/services/verification/verification-recorder.ts';
import { RatelimitRecorder } from '../../../src/services/ratelimits/ratelimit-recorder.ts';
import { readTags } from '../../../src/services/analytics/rollups.ts';
import type { VerifyCode } from '../../../src/domain/verify-codes.ts';
import { prng } from '../../helpers/prng.ts';

/** 2025-01-30T00:00Z: the events below span two months. */
const T0 = Date.UTC(2025, 0, 30);
const RECORDED: VerifyCode[] = ['VALID', 'FORBIDDEN', 'USAGE_EXCEEDED', 'RATE_LIMITED', 'DISABLED', 'INSUFFICIENT_PERMISSIONS', 'EXPIRED'];

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

    /** A verification to make: the key, the rest of the body, the code it must answer and the credits it spends. */
    type Case = [{ keyId: string; key: string }, Record<string, unknown>, VerifyCode, number];

    /**
     * Sends each case to `route` (with `root` on v2) with its own tags, checks its code, and then that each is
     * recorded once, under the answer's request id, with its outcome, tags, credits, workspace, API, identity.
     */
    const assertRecorded = async (route: '/v1/keys.verifyKey' | '/v2/keys.verifyKey', apiId: string, cases: Case[]) => {
      // The `burst` cases (1 a minute, in windows aligned to the minute) must fall in one window: VALID, then RATE_LIMITED.
      await windowWithRoom(60_000, 5_000);
      const sent: Array<{ requestId: string; tags: string[] }> = [];
      for (const [i, [k, extra, code]] of cases.entries()) {
        const tags = i % 3 === 2 ? [] : [`case=${i}`, `route=${route}`];
        const res = await w.post(
          route,
          { key: k.key, ...extra, ...(tags.length ? { tags } : {}) },
          route.startsWith('/v2') ? w.root : null,
        );
        assert.equal(res.status, 200, res.body);
        const answer = route.startsWith('/v2') ? res.json.data : res.json;
        assert.equal(answer.code, code, `${route} case ${i}: ${res.body}`);
        sent.push({ requestId: String(route.startsWith('/v2') ? res.json.meta.requestId : res.json.requestId), tags });
      }
      const requestIds = sent.map((x) => x.requestId);
      const recorded = async () =>
        w.store.db.selectFrom('analytics_key_verifications').selectAll().where('request_id', 'in', requestIds).execute();
      await eventually('the events written', async () => (await recorded()).length >= cases.length);
      const rows = await recorded();
      assert.equal(rows.length, cases.length, 'one event per verification');
      for (const [i, [k, , code, credits]] of cases.entries()) {
        const row = rows.find((x) => x.request_id === sent[i].requestId);
        assert.ok(row, `${route} ${code}: an event with the answer's requestId`);
        const key = await w.store.db
          .selectFrom('keys')
          .leftJoin('identities', 'identities.id', 'keys.identity_id')
          .select(['keys.identity_id', 'identities.external_id'])
          .where('keys.id', '=', k.keyId)
          .executeTakeFirstOrThrow();
        assert.deepEqual(
          {
            outcome: row.outcome,
            key_id: row.key_id,
            workspace_id: row.workspace_id,
            key_space_id: row.key_space_id,
            identity_id: row.identity_id,
            external_id: row.external_id,
            region: row.region,
            tags: readTags(row.tags),
            spent_credits: Number(row.spent_credits),
          },
          {
            outcome: code,
            key_id: k.keyId,
            workspace_id: w.workspaceId,
            key_space_id: apiId,
            identity_id: key.identity_id ?? '',
            external_id: key.external_id ?? '',
            region: 'local',
            tags: sent[i].tags,
            spent_credits: credits,
          },
          `${route} case ${i} (${code})`,
        );
        assert.ok(Number(row.time) > Date.now() - 60_000);
        assert.ok(Number(row.latency) >= 0);
      }
    };

    /** Keys in every state a verification can find: credits, disabled, expired (after the wait), identity. */
    const keysOfEveryState = async (apiId: string) => {
      const keys = {
        owned: await w.createKey({ apiId, remaining: 5, externalId: 'ev-owner' }),
        disabled: await w.createKey({ apiId, enabled: false, remaining: 5 }),
        expired: await w.createKey({ apiId, expires: Date.now() + 500, remaining: 5 }),
        spent: await w.createKey({ apiId, remaining: 1 }),
        limited: await w.createKey({ apiId, remaining: 10 }),
        plain: await w.createKey({ apiId }),
      };
      await new Promise((res) => setTimeout(res, 600)); // `expired` expires
      return keys;
    };
    const burst = { ratelimits: [{ name: 'burst', limit: 1, duration: 60_000 }] };

    test('v1 keys.verifyKey records every outcome of a found key with its tags and spent credits', async () => {
      const apiId = await w.createApi('ev-fields');
      const otherApi = await w.createApi('ev-fields-other');
      const k = await keysOfEveryState(apiId);
      await assertRecorded('/v1/keys.verifyKey', apiId, [
        [k.owned, {}, 'VALID', 1],
        [k.owned, { remaining: { cost: 2 } }, 'VALID', 2],
        [k.owned, { remaining: { cost: 0 } }, 'VALID', 0],
        [k.plain, { remaining: { cost: 3 } }, 'VALID', 0], // a key without credits spends none
        [k.owned, { authorization: { permissions: 'nothing.granted' } }, 'INSUFFICIENT_PERMISSIONS', 0],
        [k.owned, { apiId: otherApi }, 'FORBIDDEN', 0],
        [k.disabled, {}, 'DISABLED', 0],
        [k.expired, {}, 'EXPIRED', 0],
        [k.spent, {}, 'VALID', 1],
        [k.spent, {}, 'USAGE_EXCEEDED', 0],
        [k.limited, burst, 'VALID', 1],
        [k.limited, burst, 'RATE_LIMITED', 0],
      ]);
    });

    test('v2 keys.verifyKey records every outcome of a found key with its tags and spent credits (v2 has no apiId: no FORBIDDEN)', async () => {
      const apiId = await w.createApi('ev-fields-v2');
      const k = await keysOfEveryState(apiId);
      await assertRecorded('/v2/keys.verifyKey', apiId, [
        [k.owned, {}, 'VALID', 1],
        [k.owned, { credits: { cost: 2 } }, 'VALID', 2],
        [k.owned, { credits: { cost: 0 } }, 'VALID', 0],
        [k.plain, { credits: { cost: 3 } }, 'VALID', 0],
        [k.owned, { permissions: 'nothing.granted' }, 'INSUFFICIENT_PERMISSIONS', 0],
        [k.disabled, {}, 'DISABLED', 0],
        [k.expired, {}, 'EXPIRED', 0],
        [k.spent, {}, 'VALID', 1],
        [k.spent, {}, 'USAGE_EXCEEDED', 0],
        [k.limited, burst, 'VALID', 1],
        [k.limited, burst, 'RATE_LIMITED', 0],
      ]);
    });

    test('NOT_FOUND records nothing: an unknown or deleted key, an apiId not of its workspace, a v2 caller not allowed the key', async () => {
      const apiId = await w.createApi('ev-not-found');
      const { keyId, key } = await w.createKey({ apiId });
      const deleted = await w.createKey({ apiId });
      assert.equal((await w.post('/v1/keys.deleteKey', { keyId: deleted.keyId })).status, 200);
      const other = await w.otherWorkspace();
      const theirApi = await w.createApi('ev-not-found-theirs', other.root);
      const noVerify = await w.rootKey([`api.${apiId}.read_key`]);
      const sent: Array<[string, Record<string, unknown>, string | null]> = [
        ['/v1/keys.verifyKey', { key: 'kh_unknown_key_1234567890', tags: ['nf'] }, null],
        ['/v1/keys.verifyKey', { key: deleted.key, tags: ['nf'] }, null],
        ['/v1/keys.verifyKey', { key, apiId: theirApi, tags: ['nf'] }, null],
        ['/v1/keys.verifyKey', { key, apiId: 'api_1111111111111111111111', tags: ['nf'] }, null],
        ['/v2/keys.verifyKey', { key, tags: ['nf'] }, other.root],
        ['/v2/keys.verifyKey', { key, tags: ['nf'] }, noVerify],
        ['/v2/keys.verifyKey', { key: deleted.key, tags: ['nf'] }, w.root],
      ];
      const requestIds: string[] = [];
      for (const [route, body, root] of sent) {
        const res = await w.post(route, body, root);
        assert.equal(res.status, 200, res.body);
        const answer = route.startsWith('/v2') ? res.json.data : res.json;
        assert.equal(answer.code, 'NOT_FOUND', `${route} ${JSON.stringify(body)}: ${res.body}`);
        requestIds.push(String(route.startsWith('/v2') ? res.json.meta.requestId : res.json.requestId));
      }
      // A verification after them: once it is written, so would they be (the queue is written in order).
      const after = await w.post('/v1/keys.verifyKey', { key });
      assert.equal(after.json.code, 'VALID');
      await eventually('the later verification written', async () => (await rawRows(keyId)).length === 1);
      assert.deepEqual(
        await w.store.db.selectFrom('analytics_key_verifications').select('request_id').where('request_id', 'in', requestIds).execute(),
        [],
      );
      assert.deepEqual(
        (await rawRows(keyId)).map((r) => [r.request_id, r.outcome]),
        [[String(after.json.requestId), 'VALID']],
      );
      assert.deepEqual(await rawRows(deleted.keyId), []);
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
