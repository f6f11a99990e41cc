import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore, type World } from '../../helpers/harness.ts';
import { faultyWorld, InjectedFailure, type StatementFaults } from '../../helpers/faults.ts';
import { eventually } from '../../helpers/outages.ts';
import { RatelimitRecorder, type RatelimitEvent } from '../../../src/services/ratelimits/ratelimit-recorder.ts';
import { openStore } from '../../../src/store/store.ts';
import { newId } from '../../../src/domain/ids.ts';
import { prng } from '../../helpers/prng.ts';

const HOUR_MS = 3_600_000;
/** A fixed, hour-aligned origin: 2025-01-30T00:00Z. */
const T0 = Date.UTC(2025, 0, 30);
const at = (hour: number, minute = 0) => T0 + hour * HOUR_MS + minute * 60_000;

/** `namespace|identifier|hour` → [passed, denied]. */
type Tally = Map<string, [number, number]>;
const bump = (tally: Tally, namespaceId: string, identifier: string, hour: number, passed: number, denied: number) => {
  const id = `${namespaceId}|${identifier}|${hour}`;
  const c = tally.get(id) ?? [0, 0];
  tally.set(id, [c[0] + passed, c[1] + denied]);
};

/** Rows sorted here by (namespace, identifier, hour): PostgreSQL's collation may order strings differently. */
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
type HourRow = { namespace_id: string; identifier: string; hour: number; workspace_id: string; passed: number; denied: number };
const byRow = (a: HourRow, b: HourRow) => cmp(a.namespace_id, b.namespace_id) || cmp(a.identifier, b.identifier) || a.hour - b.hour;

for (const dialect of DIALECTS) {
  describe(`RatelimitRecorder (${dialect})`, () => {
    let w: World;
    let faults: StatementFaults;
    before(async () => {
      ({ w, faults } = await faultyWorld(dialect));
    });
    after(() => w.close());

    /** A namespace row of the test workspace, inserted directly. */
    const namespace = async (name: string): Promise<string> => {
      const id = newId('rlns');
      const now = Date.now();
      await w.store.db
        .insertInto('ratelimit_namespaces')
        .values({ id, workspace_id: w.workspaceId, name, created_at: now, updated_at: now })
        .execute();
      return id;
    };
    /** The per-hour roll-up rows, as (passed, denied) per (namespace, identifier, hour). */
    const rows = async (namespaceIds: string[]): Promise<HourRow[]> =>
      (await w.store.db.selectFrom('analytics_ratelimits_per_hour').selectAll().where('namespace_id', 'in', namespaceIds).execute())
        .map((x) => ({
          namespace_id: x.namespace_id,
          identifier: x.identifier,
          hour: Number(x.time),
          workspace_id: x.workspace_id,
          passed: Number(x.passed),
          denied: Number(x.total) - Number(x.passed),
        }))
        .sort(byRow);
    /** Raw events stored for these namespaces. */
    const rawCount = async (namespaceIds: string[]) =>
      Number(
        (
          await w.store.db
            .selectFrom('analytics_ratelimits')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('namespace_id', 'in', namespaceIds)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const expected = (tally: Tally) =>
      [...tally]
        .map(([id, [passed, denied]]) => {
          const [namespace_id, identifier, hour] = id.split('|');
          return { namespace_id, identifier, hour: Number(hour), workspace_id: w.workspaceId, passed, denied };
        })
        .sort(byRow);
    const event = (namespaceId: string, identifier: string, time: number, passed: boolean): RatelimitEvent => ({
      workspaceId: w.workspaceId,
      namespaceId,
      identifier,
      passed,
      time,
    });
    /** Records `n` random decisions over namespaces × `identifiers` identifiers × 4 hours; adds them to the tally. */
    const recordRandom = (r: RatelimitRecorder, namespaceIds: string[], identifiers: number, n: number, seed: number, tally: Tally) => {
      const rand = prng(seed);
      for (let i = 0; i < n; i++) {
        const ns = namespaceIds[Math.floor(rand() * namespaceIds.length)];
        const identifier = `user_${Math.floor(rand() * identifiers)}`;
        const time = at(Math.floor(rand() * 4), Math.floor(rand() * 60));
        const passed = rand() < 0.7;
        r.record(event(ns, identifier, time, passed));
        bump(tally, ns, identifier, time - (time % HOUR_MS), passed ? 1 : 0, passed ? 0 : 1);
      }
      return tally;
    };

    test('4000 decisions: queued in memory, then one flush writes them raw and passed/denied per (namespace, identifier, hour) in ONE transaction', async () => {
      const ids = [await namespace('exact-a'), await namespace('exact-b')];
      const r = new RatelimitRecorder(w.store.db, { dialect });
      const tally = recordRandom(r, ids, 90, 4000, 7, new Map());
      assert.equal(r.buffered, 4000, 'one queued event per decision');
      assert.ok(tally.size > 500, `more rows than one statement writes (${tally.size})`);
      assert.deepEqual(await rows(ids), [], 'record() writes nothing');

      const run = await faults.run(() => r.flush());
      assert.equal(r.buffered, 0);
      // On PostgreSQL the day partitions are created first (outside the transaction); then ONE transaction.
      const begin = run.statements.findLastIndex((x) => /^begin/i.test(x));
      if (dialect === 'sqlite') assert.equal(begin, 0);
      else
        assert.deepEqual(
          run.statements.slice(0, begin).filter((x) => !/_p2025\d{4}|pg_class|pg_advisory_xact_lock|^begin|^commit/i.test(x)),
          [],
          'before the batch: only the day partitions',
        );
      assert.match(run.statements.at(-1)!, /^commit/i);
      const inside = run.statements.slice(begin + 1, -1);
      assert.ok(inside.length >= 5, 'the raw rows, then the roll-ups of the four grains');
      assert.deepEqual(
        inside.filter((x) => !/^insert into ("[^"]+"\.)?"?analytics_ratelimits/i.test(x)),
        [],
        'only inserts and upserts into the analytics tables',
      );
      assert.equal(await rawCount(ids), 4000, 'every decision stored raw');
      const written = await rows(ids);
      assert.deepEqual(written, expected(tally));
      assert.equal(
        written.reduce((a, x) => a + x.passed + x.denied, 0),
        4000,
      );
    });

    test('repeated flushes add to the rows without double counting; an empty flush executes nothing', async () => {
      const ids = [await namespace('repeat')];
      const r = new RatelimitRecorder(w.store.db, { dialect });
      const tally = recordRandom(r, ids, 20, 300, 11, new Map());
      await r.flush();
      recordRandom(r, ids, 20, 400, 12, tally);
      await r.flush();
      assert.deepEqual((await faults.run(() => r.flush())).statements, [], 'nothing buffered: no statement');
      assert.deepEqual(await rows(ids), expected(tally));

      // Flushes started together run one after another, each writing what was buffered when it began.
      r.record(event(ids[0], 'user_0', at(0), true));
      const first = r.flush();
      r.record(event(ids[0], 'user_0', at(0), false));
      await Promise.all([first, r.flush(), r.flush()]);
      bump(tally, ids[0], 'user_0', at(0), 1, 1);
      assert.deepEqual(await rows(ids), expected(tally));
      assert.equal(await rawCount(ids), 702, 'each decision stored raw once');
    });

    test('a flush failing at any of its statements writes nothing and keeps its counts, merged with those recorded meanwhile', async () => {
      const ids = [await namespace('fail-a'), await namespace('fail-b')];
      /** Calls `taken` as a write starts: the flush has just taken the buffer. */
      const r = new (class extends RatelimitRecorder {
        taken?: () => void;
        protected override write(batch: Parameters<RatelimitRecorder['write']>[0]): Promise<void> {
          this.taken?.();
          return super.write(batch);
        }
      })(w.store.db, { dialect });
      const tally = recordRandom(r, ids, 90, 2000, 21, new Map());
      await r.flush();
      const stored = await rows(ids);
      const storedRaw = await rawCount(ids);

      // begin, the raw inserts, the roll-up upserts of four grains, commit (the day partitions exist already).
      // After a failed flush, the next one first asks the store `select 1` in a transaction (and takes the
      // queue only once it answers): three more statements before its begin.
      const pending: Tally = new Map();
      recordRandom(r, ids, 90, 3000, 22, pending);
      let pendingEvents = 3000;
      for (const failAt of [1, 5, 6, 7, 8]) {
        const buffered = r.buffered;
        let taken = -1;
        // Once the flush has taken the buffer, record more: some into rows it holds, one into a new row.
        r.taken = () => {
          taken = r.buffered;
          r.record(event(ids[0], 'user_1', at(2, 30), true));
          r.record(event(ids[1], `meanwhile_${failAt}`, at(3), false));
        };
        const run = await faults.run(
          () =>
            r.flush().then(
              () => assert.fail('the flush should fail'),
              (err: unknown) => err,
            ),
          failAt,
        );
        r.taken = undefined;
        assert.equal(taken, 0, 'the flush took the queue');
        assert.ok(run.tripped && run.value instanceof InjectedFailure, `failure injected at statement ${failAt}: ${run.value}`);
        if (failAt > 1) assert.match(run.statements[1], /^select 1$/i, 'after a failure, the store is asked first');
        bump(pending, ids[0], 'user_1', at(2), 1, 0);
        bump(pending, ids[1], `meanwhile_${failAt}`, at(3), 0, 1);
        pendingEvents += 2;
        assert.equal(r.buffered, pendingEvents, 'the failed batch is back, with what was recorded meanwhile');
        assert.ok(r.buffered > buffered);
        assert.deepEqual(await rows(ids), stored, `nothing of the flush failing at statement ${failAt} was written`);
        assert.equal(await rawCount(ids), storedRaw, 'no raw event either');
      }

      await r.flush();
      assert.equal(r.buffered, 0);
      for (const [id, [p, d]] of pending) {
        const [ns, identifier, hour] = id.split('|');
        bump(tally, ns, identifier, Number(hour), p, d);
      }
      assert.deepEqual(await rows(ids), expected(tally), 'every count exactly once');
      assert.equal(await rawCount(ids), storedRaw + pendingEvents, 'every raw event exactly once');
    });

    test('a flush against a closed store rejects and keeps every counter; onError gets the failures nobody awaits', async () => {
      const fresh = await freshStore(dialect);
      const errors: unknown[] = [];
      const r = new RatelimitRecorder(fresh.store.db, { flushIntervalMs: 10, onError: (err) => errors.push(err) });
      r.record(event('rlns_closed', 'a', at(1), true));
      r.record(event('rlns_closed', 'a', at(1, 5), false));
      r.record(event('rlns_closed', 'b', at(2), true));
      await fresh.close();
      await assert.rejects(r.flush());
      assert.equal(r.buffered, 3);
      r.start();
      await eventually('failed timed flushes reported to onError', async () => errors.length >= 2);
      await assert.rejects(r.close(), 'close stops the timer, then its flush fails too');
      assert.equal(r.buffered, 3, 'still failing, still kept');
    });

    test('two recorders on two stores of one database (two nodes) flushing the same rows at once: no deadlock, every count once', async () => {
      const ids = [await namespace('nodes-a'), await namespace('nodes-b')];
      const other = openStore(w.url);
      try {
        const a = new RatelimitRecorder(w.store.db, { dialect });
        const b = new RatelimitRecorder(other.db, { dialect });
        const tally: Tally = new Map();
        // 2 × 150 identifiers × 4 hours = 1200 rows each, three upsert statements, recorded in opposite orders.
        const all: Array<[string, string, number]> = [];
        for (const ns of ids) for (let i = 0; i < 150; i++) for (let h = 0; h < 4; h++) all.push([ns, `id-${i}`, at(h)]);
        for (let round = 0; round < 4; round++) {
          for (const [ns, identifier, hour] of all) {
            a.record(event(ns, identifier, hour, true));
            bump(tally, ns, identifier, hour, 1, 0);
          }
          for (const [ns, identifier, hour] of all.toReversed()) {
            b.record(event(ns, identifier, hour + 60_000, round % 2 === 0));
            bump(tally, ns, identifier, hour, round % 2 === 0 ? 1 : 0, round % 2 === 0 ? 0 : 1);
          }
          await Promise.all([a.flush(), b.flush()]);
        }
        assert.equal(a.buffered + b.buffered, 0);
        assert.deepEqual(await rows(ids), expected(tally));
      } finally {
        await other.close();
      }
    });

    test('maxBatch queued events start a flush without the timer; start() flushes on a timer; close() flushes the rest', async () => {
      const [ns] = [await namespace('timers')];
      const early = new RatelimitRecorder(w.store.db, { maxBatch: 12, dialect });
      for (let i = 0; i < 10; i++) early.record(event(ns, 'x', at(0), true)); // one row, many decisions
      early.record(event(ns, 'y', at(0), false));
      assert.equal(early.buffered, 11);
      await new Promise((res) => setTimeout(res, 30));
      assert.deepEqual(await rows([ns]), [], 'below the threshold nothing is written');
      early.record(event(ns, 'x', at(1), true));
      await eventually('the early flush', async () => (await rows([ns])).length === 3);
      assert.equal(early.buffered, 0);

      const timed = new RatelimitRecorder(w.store.db, { flushIntervalMs: 20, dialect });
      timed.start();
      for (let i = 0; i < 4; i++) timed.record(event(ns, 'z', at(0), i % 2 === 0));
      await eventually('the timed flush', async () => (await rows([ns])).length === 4);
      timed.record(event(ns, 'z', at(0), false));
      await timed.close();
      timed.record(event(ns, 'z', at(0), false));
      await new Promise((res) => setTimeout(res, 60));
      assert.deepEqual(
        (await rows([ns])).map((x) => [x.identifier, x.hour, x.passed, x.denied]),
        [
          ['x', at(0), 10, 0],
          ['x', at(1), 1, 0],
          ['y', at(0), 0, 1],
          ['z', at(0), 2, 3],
        ],
        'closed: the timer is stopped, the last decision stays buffered',
      );
      assert.equal(timed.buffered, 1);
    });
  });
}
