import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { sha256b64 } from '../helpers/hashes.ts';
import { hashOf } from '../helpers/migrations.ts';
import { REPO_ROOT } from '../helpers/repo.ts';
import { sleep } from '../helpers/timing.ts';
import { createMigration } from '../../src/services/migrations/migration-records.ts';

/**
 * SPEC §6: every enqueued item ends exactly once as migrated or failed, across crashes. A `keyhold worker`
 * process is killed with SIGKILL in the middle of an import (some items migrated, not all), another one is
 * started (it recovers the dead worker's job once its lock is older than the visibility timeout), and is
 * killed too; a last one finishes the import and stops on SIGTERM. Then nothing is lost, nothing imported twice.
 */

const ITEMS = 3000;
const BATCH = 100;
/** Every DUPLICATE_EVERY-th item repeats the hash of the item before it: it must fail, once. */
const DUPLICATE_EVERY = 250;
const VISIBILITY_MS = 1500;

interface Running {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: string[];
  stderr: string[];
}

function startWorker(url: string): Running {
  const child = spawn(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      'bin/keyhold.js',
      'worker',
      '--json',
      '--concurrency',
      '2',
      '--visibility-timeout',
      String(VISIBILITY_MS),
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const stdout: string[] = [];
  const stderr: string[] = [];
  child.stdout!.on('data', (d: Buffer) => stdout.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, stdout, stderr };
}

for (const dialect of DIALECTS) {
  describe(`migration import survives kill -9 of its worker (${dialect})`, () => {
    let w: World;
    const children: ChildProcess[] = [];
    before(async () => {
      w = await world(dialect);
    });
    after(async () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await w.close();
    });

    const statusCounts = async (migrationId: string): Promise<Record<string, number>> => {
      const rows = await w.store.db
        .selectFrom('key_migration_items')
        .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
        .where('migration_id', '=', migrationId)
        .groupBy('status')
        .execute();
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    };

    test(`${ITEMS} items: killed mid-import twice, finished by a third worker; each item migrated or failed exactly once`, {
      timeout: 180_000,
    }, async () => {
      const apiId = await w.createApi('crash');
      const { migrationId } = await createMigration(w.store.db, w.workspaceId, 'crash', { type: 'operator', id: 'test' });
      const plains: string[] = [];
      for (let i = 0; i < ITEMS; i++)
        plains.push(i % DUPLICATE_EVERY === DUPLICATE_EVERY - 1 ? plains[i - 1] : `crash_${randomBytes(16).toString('hex')}`);
      for (let i = 0; i < ITEMS; i += BATCH) {
        // Hashes mostly; every 10th item as a plaintext (sealed by the vault at enqueue), with a rate limit.
        const keys = plains
          .slice(i, i + BATCH)
          .map((p, j) =>
            (i + j) % 10 === 0
              ? { plaintext: p, prefix: 'crash', ratelimit: { limit: 10, duration: 1000 } }
              : { hash: hashOf(p), name: `item ${i + j}` },
          );
        const res = await w.post('/v1/migrations.enqueueKeys', { migrationId, apiId, keys });
        assert.equal(res.status, 202, res.body);
      }
      assert.deepEqual(await statusCounts(migrationId), { pending: ITEMS });

      // Two workers killed in the middle of the import, the second one after it took over the first one's work.
      let previous = 0;
      for (let round = 0; round < 2; round++) {
        const worker = startWorker(w.url);
        children.push(worker.child);
        const deadline = Date.now() + 60_000;
        const doneNow = async () => ITEMS - ((await statusCounts(migrationId)).pending ?? 0);
        // Kill as soon as this worker has made progress, while most of the import is still ahead.
        let done = await doneNow();
        while (done <= previous) {
          assert.ok(Date.now() < deadline, `worker ${round} made no progress: ${worker.stderr.join('')}`);
          assert.equal(worker.child.exitCode, null, `worker ${round} exited early: ${worker.stderr.join('')}`);
          await sleep(5);
          done = await doneNow();
        }
        worker.child.kill('SIGKILL');
        assert.equal((await worker.exited).signal, 'SIGKILL');
        const after = await statusCounts(migrationId);
        const settled = ITEMS - (after.pending ?? 0);
        assert.ok(settled > previous && settled < ITEMS, `killed after some but not all items: ${JSON.stringify(after)}`);
        previous = settled;
      }
      // The dead workers' claims are still marked running until their lock expires.
      const last = startWorker(w.url);
      children.push(last.child);
      const deadline = Date.now() + 90_000;
      while ((await statusCounts(migrationId)).pending) {
        assert.ok(Date.now() < deadline, `the import finishes: ${JSON.stringify(await statusCounts(migrationId))} ${last.stderr.join('')}`);
        assert.equal(last.child.exitCode, null, last.stderr.join(''));
        await sleep(50);
      }
      last.child.kill('SIGTERM');
      const exit = await last.exited;
      assert.equal(exit.code, 0, `graceful stop on SIGTERM: ${last.stderr.join('')}`);
      const summary = JSON.parse(last.stdout.join(''));
      assert.ok(summary.completed >= 1, JSON.stringify(summary));

      // Exactly once: every item has one outcome, every migrated item one key, and no key without its item.
      const items = await w.store.db
        .selectFrom('key_migration_items')
        .selectAll()
        .where('migration_id', '=', migrationId)
        .orderBy('item_index')
        .execute();
      assert.equal(items.length, ITEMS);
      const duplicates = new Set(Array.from({ length: ITEMS }, (_, i) => i).filter((i) => i % DUPLICATE_EVERY === DUPLICATE_EVERY - 1));
      for (const item of items) {
        const i = Number(item.item_index);
        assert.equal(item.hash, sha256b64(plains[i]));
        if (duplicates.has(i)) {
          assert.deepEqual([item.status, item.key_id], ['failed', null], `item ${i}`);
          assert.match(item.reason!, /^duplicate hash/);
        } else {
          assert.equal(item.status, 'migrated', `item ${i}: ${item.reason}`);
          assert.ok(item.key_id);
        }
      }
      const keys = await w.store.db.selectFrom('keys').select(['id', 'hash']).where('migration_id', '=', migrationId).execute();
      const migrated = items.filter((i) => i.status === 'migrated');
      assert.equal(keys.length, migrated.length, 'one key per migrated item');
      assert.equal(new Set(keys.map((k) => k.hash)).size, keys.length, 'no hash imported twice');
      const keyById = new Map(keys.map((k) => [k.id, k.hash]));
      for (const item of migrated) assert.equal(keyById.get(item.key_id!), item.hash, `item ${item.item_index} points at its own key`);
      assert.equal(new Set(migrated.map((i) => i.key_id)).size, migrated.length);
      const created = await w.store.db
        .selectFrom('audit_logs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('event', '=', 'key.create')
        .where(
          'target_id',
          'in',
          keys.map((k) => k.id),
        )
        .executeTakeFirstOrThrow();
      assert.equal(Number(created.n), keys.length, 'one key.create audit record per key');
      const encrypted = await w.store.db
        .selectFrom('encrypted_keys')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(
          'key_id',
          'in',
          keys.map((k) => k.id),
        )
        .executeTakeFirstOrThrow();
      assert.equal(
        Number(encrypted.n),
        migrated.filter((i) => Number(i.item_index) % 10 === 0).length,
        'plaintext items are stored encrypted, once',
      );
      assert.deepEqual(await w.store.db.selectFrom('jobs').select(['id', 'status', 'last_error']).execute(), [], 'no job left behind');

      const report = await w.get('/v1/migrations.getMigration', { migrationId });
      assert.equal(report.json.status, 'completed_with_failures');
      assert.deepEqual(report.json.counts, { enqueued: ITEMS, pending: 0, migrated: ITEMS - duplicates.size, failed: duplicates.size });
      // A plaintext item verifies.
      const v = await w.post('/v1/keys.verifyKey', { key: plains[10] }, null);
      assert.equal(v.json.code, 'VALID');
    });
  });
}
