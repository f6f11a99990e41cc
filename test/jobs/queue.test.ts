import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { count } from '../helpers/rows.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { announceJobs, enqueue, PermanentJobError, type TaskDefinition, type TaskRegistry } from '../../src/jobs/queue.ts';
import { JobQueue } from '../../src/jobs/job-queue.ts';
import { Worker } from '../../src/jobs/worker.ts';

for (const dialect of DIALECTS) {
  describe(`job queue (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    /** A test task under the registry's one name, recording its runs; `fail` decides whether a run throws. */
    const recorder = (behaviour: { fail?: (n: number) => Error | undefined; onGiveUp?: (reason: string) => void } = {}) => {
      const runs: number[] = [];
      const definition: TaskDefinition<{ n: number; tag: string }> = {
        async run(tx, payload) {
          runs.push(payload.n);
          // A write that must commit or roll back with the job.
          await tx
            .insertInto('settings')
            .values({ name: `${payload.tag}:${payload.n}:${randomBytes(4).toString('hex')}`, value: 'ran', updated_at: 0 })
            .execute();
          const err = behaviour.fail?.(payload.n);
          if (err) throw err;
        },
        async giveUp(tx, payload, reason) {
          behaviour.onGiveUp?.(reason);
          await tx
            .insertInto('settings')
            .values({ name: `${payload.tag}:gaveup:${payload.n}`, value: reason, updated_at: 0 })
            .execute();
        },
      };
      return { runs, tasks: { 'migration.import': definition } as unknown as TaskRegistry };
    };
    const put = (store: Store, tag: string, n: number, opts: { maxAttempts?: number; now?: number } = {}) =>
      store.db.transaction().execute((tx) => enqueue(tx, 'migration.import', { n, tag } as never, opts));
    const committed = async (tag: string) =>
      (await w.store.db.selectFrom('settings').select('name').where('name', 'like', `${tag}:%`).execute()).map((r) => r.name);
    const jobRow = (id: string) => w.store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();

    test('a failing job is retried with exponential backoff (base·2^attempts), its writes rolled back each time, then fails for good and gives up once', async () => {
      let now = 1_000_000;
      const gaveUp: string[] = [];
      const { runs, tasks } = recorder({ fail: () => new Error('boom'), onGiveUp: (r) => gaveUp.push(r) });
      const queue = new JobQueue(w.store, tasks, { backoffBaseMs: 1000, now: () => now });
      const id = await put(w.store, 'backoff', 1, { maxAttempts: 3, now });
      let [job] = await queue.claim('A', 10);
      assert.equal(job.id, id);
      assert.equal(job.attempts, 1);
      assert.deepEqual(await queue.process(job), { outcome: 'retried', error: 'Error: boom' });
      let row = (await jobRow(id))!;
      assert.deepEqual([row.status, Number(row.run_at), row.locked_by, row.last_error], ['pending', now + 2000, null, 'Error: boom']);
      now += 1999;
      assert.deepEqual(await queue.claim('A', 10), [], 'not before its backoff');
      now += 1;
      [job] = await queue.claim('A', 10);
      assert.equal(job.attempts, 2);
      assert.equal((await queue.process(job)).outcome, 'retried');
      row = (await jobRow(id))!;
      assert.equal(Number(row.run_at), now + 4000);
      now += 4000;
      [job] = await queue.claim('A', 10);
      assert.equal(job.attempts, 3);
      assert.equal((await queue.process(job)).outcome, 'failed');
      row = (await jobRow(id))!;
      assert.deepEqual([row.status, Number(row.attempts), row.last_error], ['failed', 3, 'Error: boom']);
      assert.deepEqual(runs, [1, 1, 1]);
      assert.deepEqual(gaveUp, ['Error: boom']);
      assert.deepEqual(await committed('backoff'), ['backoff:gaveup:1'], "no write of a failed attempt survives; giveUp's does");
      now += 10 ** 9;
      assert.deepEqual(await queue.claim('A', 10), [], 'a failed job is never claimed again');
    });

    test('PermanentJobError fails at once; a job that succeeds on a retry commits exactly once and is deleted', async () => {
      let now = 5_000_000;
      const { runs, tasks } = recorder({
        fail: (n) =>
          n === 1 ? new PermanentJobError('bad payload') : runs.filter((x) => x === 2).length === 1 ? new Error('transient') : undefined,
      });
      const queue = new JobQueue(w.store, tasks, { backoffBaseMs: 10, now: () => now });
      const permanent = await put(w.store, 'perm', 1, { now });
      const flaky = await put(w.store, 'perm', 2, { now });
      const claimed = await queue.claim('A', 10);
      assert.deepEqual(
        claimed.map((j) => j.id),
        [permanent, flaky],
      );
      assert.equal((await queue.process(claimed[0])).outcome, 'failed');
      assert.equal((await queue.process(claimed[1])).outcome, 'retried');
      now += 20;
      const [again] = await queue.claim('A', 10);
      assert.equal((await queue.process(again)).outcome, 'completed');
      assert.equal(await jobRow(flaky), undefined, 'completed jobs are deleted');
      assert.equal((await committed('perm')).filter((n) => n.startsWith('perm:2:')).length, 1);
      assert.deepEqual(runs, [1, 2, 2]);
    });

    test("stale-lock recovery: a running job whose lock is older than the visibility timeout goes back to pending; the old holder's run is discarded", async () => {
      let now = 9_000_000;
      const { runs, tasks } = recorder();
      const queue = new JobQueue(w.store, tasks, { staleMs: 30_000, now: () => now });
      const id = await put(w.store, 'stale', 1, { now });
      const [held] = await queue.claim('dead-worker', 1);
      assert.equal(held.id, id);
      now += 20_000;
      assert.equal(await queue.heartbeat(held), true);
      now += 29_999;
      assert.deepEqual(await queue.recoverStale(), { requeued: 0, failed: 0 }, 'the heartbeat kept it');
      assert.deepEqual(await queue.claim('B', 1), []);
      now += 2;
      assert.deepEqual(await queue.recoverStale(), { requeued: 1, failed: 0 });
      const row = (await jobRow(id))!;
      assert.deepEqual([row.status, row.locked_by], ['pending', null]);
      assert.match(row.last_error!, /lock expired.*dead-worker/);
      const [taken] = await queue.claim('B', 1);
      assert.equal(taken.attempts, 2);
      // The first holder wakes up: its lock is gone, so nothing it does is kept.
      assert.equal(await queue.heartbeat(held), false);
      assert.deepEqual(await queue.process(held), { outcome: 'lost' });
      assert.equal(await queue.fail(held, new Error('late')), 'lost');
      assert.equal((await queue.process(taken)).outcome, 'completed');
      assert.deepEqual(runs, [1]);
      assert.equal((await committed('stale')).length, 1);
    });

    test('stale-lock recovery of a job on its last attempt fails it for good (giveUp runs)', async () => {
      let now = 20_000_000;
      const { tasks } = recorder();
      const queue = new JobQueue(w.store, tasks, { staleMs: 1000, now: () => now });
      const id = await put(w.store, 'exhausted', 1, { maxAttempts: 1, now });
      await queue.claim('dead-worker', 1);
      now += 1001;
      assert.deepEqual(await queue.recoverStale(), { requeued: 0, failed: 1 });
      assert.equal((await jobRow(id))!.status, 'failed');
      assert.deepEqual(await committed('exhausted'), ['exhausted:gaveup:1']);
    });

    test('two queue clients (two connections or pools) on one store never claim or run one job twice', async () => {
      const second = openStore(w.url);
      try {
        const N = 120;
        for (let i = 0; i < N; i += 40) {
          await w.store.db.transaction().execute(async (tx) => {
            for (let n = i; n < i + 40; n++) await enqueue(tx, 'migration.import', { n, tag: 'race' } as never);
          });
        }
        // Claims alone: concurrent claims of everything get disjoint sets that cover every job.
        const claimants = [new JobQueue(w.store, recorder().tasks), new JobQueue(second, recorder().tasks)];
        const claims = await Promise.all([0, 1, 2, 3].map((i) => claimants[i % 2].claim(`C${i}`, N)));
        const ids = claims.flat().map((j) => j.id);
        assert.equal(ids.length, N);
        assert.equal(new Set(ids).size, N);
        await w.store.db
          .updateTable('jobs')
          .set({ status: 'pending', locked_at: null, locked_by: null, attempts: 0 })
          .where('status', '=', 'running')
          .execute();

        // Workers: every job runs exactly once in all.
        const a = recorder();
        const b = recorder();
        const workers = [
          new Worker(new JobQueue(w.store, a.tasks), { id: 'wa', concurrency: 4, pollMs: 10 }),
          new Worker(new JobQueue(second, b.tasks), { id: 'wb', concurrency: 4, pollMs: 10 }),
        ];
        for (const worker of workers) worker.start();
        const deadline = Date.now() + 60_000;
        while ((await count(w.store.db, 'jobs', ['status', 'pending'])) + (await count(w.store.db, 'jobs', ['status', 'running'])) > 0) {
          assert.ok(Date.now() < deadline, 'jobs finish');
          await new Promise((r) => setTimeout(r, 20));
        }
        await Promise.all(workers.map((x) => x.stop()));
        const all = [...a.runs, ...b.runs].sort((x, y) => x - y);
        assert.deepEqual(
          all,
          Array.from({ length: N }, (_, i) => i),
          'each job ran once',
        );
        const rows = await committed('race');
        assert.equal(rows.length, N);
        assert.equal(new Set(rows.map((r) => r.split(':')[1])).size, N);
        assert.equal(workers[0].stats.completed + workers[1].stats.completed, N);
        assert.equal(workers[0].stats.lost + workers[1].stats.lost, 0);
      } finally {
        await second.close();
      }
    });

    test('a worker wakes up for jobs enqueued in its process and stops gracefully after finishing the job in flight', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      let started!: () => void;
      const running = new Promise<void>((r) => {
        started = r;
      });
      const runs: number[] = [];
      const tasks = {
        'migration.import': {
          async run(_tx: unknown, p: { n: number }) {
            started();
            await gate;
            runs.push(p.n);
          },
        },
      } as unknown as TaskRegistry;
      const worker = new Worker(new JobQueue(w.store, tasks), { pollMs: 60_000, concurrency: 1 });
      worker.start();
      await new Promise((r) => setTimeout(r, 50));
      await put(w.store, 'wake', 7);
      announceJobs();
      await running;
      const stopped = worker.stop();
      let done = false;
      void stopped.then(() => {
        done = true;
      });
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(done, false, 'stop waits for the job in flight');
      release();
      await stopped;
      assert.deepEqual(runs, [7]);
      assert.equal(worker.stats.completed, 1);
    });
  });
}
