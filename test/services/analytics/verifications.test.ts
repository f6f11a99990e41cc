import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { DIALECTS, freshStore, world, type Response, type World } from '../../helpers/harness.ts';
import type { Answer, Loose } from '../../helpers/json.ts';
import { securityTests } from '../../helpers/security.ts';
import { VerificationRecorder, HOUR_MS } from '../../../src/services/verification/verification-recorder.ts';
import type { VerifyCode } from '../../../src/domain/verify-codes.ts';
import { outcomeCounts } from '../../helpers/rows.ts';
import { prng } from '../../helpers/prng.ts';

const DAY_MS = 24 * HOUR_MS;
/** A fixed, hour-aligned origin: 2025-01-30T00:00Z (the month ends two days later). */
const T0 = Date.UTC(2025, 0, 30);
const at = (day: number, hour: number, minute = 0) => T0 + day * DAY_MS + hour * HOUR_MS + minute * 60_000;

type HourlyKey = { key_id: string; hour: number; outcome: string };
const byRow = (a: HourlyKey, b: HourlyKey) =>
  a.key_id < b.key_id ? -1 : a.key_id > b.key_id ? 1 : a.hour - b.hour || (a.outcome < b.outcome ? -1 : a.outcome > b.outcome ? 1 : 0);
const RECORDED: VerifyCode[] = ['VALID', 'FORBIDDEN', 'USAGE_EXCEEDED', 'RATE_LIMITED', 'DISABLED', 'INSUFFICIENT_PERMISSIONS', 'EXPIRED'];

const counts = outcomeCounts;
/** A keys.getVerifications bucket. */
const bucket = (
  time: number,
  c: Partial<
    Record<'success' | 'rateLimited' | 'usageExceeded' | 'forbidden' | 'disabled' | 'insufficientPermissions' | 'expired', number>
  >,
) => {
  const row = { success: 0, rateLimited: 0, usageExceeded: 0, forbidden: 0, disabled: 0, insufficientPermissions: 0, expired: 0, ...c };
  return { time, ...row, total: Object.values(row).reduce((a, b) => a + b, 0) };
};

/** An analytics.getVerifications row, with the members these tests compute with. */
type Row = Loose<ReturnType<typeof counts> & { time: number; keyId: string; identity: { externalId: string } }>;

/** A GET with repeated query parameters (the harness' `get` takes one value per name). */
async function getMulti<T = Answer>(w: World, path: string, params: Array<[string, string | number]>, key = w.root): Promise<Response<T>> {
  const qs = new URLSearchParams(params.map(([k, v]): [string, string] => [k, String(v)])).toString();
  const res = await w.app.inject({ method: 'GET', url: `${path}?${qs}`, headers: { authorization: `Bearer ${key}` } });
  return { status: res.statusCode, json: res.json<T>(), headers: res.headers, body: res.body };
}

async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

for (const dialect of DIALECTS) {
  describe(`verification analytics (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    interface TestKey {
      id: string;
      apiId: string;
      identityId: string | null;
    }
    /** Creates an API and keys on it; `owners[i]` is the externalId of key i (or null). */
    const setup = async (name: string, owners: Array<string | null>, root = w.root): Promise<{ apiId: string; keys: TestKey[] }> => {
      const apiId = await w.createApi(name, root);
      const keys: TestKey[] = [];
      for (const owner of owners) {
        const { keyId } = await w.createKey({ apiId, ...(owner ? { externalId: owner } : {}) }, root);
        const row = await w.store.db.selectFrom('keys').select('identity_id').where('id', '=', keyId).executeTakeFirstOrThrow();
        keys.push({ id: keyId, apiId, identityId: row.identity_id });
      }
      return { apiId, keys };
    };
    /** Records `n` verifications of `key` with `code` at `time` (workspace `ws`). */
    const rec = (r: VerificationRecorder, key: TestKey, code: VerifyCode, time: number, n = 1, ws = w.workspaceId) => {
      for (let i = 0; i < n; i++) r.record({ keyId: key.id, workspaceId: ws, apiId: key.apiId, identityId: key.identityId, code, time });
    };
    /**
     * The per-hour roll-up rows in (key, hour, outcome) order, with the fields these tests compare (sorted here:
     * PostgreSQL's collation may order mixed-case ids differently). These events carry no tags.
     */
    const hourlyRows = async (keyIds: string[]) =>
      (await w.store.db.selectFrom('analytics_key_verifications_per_hour').selectAll().where('key_id', 'in', keyIds).execute())
        .map((x) => ({
          key_id: x.key_id,
          hour: Number(x.time),
          outcome: x.outcome,
          workspace_id: x.workspace_id,
          api_id: x.key_space_id,
          identity_id: x.identity_id === '' ? null : x.identity_id,
          count: Number(x.count),
        }))
        .sort(byRow);
    /** Raw events stored for these keys. */
    const rawCount = async (keyIds: string[]) =>
      Number(
        (
          await w.store.db
            .selectFrom('analytics_key_verifications')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('key_id', 'in', keyIds)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const lastUsed = async (keyId: string) =>
      (await w.store.db.selectFrom('keys').select('last_used_at').where('id', '=', keyId).executeTakeFirstOrThrow()).last_used_at;
    /** Expected rows from a tally `key|hour|code → count`. */
    const expectedRows = (tally: Map<string, number>, keys: TestKey[]) =>
      [...tally]
        .map(([k, count]) => {
          const [keyId, hour, outcome] = k.split('|');
          const key = keys.find((x) => x.id === keyId)!;
          return {
            key_id: keyId,
            hour: Number(hour),
            outcome,
            workspace_id: w.workspaceId,
            api_id: key.apiId,
            identity_id: key.identityId,
            count,
          };
        })
        .sort(byRow);
    /** Records `n` random events over keys × 7 codes × 5 hours, plus NOT_FOUNDs, and returns their tally. */
    const recordRandom = (r: VerificationRecorder, keys: TestKey[], n: number, seed: number, tally = new Map<string, number>()) => {
      const rand = prng(seed);
      for (let i = 0; i < n; i++) {
        const key = keys[Math.floor(rand() * keys.length)];
        const code = RECORDED[Math.floor(rand() * RECORDED.length)];
        const time = at(0, Math.floor(rand() * 5), Math.floor(rand() * 60));
        rec(r, key, code, time);
        const id = `${key.id}|${time - (time % HOUR_MS)}|${code}`;
        tally.set(id, (tally.get(id) ?? 0) + 1);
      }
      return tally;
    };

    describe('VerificationRecorder', () => {
      test('1000 events over keys, codes and hours: queued in memory, then one flush writes them raw and the exact count per (key, hour, outcome)', async () => {
        const { keys } = await setup('rec-exact', ['alice', null, 'bob', null]);
        const r = new VerificationRecorder(w.store.db, { dialect });
        const tally = recordRandom(r, keys, 1000, 7);
        // NOT_FOUND verifications have no key: not recorded.
        for (let i = 0; i < 50; i++)
          r.record({
            keyId: keys[0].id,
            workspaceId: w.workspaceId,
            apiId: keys[0].apiId,
            identityId: null,
            code: 'NOT_FOUND',
            time: at(0, 1),
          });
        assert.equal(r.buffered, 1000, 'one queued event per verification, NOT_FOUND left out');
        assert.deepEqual(await hourlyRows(keys.map((k) => k.id)), [], 'record() writes nothing');
        assert.equal(await rawCount(keys.map((k) => k.id)), 0);

        await r.flush();
        assert.equal(r.buffered, 0);
        const rows = await hourlyRows(keys.map((k) => k.id));
        assert.deepEqual(rows, expectedRows(tally, keys));
        assert.equal(
          rows.reduce((a, x) => a + x.count, 0),
          1000,
        );
        assert.ok(rows.length > 100, `expected many distinct counters, got ${rows.length}`);
        assert.ok(rows.every((x) => x.outcome !== 'NOT_FOUND'));
        assert.equal(await rawCount(keys.map((k) => k.id)), 1000, 'every event stored raw, NOT_FOUND not');
      });

      test('repeated flushes add up without double counting; an empty flush changes nothing', async () => {
        const { keys } = await setup('rec-repeat', ['carol', null, null]);
        const r = new VerificationRecorder(w.store.db, { dialect });
        const tally = recordRandom(r, keys, 300, 11);
        await r.flush();
        recordRandom(r, keys, 400, 12, tally);
        rec(r, keys[1], 'EXPIRED', at(0, 0, 5), 3);
        tally.set(`${keys[1].id}|${at(0, 0)}|EXPIRED`, (tally.get(`${keys[1].id}|${at(0, 0)}|EXPIRED`) ?? 0) + 3);
        await r.flush();
        await r.flush();
        assert.deepEqual(await hourlyRows(keys.map((k) => k.id)), expectedRows(tally, keys));

        // Flushes started together run one after another, each writing what was buffered when it began.
        rec(r, keys[0], 'VALID', at(0, 0), 5);
        const first = r.flush();
        rec(r, keys[0], 'VALID', at(0, 0), 2);
        const second = r.flush();
        await Promise.all([first, second, r.flush()]);
        tally.set(`${keys[0].id}|${at(0, 0)}|VALID`, (tally.get(`${keys[0].id}|${at(0, 0)}|VALID`) ?? 0) + 7);
        assert.deepEqual(await hourlyRows(keys.map((k) => k.id)), expectedRows(tally, keys));
        assert.equal(await rawCount(keys.map((k) => k.id)), 300 + 400 + 3 + 7, 'each event stored raw once');
      });

      test('a flush that fails midway rolls back entirely and keeps its counts (with later ones) for the next flush', async () => {
        const { keys } = await setup('rec-fail', ['dave', null]);
        const r = new VerificationRecorder(w.store.db, { dialect });
        const tally = recordRandom(r, keys, 200, 21);
        await r.flush();
        const before = await hourlyRows(keys.map((k) => k.id));
        const rawBefore = await rawCount(keys.map((k) => k.id));
        const lastUsedBefore = await lastUsed(keys[0].id);

        // The raw inserts and roll-up upserts succeed, then the last_used_at update fails: the whole transaction must roll back.
        recordRandom(r, keys, 150, 22, tally);
        rec(r, keys[0], 'VALID', at(0, 4, 59));
        tally.set(`${keys[0].id}|${at(0, 4)}|VALID`, (tally.get(`${keys[0].id}|${at(0, 4)}|VALID`) ?? 0) + 1);
        const buffered = r.buffered;
        await sql`alter table keys rename column last_used_at to last_used_at_away`.execute(w.store.db);
        try {
          await assert.rejects(r.flush());
          assert.equal(r.buffered, buffered, "the failed flush's events are back in the queue");
          // Recorded while the store is failing: merged with the restored counts.
          rec(r, keys[1], 'RATE_LIMITED', at(0, 2), 4);
          rec(r, keys[1], 'DISABLED', at(0, 7), 2);
          await assert.rejects(r.flush());
        } finally {
          await sql`alter table keys rename column last_used_at_away to last_used_at`.execute(w.store.db);
        }
        assert.deepEqual(await hourlyRows(keys.map((k) => k.id)), before, 'nothing of the failed flushes was written');
        assert.equal(await rawCount(keys.map((k) => k.id)), rawBefore, 'no raw event either');
        assert.equal(await lastUsed(keys[0].id), lastUsedBefore);

        for (const [id, n] of [
          [`${keys[1].id}|${at(0, 2)}|RATE_LIMITED`, 4],
          [`${keys[1].id}|${at(0, 7)}|DISABLED`, 2],
        ] as const)
          tally.set(id, (tally.get(id) ?? 0) + n);
        await r.flush();
        assert.equal(r.buffered, 0);
        assert.deepEqual(await hourlyRows(keys.map((k) => k.id)), expectedRows(tally, keys));
        assert.equal(await rawCount(keys.map((k) => k.id)), rawBefore + buffered + 6, 'every event exactly once');
        assert.equal(await lastUsed(keys[0].id), at(0, 4, 59));
        assert.equal(await lastUsed(keys[1].id), at(0, 7));
      });

      test('a flush against a closed store rejects and keeps every event', async () => {
        const fresh = await freshStore(dialect);
        const r = new VerificationRecorder(fresh.store.db, { dialect });
        const key = { id: 'key_closedstore', apiId: 'api_closedstore', identityId: null };
        rec(r, key, 'VALID', at(0, 1), 3);
        rec(r, key, 'EXPIRED', at(0, 2));
        await fresh.close();
        await assert.rejects(r.flush());
        assert.equal(r.buffered, 4);
        await assert.rejects(r.flush(), 'still failing, still kept');
        assert.equal(r.buffered, 4);
      });

      test('last_used_at becomes the latest time seen, never moves backwards, and only for keys seen', async () => {
        const { keys } = await setup('rec-last-used', [null, null, null]);
        const [a, b, untouched] = keys;
        const r = new VerificationRecorder(w.store.db, { dialect });
        rec(r, a, 'VALID', at(0, 3, 30));
        rec(r, a, 'EXPIRED', at(0, 1)); // earlier, recorded later: the latest time still wins
        rec(r, b, 'DISABLED', at(0, 2));
        await r.flush();
        assert.equal(await lastUsed(a.id), at(0, 3, 30));
        assert.equal(await lastUsed(b.id), at(0, 2));
        assert.equal(await lastUsed(untouched.id), null);

        rec(r, a, 'VALID', at(0, 0)); // older than stored
        rec(r, b, 'VALID', at(0, 5)); // newer
        await r.flush();
        assert.equal(await lastUsed(a.id), at(0, 3, 30), 'never moved backwards');
        assert.equal(await lastUsed(b.id), at(0, 5));

        // Another node already wrote a later time: this node's older one does not replace it.
        await w.store.db
          .updateTable('keys')
          .set({ last_used_at: at(1, 0) })
          .where('id', '=', a.id)
          .execute();
        rec(r, a, 'VALID', at(0, 6));
        await r.flush();
        assert.equal(await lastUsed(a.id), at(1, 0));
        assert.equal(await lastUsed(untouched.id), null);
        // The counts were still added.
        const rows = await hourlyRows([a.id]);
        assert.deepEqual(
          rows.map((x) => [x.hour, x.outcome, x.count]),
          [
            [at(0, 0), 'VALID', 1],
            [at(0, 1), 'EXPIRED', 1],
            [at(0, 3), 'VALID', 1],
            [at(0, 6), 'VALID', 1],
          ],
        );
      });

      test('reaching maxBatch queued events starts a flush without waiting for the timer', async () => {
        const { keys } = await setup('rec-max', [null]);
        const r = new VerificationRecorder(w.store.db, { maxBatch: 12, dialect });
        rec(r, keys[0], 'VALID', at(0, 0), 10); // one roll-up row, many events
        rec(r, keys[0], 'EXPIRED', at(0, 0));
        assert.equal(r.buffered, 11);
        await new Promise((res) => setTimeout(res, 30));
        assert.deepEqual(await hourlyRows([keys[0].id]), [], 'below the threshold nothing is written');
        rec(r, keys[0], 'VALID', at(0, 1));
        await eventually(async () => (await hourlyRows([keys[0].id])).length === 3, 'the early flush');
        assert.deepEqual(
          (await hourlyRows([keys[0].id])).map((x) => [x.hour, x.outcome, x.count]),
          [
            [at(0, 0), 'EXPIRED', 1],
            [at(0, 0), 'VALID', 10],
            [at(0, 1), 'VALID', 1],
          ],
        );
        assert.equal(r.buffered, 0);
      });

      test('start() flushes on a timer; close() flushes what is left', async () => {
        const { keys } = await setup('rec-timer', [null]);
        const r = new VerificationRecorder(w.store.db, { flushIntervalMs: 20, dialect });
        r.start();
        rec(r, keys[0], 'VALID', at(0, 0), 4);
        await eventually(async () => (await hourlyRows([keys[0].id])).length === 1, 'the timed flush');
        assert.equal((await hourlyRows([keys[0].id]))[0].count, 4);
        rec(r, keys[0], 'VALID', at(0, 0), 2);
        await r.close();
        assert.equal((await hourlyRows([keys[0].id]))[0].count, 6);
        rec(r, keys[0], 'VALID', at(0, 0));
        await new Promise((res) => setTimeout(res, 60));
        assert.equal((await hourlyRows([keys[0].id]))[0].count, 6, 'the timer is stopped after close');
      });

      test('capacity bounds the events held: the oldest are dropped and counted, a failed batch kept within it', async () => {
        const { keys } = await setup('rec-bound', [null]);
        const r = new VerificationRecorder(w.store.db, { capacity: 3, maxBatch: 100, dialect });
        rec(r, keys[0], 'EXPIRED', at(0, 0));
        rec(r, keys[0], 'VALID', at(0, 1), 3); // the fourth event drops the oldest (the EXPIRED one)
        assert.deepEqual([r.held, r.dropped], [3, 1]);
        await sql`alter table keys rename column last_used_at to last_used_at_away`.execute(w.store.db);
        try {
          await assert.rejects(r.flush());
          assert.deepEqual([r.buffered, r.dropped], [3, 1], 'the failed batch is back whole');
          rec(r, keys[0], 'DISABLED', at(0, 2), 2); // two more: the two oldest of the failed batch go
          assert.deepEqual([r.held, r.dropped], [3, 3]);
        } finally {
          await sql`alter table keys rename column last_used_at_away to last_used_at`.execute(w.store.db);
        }
        await r.flush();
        assert.deepEqual(
          (await hourlyRows([keys[0].id])).map((x) => [x.hour, x.outcome, x.count]),
          [
            [at(0, 1), 'VALID', 1],
            [at(0, 2), 'DISABLED', 2],
          ],
          'the newest three, each once',
        );
        assert.equal(await rawCount([keys[0].id]), 3);
        assert.equal(await lastUsed(keys[0].id), at(0, 2));
      });
    });

    describe('keys.getVerifications', () => {
      const path = '/v1/keys.getVerifications';

      test('per hour and per UTC day: only buckets with verifications, ascending, counts per outcome', async () => {
        const {
          keys: [k, other],
        } = await setup('kv-happy', [null, null]);
        const r = new VerificationRecorder(w.store.db, { dialect });
        rec(r, k, 'VALID', at(0, 10, 5), 3);
        rec(r, k, 'RATE_LIMITED', at(0, 10, 59));
        rec(r, k, 'USAGE_EXCEEDED', at(0, 13), 2);
        rec(r, k, 'VALID', at(1, 23, 59));
        rec(r, k, 'EXPIRED', at(2, 0, 30));
        rec(r, k, 'DISABLED', at(2, 1));
        rec(r, k, 'FORBIDDEN', at(2, 1));
        rec(r, k, 'INSUFFICIENT_PERMISSIONS', at(2, 1), 2);
        rec(r, other, 'VALID', at(0, 10), 100); // another key of the same API
        await r.flush();

        const hourly = await w.get(path, { keyId: k.id, start: at(0, 0), end: at(3, 0), granularity: 'hour' });
        assert.equal(hourly.status, 200, hourly.body);
        assert.deepEqual(hourly.json, {
          verifications: [
            bucket(at(0, 10), { success: 3, rateLimited: 1 }),
            bucket(at(0, 13), { usageExceeded: 2 }),
            bucket(at(1, 23), { success: 1 }),
            bucket(at(2, 0), { expired: 1 }),
            bucket(at(2, 1), { disabled: 1, forbidden: 1, insufficientPermissions: 2 }),
          ],
        });
        const daily = await w.get(path, { keyId: k.id, start: at(0, 0), end: at(3, 0) }); // granularity defaults to day
        assert.equal(daily.status, 200, daily.body);
        assert.deepEqual(daily.json, {
          verifications: [
            bucket(at(0, 0), { success: 3, rateLimited: 1, usageExceeded: 2 }),
            bucket(at(1, 0), { success: 1 }),
            bucket(at(2, 0), { expired: 1, disabled: 1, forbidden: 1, insufficientPermissions: 2 }),
          ],
        });
        // Windows widen to whole buckets: [day 0 12:00, day 2 00:10) by hour covers hours 12:00 … 00:00.
        const narrow = await w.get<{ verifications: Array<{ time: number }> }>(path, {
          keyId: k.id,
          start: at(0, 12, 30),
          end: at(2, 0, 10),
          granularity: 'hour',
        });
        assert.deepEqual(
          narrow.json.verifications.map((b: { time: number }) => b.time),
          [at(0, 13), at(1, 23), at(2, 0)],
        );
        const narrowDays = await w.get(path, { keyId: k.id, start: at(1, 5), end: at(1, 6) });
        assert.deepEqual(narrowDays.json, { verifications: [bucket(at(1, 0), { success: 1 })] });
      });

      test('no verifications in the window → {verifications: []}', async () => {
        const {
          keys: [k],
        } = await setup('kv-empty', [null]);
        const res = await w.get(path, { keyId: k.id });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, { verifications: [] });
        const r = new VerificationRecorder(w.store.db, { dialect });
        rec(r, k, 'VALID', at(0, 5));
        await r.flush();
        assert.deepEqual((await w.get(path, { keyId: k.id, start: at(1, 0), end: at(2, 0) })).json, { verifications: [] });
      });

      test('the window defaults to the 24 hours before now (end defaults to now, start to end − 24 h)', async () => {
        const {
          keys: [k],
        } = await setup('kv-default', [null]);
        const now = Date.now();
        const r = new VerificationRecorder(w.store.db, { dialect });
        rec(r, k, 'VALID', now - 2 * HOUR_MS, 2);
        rec(r, k, 'VALID', now - 26 * HOUR_MS, 5);
        rec(r, k, 'VALID', now + 3 * HOUR_MS, 7);
        await r.flush();
        const hour = (t: number) => t - (t % HOUR_MS);
        const res = await w.get(path, { keyId: k.id, granularity: 'hour' });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, { verifications: [bucket(hour(now - 2 * HOUR_MS), { success: 2 })] });
        const ended = await w.get(path, { keyId: k.id, end: now - 25 * HOUR_MS, granularity: 'hour' });
        assert.deepEqual(ended.json, { verifications: [bucket(hour(now - 26 * HOUR_MS), { success: 5 })] });
      });

      test('ownerId sums the live keys of that identity across APIs; keyId wins over ownerId', async () => {
        const one = await setup('kv-owner-1', ['erin', 'erin', 'frank', null]);
        const two = await setup('kv-owner-2', ['erin']);
        const [e1, e2, f, anon] = one.keys;
        const [e3] = two.keys;
        const deleted = (await setup('kv-owner-3', ['erin'])).keys[0];
        const r = new VerificationRecorder(w.store.db, { dialect });
        rec(r, e1, 'VALID', at(0, 1), 2);
        rec(r, e2, 'RATE_LIMITED', at(0, 1));
        rec(r, e3, 'VALID', at(0, 2), 4);
        rec(r, deleted, 'VALID', at(0, 1), 50);
        rec(r, f, 'VALID', at(0, 1), 30);
        rec(r, anon, 'VALID', at(0, 1), 40);
        await r.flush();
        assert.equal((await w.post('/v1/keys.deleteKey', { keyId: deleted.id })).status, 200);

        const res = await w.get(path, { ownerId: 'erin', start: at(0, 0), end: at(1, 0), granularity: 'hour' });
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(res.json, { verifications: [bucket(at(0, 1), { success: 2, rateLimited: 1 }), bucket(at(0, 2), { success: 4 })] });
        const both = await w.get(path, { keyId: f.id, ownerId: 'erin', start: at(0, 0), end: at(1, 0) });
        assert.deepEqual(both.json, { verifications: [bucket(at(0, 0), { success: 30 })] });

        // Every API involved needs read_analytics.
        const onlyOne = await w.rootKey([`api.${one.apiId}.read_analytics`]);
        const denied = await w.get(path, { ownerId: 'erin', start: at(0, 0), end: at(1, 0) }, onlyOne);
        assert.equal(denied.status, 403, denied.body);
        assert.equal(denied.json.error.detail, `Missing permission: api.${two.apiId}.read_analytics`);
        const allowed = await w.get(
          path,
          { ownerId: 'erin', start: at(0, 0), end: at(1, 0) },
          await w.rootKey([`api.${one.apiId}.read_analytics`, `api.${two.apiId}.read_analytics`]),
        );
        assert.deepEqual(allowed.json, { verifications: [bucket(at(0, 0), { success: 6, rateLimited: 1 })] });
      });

      test('an ownerId with no live key in this workspace → 404', async () => {
        const other = await w.otherWorkspace();
        await setup('kv-owner-foreign', ['grace'], other.root);
        for (const ownerId of ['nobody', 'grace']) {
          const res = await w.get(path, { ownerId });
          assert.equal(res.status, 404, res.body);
          assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        }
      });

      test('invalid query → 400 naming the problems', async () => {
        const {
          keys: [k],
        } = await setup('kv-invalid', [null]);
        const cases: Array<[Record<string, string | number>, string[]]> = [
          [{}, ['/keyId']],
          [{ start: at(0, 0) }, ['/keyId']],
          [{ keyId: k.id, start: at(1, 0), end: at(1, 0) }, ['/start']],
          [{ keyId: k.id, start: at(2, 0), end: at(1, 0) }, ['/start']],
          [{ start: at(2, 0), end: at(1, 0) }, ['/keyId', '/start']],
          [{ keyId: k.id, granularity: 'month' }, ['/granularity']],
          [{ keyId: k.id, start: 'yesterday' }, ['/start']],
          [{ keyId: k.id, start: -1 }, ['/start']],
          [{ keyId: '' }, ['/keyId']],
          [{ ownerId: '' }, ['/ownerId']],
        ];
        for (const [query, paths] of cases) {
          const res = await w.get(path, query);
          assert.equal(res.status, 400, `${JSON.stringify(query)}: ${res.body}`);
          assert.equal(res.json.error.code, 'BAD_REQUEST');
          assert.deepEqual(res.json.error.errors.map((e: { path: string }) => e.path).sort(), paths, JSON.stringify(query));
        }
        const neither = await w.get(path, {});
        assert.equal(neither.json.error.errors[0].message, 'keyId or ownerId must be provided');
      });

      test('unknown, deleted or foreign key → 404', async () => {
        const {
          keys: [k],
        } = await setup('kv-404', [null]);
        assert.equal((await w.post('/v1/keys.deleteKey', { keyId: k.id })).status, 200);
        const other = await w.otherWorkspace();
        const {
          keys: [theirs],
        } = await setup('kv-404-theirs', [null], other.root);
        for (const keyId of ['key_1111111111111111111111', k.id, theirs.id]) {
          const res = await w.get(path, { keyId });
          assert.equal(res.status, 404, res.body);
          assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/key-not-found');
        }
      });

      test("needs read_analytics on the key's API (read_key is not enough); api.*.read_analytics grants it", async () => {
        const {
          apiId,
          keys: [k],
        } = await setup('kv-perm', [null]);
        const otherApi = await w.createApi('kv-perm-other');
        for (const permissions of [[`api.${apiId}.read_key`, `api.${apiId}.read_api`], [`api.${otherApi}.read_analytics`]]) {
          const res = await w.get(path, { keyId: k.id }, await w.rootKey(permissions));
          assert.equal(res.status, 403, res.body);
          assert.equal(res.json.error.detail, `Missing permission: api.${apiId}.read_analytics`);
        }
        for (const permissions of [[`api.${apiId}.read_analytics`], ['api.*.read_analytics']]) {
          const res = await w.get(path, { keyId: k.id }, await w.rootKey(permissions));
          assert.equal(res.status, 200, res.body);
          assert.deepEqual(res.json, { verifications: [] });
        }
      });

      let securityApiId = '<apiId>';
      securityTests(() => w, {
        get permission() {
          return `api.${securityApiId}.read_analytics`;
        },
        request: async (w) => {
          securityApiId = await w.createApi('kv-secure');
          const { keyId } = await w.createKey({ apiId: securityApiId });
          return { method: 'GET', path, query: { keyId } };
        },
        foreign: async (w, other) => {
          const { keyId } = await w.createKey({ apiId: await w.createApi('kv-foreign', other.root) }, other.root);
          return { method: 'GET', path, query: { keyId } };
        },
      });
    });

    describe('analytics.getVerifications', () => {
      const path = '/v1/analytics.getVerifications';
      const ok = <T>(res: Response<T>) => {
        assert.equal(res.status, 200, res.body);
        return res.json;
      };

      /** An API with keys of alice (2), bob (1) and one without identity, and verifications over days 0..2 and the next month. */
      const seeded = async (name: string) => {
        const s = await setup(name, ['alice', 'alice', 'bob', null]);
        const [a1, a2, b, anon] = s.keys;
        const r = new VerificationRecorder(w.store.db, { dialect });
        rec(r, a1, 'VALID', at(0, 0, 10), 5);
        rec(r, a1, 'RATE_LIMITED', at(0, 0, 50), 2);
        rec(r, a2, 'VALID', at(0, 2), 1);
        rec(r, b, 'USAGE_EXCEEDED', at(0, 2, 30), 3);
        rec(r, anon, 'EXPIRED', at(1, 5), 4);
        rec(r, a1, 'DISABLED', at(1, 23, 59), 1);
        rec(r, b, 'VALID', at(2, 0), 6); // 2025-02-01
        rec(r, anon, 'FORBIDDEN', at(2, 7), 1);
        rec(r, a2, 'INSUFFICIENT_PERMISSIONS', at(3, 1), 2); // 2025-02-02
        await r.flush();
        return s;
      };

      test('a 30 h window grouped by hour without data → 30 zero rows, one per hour, ascending', async () => {
        const { apiId } = await setup('an-empty', [null]);
        const start = at(0, 0);
        const res = ok(await w.get<Row[]>(path, { apiId, start, end: start + 30 * HOUR_MS, groupBy: 'hour' }));
        assert.deepEqual(
          res,
          Array.from({ length: 30 }, (_, i) => ({ time: start + i * HOUR_MS, ...counts() })),
        );
        // Ends inside hours widen to whole hours: the partial first and last hours are both listed.
        const now = Date.now();
        const unaligned = ok(await w.get<Row[]>(path, { apiId, start: now - 30 * HOUR_MS, end: now, groupBy: 'hour' }));
        const first = now - 30 * HOUR_MS - ((now - 30 * HOUR_MS) % HOUR_MS);
        assert.deepEqual(
          unaligned.map((x: { time: number }) => x.time),
          Array.from({ length: now % HOUR_MS === 0 ? 30 : 31 }, (_, i) => first + i * HOUR_MS),
        );
      });

      test('hourly series: zero-filled between start and end, data in its hour', async () => {
        const { apiId } = await seeded('an-hourly');
        const res = ok(await w.get<Row[]>(path, { apiId, start: at(0, 0), end: at(0, 4), groupBy: 'hour' }));
        assert.deepEqual(res, [
          { time: at(0, 0), ...counts({ valid: 5, rateLimited: 2 }) },
          { time: at(0, 1), ...counts() },
          { time: at(0, 2), ...counts({ valid: 1, usageExceeded: 3 }) },
          { time: at(0, 3), ...counts() },
        ]);
      });

      test('day and month fold the hours in UTC; every grouping adds up to the same totals', async () => {
        const { apiId } = await seeded('an-fold');
        const window = { apiId, start: at(0, 0), end: at(4, 0) };
        const days = ok(await w.get<Row[]>(path, { ...window, groupBy: 'day' }));
        assert.deepEqual(days, [
          { time: at(0, 0), ...counts({ valid: 6, rateLimited: 2, usageExceeded: 3 }) },
          { time: at(1, 0), ...counts({ expired: 4, disabled: 1 }) },
          { time: at(2, 0), ...counts({ valid: 6, forbidden: 1 }) },
          { time: at(3, 0), ...counts({ insufficientPermissions: 2 }) },
        ]);
        const months = ok(await w.get<Row[]>(path, { ...window, groupBy: 'month' }));
        assert.deepEqual(months, [
          { time: Date.UTC(2025, 0, 1), ...counts({ valid: 6, rateLimited: 2, usageExceeded: 3, expired: 4, disabled: 1 }) },
          { time: Date.UTC(2025, 1, 1), ...counts({ valid: 6, forbidden: 1, insufficientPermissions: 2 }) },
        ]);
        const hours = ok(await w.get<Row[]>(path, { ...window, groupBy: 'hour' }));
        assert.equal(hours.length, 96);
        const total = ok(await w.get<Row[]>(path, window));
        const all = counts({
          valid: 12,
          rateLimited: 2,
          usageExceeded: 3,
          expired: 4,
          disabled: 1,
          forbidden: 1,
          insufficientPermissions: 2,
        });
        assert.deepEqual(total, [all], 'no grouping: one row of totals');
        for (const series of [hours, days, months]) {
          const sum = counts();
          for (const row of series) for (const f of Object.keys(sum) as Array<keyof typeof sum>) sum[f] += row[f];
          assert.deepEqual(sum, all);
        }
        // A window inside a month widens to the whole month when grouped by month.
        assert.deepEqual(ok(await w.get<Row[]>(path, { apiId, start: at(2, 12), end: at(2, 13), groupBy: 'month' })), [months[1]]);
        // Zero-filled days of an empty stretch.
        assert.deepEqual(ok(await w.get<Row[]>(path, { apiId, start: at(5, 0), end: at(7, 0), groupBy: 'day' })), [
          { time: at(5, 0), ...counts() },
          { time: at(6, 0), ...counts() },
        ]);
      });

      test('groupBy key: one row per key with verifications, by keyId; filters by keyId (one or repeated)', async () => {
        const {
          apiId,
          keys: [a1, a2, b, anon],
        } = await seeded('an-key');
        const window = { apiId, start: at(0, 0), end: at(4, 0) };
        const expected = [
          { keyId: a1.id, ...counts({ valid: 5, rateLimited: 2, disabled: 1 }) },
          { keyId: a2.id, ...counts({ valid: 1, insufficientPermissions: 2 }) },
          { keyId: b.id, ...counts({ usageExceeded: 3, valid: 6 }) },
          { keyId: anon.id, ...counts({ expired: 4, forbidden: 1 }) },
        ].sort((x, y) => (x.keyId < y.keyId ? -1 : 1));
        assert.deepEqual(ok(await w.get<Row[]>(path, { ...window, groupBy: 'key' })), expected);

        const one = ok(await w.get<Row[]>(path, { ...window, groupBy: 'key', keyId: b.id }));
        assert.deepEqual(
          one,
          expected.filter((x) => x.keyId === b.id),
        );
        const two = ok(
          await getMulti<Row[]>(w, path, [
            ['apiId', apiId],
            ['start', at(0, 0)],
            ['end', at(4, 0)],
            ['groupBy', 'key'],
            ['keyId', a1.id],
            ['keyId', anon.id],
          ]),
        );
        assert.deepEqual(
          two,
          expected.filter((x) => x.keyId === a1.id || x.keyId === anon.id),
        );
        const summed = ok(
          await getMulti<Row[]>(w, path, [
            ['apiId', apiId],
            ['start', at(0, 0)],
            ['end', at(4, 0)],
            ['keyId', a1.id],
            ['keyId', anon.id],
          ]),
        );
        assert.deepEqual(summed, [counts({ valid: 5, rateLimited: 2, disabled: 1, expired: 4, forbidden: 1 })]);
        // A key of another API, or no key at all, matches nothing.
        const {
          keys: [elsewhere],
        } = await setup('an-key-elsewhere', [null]);
        assert.deepEqual(ok(await w.get<Row[]>(path, { ...window, groupBy: 'key', keyId: elsewhere.id })), []);
        assert.deepEqual(ok(await w.get<Row[]>(path, { ...window, keyId: 'key_nothing' })), [counts()]);
      });

      test('groupBy identity: one row per identity; keys without identity are left out; externalId filters', async () => {
        const {
          apiId,
          keys: [a1],
        } = await seeded('an-identity');
        const window = { apiId, start: at(0, 0), end: at(4, 0) };
        const alice = (
          await w.store.db
            .selectFrom('identities')
            .select('id')
            .where('workspace_id', '=', w.workspaceId)
            .where('external_id', '=', 'alice')
            .executeTakeFirstOrThrow()
        ).id;
        const bob = (
          await w.store.db
            .selectFrom('identities')
            .select('id')
            .where('workspace_id', '=', w.workspaceId)
            .where('external_id', '=', 'bob')
            .executeTakeFirstOrThrow()
        ).id;
        assert.equal(a1.identityId, alice);
        const aliceRow = {
          identity: { id: alice, externalId: 'alice' },
          ...counts({ valid: 6, rateLimited: 2, disabled: 1, insufficientPermissions: 2 }),
        };
        const bobRow = { identity: { id: bob, externalId: 'bob' }, ...counts({ usageExceeded: 3, valid: 6 }) };
        assert.deepEqual(ok(await w.get<Row[]>(path, { ...window, groupBy: 'identity' })), [aliceRow, bobRow]);
        assert.deepEqual(ok(await w.get<Row[]>(path, { ...window, groupBy: 'identity', externalId: 'bob' })), [bobRow]);
        assert.deepEqual(ok(await w.get<Row[]>(path, { ...window, externalId: 'alice' })), [
          counts({ valid: 6, rateLimited: 2, disabled: 1, insufficientPermissions: 2 }),
        ]);
        assert.deepEqual(
          ok(await w.get<Row[]>(path, { ...window, externalId: 'alice', groupBy: 'day' })).map((x: { total: number }) => x.total),
          [8, 1, 0, 2],
        );

        const unknown = await w.get(path, { ...window, externalId: 'nobody' });
        assert.equal(unknown.status, 404, unknown.body);
        assert.equal(unknown.json.error.type, 'https://keyhold.dev/errors/data/identity-not-found');
      });

      test('combined groupings list only (bucket, key) pairs with data', async () => {
        const {
          apiId,
          keys: [a1, a2, b],
        } = await seeded('an-combined');
        const res = ok(
          await getMulti<Row[]>(w, path, [
            ['apiId', apiId],
            ['start', at(0, 0)],
            ['end', at(2, 0)],
            ['groupBy', 'day'],
            ['groupBy', 'key'],
            ['keyId', a1.id],
            ['keyId', a2.id],
            ['keyId', b.id],
          ]),
        );
        const byId = (x: { keyId: string }, y: { keyId: string }) => (x.keyId < y.keyId ? -1 : 1);
        assert.deepEqual(res, [
          ...[
            { time: at(0, 0), keyId: a1.id, ...counts({ valid: 5, rateLimited: 2 }) },
            { time: at(0, 0), keyId: a2.id, ...counts({ valid: 1 }) },
            { time: at(0, 0), keyId: b.id, ...counts({ usageExceeded: 3 }) },
          ].sort(byId),
          { time: at(1, 0), keyId: a1.id, ...counts({ disabled: 1 }) },
        ]);
        const hourly = ok(
          await getMulti<Row[]>(w, path, [
            ['apiId', apiId],
            ['start', at(0, 0)],
            ['end', at(1, 0)],
            ['groupBy', 'hour'],
            ['groupBy', 'identity'],
          ]),
        );
        assert.deepEqual(
          hourly.map((x: { time: number; identity: { externalId: string }; total: number }) => [x.time, x.identity.externalId, x.total]),
          [
            [at(0, 0), 'alice', 7],
            [at(0, 2), 'alice', 1],
            [at(0, 2), 'bob', 3],
          ],
        );
      });

      test('orderBy, order and limit: top identities, busiest hours, time descending', async () => {
        const {
          apiId,
          keys: [a1, , b],
        } = await seeded('an-order');
        const window = { apiId, start: at(0, 0), end: at(4, 0) };
        const top = ok(await w.get<Row[]>(path, { ...window, groupBy: 'key', orderBy: 'total', order: 'desc', limit: 2 }));
        assert.deepEqual(
          top.map((x: { total: number }) => x.total),
          [9, 8],
        );
        assert.deepEqual(
          top.map((x: { keyId: string }) => x.keyId),
          [b.id, a1.id],
        );
        const valid = ok(await w.get<Row[]>(path, { ...window, groupBy: 'identity', orderBy: 'valid' }));
        assert.deepEqual(
          valid.map((x: { identity: { externalId: string }; valid: number }) => [x.identity.externalId, x.valid]),
          [
            ['alice', 6],
            ['bob', 6],
          ],
          'ties by externalId',
        );
        const busiest = ok(await w.get<Row[]>(path, { ...window, groupBy: 'hour', orderBy: 'total', order: 'desc', limit: 3 }));
        assert.deepEqual(
          busiest.map((x: { time: number; total: number }) => [x.time, x.total]),
          [
            [at(0, 0), 7],
            [at(2, 0), 6],
            [at(0, 2), 4],
          ],
          'ties (at(0, 2) and at(1, 5) have 4) by time',
        );
        const desc = ok(await w.get<Row[]>(path, { ...window, groupBy: 'day', order: 'desc' }));
        assert.deepEqual(
          desc.map((x: { time: number }) => x.time),
          [at(3, 0), at(2, 0), at(1, 0), at(0, 0)],
        );
        const limited = ok(await w.get<Row[]>(path, { ...window, groupBy: 'hour', limit: 5 }));
        assert.deepEqual(
          limited.map((x: { time: number }) => x.time),
          [0, 1, 2, 3, 4].map((h) => at(0, h)),
        );
      });

      test('only this API of this workspace counts', async () => {
        const { apiId } = await seeded('an-isolated');
        const {
          keys: [sibling],
        } = await setup('an-isolated-sibling', ['alice']);
        const other = await w.otherWorkspace();
        const {
          keys: [theirs],
        } = await setup('an-isolated-theirs', ['alice'], other.root);
        const r = new VerificationRecorder(w.store.db, { dialect });
        rec(r, sibling, 'VALID', at(0, 0), 100);
        rec(r, theirs, 'VALID', at(0, 0), 1000, other.workspaceId);
        await r.flush();
        const res = ok(await w.get<Row[]>(path, { apiId, start: at(0, 0), end: at(4, 0) }));
        assert.equal(res[0].total, 25);
        assert.deepEqual(ok(await w.get<Row[]>(path, { apiId: theirs.apiId, start: at(0, 0), end: at(4, 0) }, other.root)), [
          counts({ valid: 1000 }),
        ]);
      });

      test('invalid query → 400 naming the problems', async () => {
        const { apiId } = await setup('an-invalid', [null]);
        const cases: Array<[Record<string, string | number>, string[]]> = [
          [{ apiId, start: at(1, 0), end: at(1, 0) }, ['/start']],
          [{ apiId, start: at(1, 0), end: at(0, 0) }, ['/start']],
          [{ apiId }, ['/start']],
          [{ start: at(0, 0) }, ['/apiId']],
          [{ apiId: '', start: at(0, 0) }, ['/apiId']],
          [{ apiId, start: 'soon' }, ['/start']],
          [{ apiId, start: at(0, 0), end: -5 }, ['/end']],
          [{ apiId, start: at(0, 0), limit: 0 }, ['/limit']],
          [{ apiId, start: at(0, 0), orderBy: 'name' }, ['/orderBy']],
          [{ apiId, start: at(0, 0), order: 'up' }, ['/order']],
          [{ apiId, start: at(0, 0), orderBy: 'time' }, ['/orderBy']],
          [{ apiId, start: 0, end: at(0, 0), groupBy: 'hour' }, ['/start']],
          [{ apiId, start: at(0, 0), end: at(0, 0) + 10_001 * HOUR_MS, groupBy: 'hour' }, ['/start']],
          [{ apiId, start: at(0, 0), externalId: '' }, ['/externalId']],
        ];
        for (const [query, paths] of cases) {
          const res = await w.get(path, query);
          assert.equal(res.status, 400, `${JSON.stringify(query)}: ${res.body}`);
          assert.equal(res.json.error.code, 'BAD_REQUEST');
          assert.deepEqual([...new Set(res.json.error.errors.map((e: { path: string }) => e.path))].sort(), paths, JSON.stringify(query));
        }
        const equal = await w.get(path, { apiId, start: at(1, 0), end: at(1, 0) });
        assert.equal(equal.json.error.errors[0].message, 'must be less than end');
        for (const params of [
          [
            ['groupBy', 'hour'],
            ['groupBy', 'day'],
          ],
          [
            ['groupBy', 'tags'],
            ['groupBy', 'tag'],
          ],
          [
            ['groupBy', 'key'],
            ['groupBy', 'week'],
          ],
        ]) {
          const res = await getMulti(w, path, [
            ['apiId', apiId],
            ['start', at(0, 0)],
            ['end', at(1, 0)],
            ...(params as Array<[string, string]>),
          ]);
          assert.equal(res.status, 400, `${JSON.stringify(params)}: ${res.body}`);
          assert.ok(
            res.json.error.errors.every((e: { path: string }) => e.path.startsWith('/groupBy')),
            res.body,
          );
        }
        // 10 000 hours are allowed, and long windows are fine by day or month.
        assert.equal(
          ok(await w.get<Row[]>(path, { apiId, start: at(0, 0), end: at(0, 0) + 10_000 * HOUR_MS, groupBy: 'hour' })).length,
          10_000,
        );
        assert.equal(
          ok(await w.get<Row[]>(path, { apiId, start: Date.UTC(2000, 0, 1), end: Date.UTC(2025, 0, 1), groupBy: 'month' })).length,
          300,
        );
      });

      test('unknown, deleted or foreign API → 404', async () => {
        const { apiId } = await setup('an-404', [null]);
        await w.store.db.updateTable('apis').set({ deleted_at: Date.now() }).where('id', '=', apiId).execute();
        const other = await w.otherWorkspace();
        const theirs = await w.createApi('an-404-theirs', other.root);
        for (const id of ['api_1111111111111111111111', apiId, theirs]) {
          const res = await w.get(path, { apiId: id, start: at(0, 0) });
          assert.equal(res.status, 404, res.body);
          assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/api-not-found');
        }
      });

      test("needs read_analytics on this API; read_api or another API's read_analytics is not enough", async () => {
        const { apiId } = await setup('an-perm', [null]);
        const otherApi = await w.createApi('an-perm-other');
        for (const permissions of [[`api.${apiId}.read_api`, `api.${apiId}.read_key`], [`api.${otherApi}.read_analytics`]]) {
          const res = await w.get(path, { apiId, start: at(0, 0), end: at(1, 0) }, await w.rootKey(permissions));
          assert.equal(res.status, 403, res.body);
          assert.equal(res.json.error.detail, `Missing permission: api.${apiId}.read_analytics`);
        }
        for (const permissions of [[`api.${apiId}.read_analytics`], ['api.*.read_analytics'], ['*']]) {
          const res = await w.get(path, { apiId, start: at(0, 0), end: at(1, 0) }, await w.rootKey(permissions));
          assert.deepEqual(ok(res), [counts()]);
        }
      });

      let securityApiId = '<apiId>';
      securityTests(() => w, {
        get permission() {
          return `api.${securityApiId}.read_analytics`;
        },
        request: async (w) => {
          securityApiId = await w.createApi('an-secure');
          return { method: 'GET', path, query: { apiId: securityApiId, start: Date.now() - HOUR_MS } };
        },
        foreign: async (w, other) => ({
          method: 'GET',
          path,
          query: { apiId: await w.createApi('an-foreign', other.root), start: Date.now() - HOUR_MS },
        }),
      });
    });
  });
}
